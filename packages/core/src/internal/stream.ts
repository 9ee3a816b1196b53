/**
 * `stream`: the same pipeline as `generate` (one deadline, retries, fallbacks, budget, evidence),
 * with the provider's stream driven under three limits — time to first token, the longest gap
 * between chunks, and the attempt's total — and a commit point at the first delivered delta.
 */
import { Clock, Duration, Effect, Either, Option, Stream } from "effect"
import { Allow, parse as parsePartialJson } from "partial-json"
import type { GatewayError } from "../Errors.js"
import { ProviderError } from "../ProviderAdapter.js"
import type { ModelCommand, ToolCall } from "../ModelCommand.js"
import { ToolCall as ToolCallClass } from "../ModelCommand.js"
import { Usage } from "../ModelResult.js"
import type { FinishReason } from "../ModelResult.js"
import type { ProviderResponse, ProviderStreamEvent, RateLimitHeadroom } from "../ProviderAdapter.js"
import type { ModelTarget } from "../ModelTarget.js"
import { costOf } from "../Pricing.js"
import * as StreamEvent from "../StreamEvent.js"
import { countTextYielding, makeCache } from "../TokenEstimator.js"
import type { AttemptContext, Invoke } from "./attemptContext.js"
import { bounded } from "./deadline.js"
import type { EngineContext } from "./call.js"
import { execute } from "./pipeline.js"

interface ToolCallBuffer {
  id: string
  name: string
  args: string
}

/** Partial strings, arrays and objects; numbers, booleans and null only once complete (values only grow). */
const partialAllow = Allow.STR | Allow.ARR | Allow.OBJ

/**
 * Longest answer text re-parsed into partial objects: past it, no more `PartialObject` events until
 * `Final` (a parse of megabytes would hold the event loop).
 */
const maxPartialCharacters = 262_144

const sameUsage = (a: Usage, b: Usage): boolean =>
  a.inputTokens === b.inputTokens &&
  a.cachedInputTokens === b.cachedInputTokens &&
  a.outputTokens === b.outputTokens &&
  a.reasoningTokens === b.reasoningTokens

/**
 * The route-metadata and usage events of one streaming attempt: `RouteCommitted` at its first
 * delta, then a `UsageUpdate` each time the usage known changes. Usage the provider reports before
 * the first delta is held until the commit point, so a stream never carries the usage of an
 * attempt that did not serve.
 */
class AttemptEvents {
  private pending: Usage | undefined
  private sent: Usage | undefined
  private committed = false
  constructor(
    private readonly emit: (event: StreamEvent.StreamEvent) => void,
    private readonly target: ModelTarget,
    private readonly attempt: AttemptContext
  ) {}

  /** The commit point: the attempt's first delta follows. */
  commit(): void {
    this.committed = true
    const { target, attempt } = this
    const decision = attempt.decision
    this.emit(
      new StreamEvent.RouteCommitted(
        {
          target: target.ref,
          model: target.model,
          provider: target.provider,
          position: attempt.position,
          attempt: attempt.attempt,
          fallback: attempt.fallback,
          policyVersion: decision.policyVersion,
          routeId: decision.routeId
        },
        { disableValidation: true }
      )
    )
    if (this.pending !== undefined) this.usage(this.pending, false)
  }

  /** Usage known now (cumulative for the attempt); sent when committed and changed. */
  usage(usage: Usage, estimated: boolean): void {
    this.pending = usage
    if (!this.committed || (this.sent !== undefined && sameUsage(this.sent, usage))) return
    this.sent = usage
    const cost = costOf(this.target, usage)
    this.emit(
      new StreamEvent.UsageUpdate({ target: this.target.ref, usage, cost, estimated }, { disableValidation: true })
    )
  }
}

/** The best-effort value of a structured answer's text so far; `undefined` while nothing parses. */
const parsePartial = (text: string): unknown => {
  try {
    const value: unknown = parsePartialJson(text, partialAllow)
    return value
  } catch {
    return undefined
  }
}

/** Folds a tool-call delta into its call's buffer and delivers it. */
const toolDelta = (
  tools: Map<number, ToolCallBuffer>,
  event: Extract<ProviderStreamEvent, { readonly _tag: "ToolCallDelta" }>,
  emit: (event: StreamEvent.StreamEvent) => void
): void => {
  const buffer = tools.get(event.index) ?? { id: "", name: "", args: "" }
  if (event.id !== undefined) buffer.id = event.id
  if (event.name !== undefined) buffer.name = event.name
  buffer.args += event.argumentsDelta
  tools.set(event.index, buffer)
  emit(
    new StreamEvent.ToolCallDelta(
      { index: event.index, id: event.id, name: event.name, argumentsDelta: event.argumentsDelta },
      { disableValidation: true }
    )
  )
}

/**
 * The stream-driving `Invoke`: deltas go to `emit` as they arrive. With `structured`, text deltas are
 * also re-parsed into `PartialObject` events, each time the text has grown by at least an eighth
 * since the last parse: the parses of one answer then add up to at most ~9× its length (a 2 KB
 * object in 50 deltas: 19 parses, ~6 µs per delta; parsing on every delta costs ~20 µs per delta and
 * grows quadratically — 1 s for 78 KB in 40-byte deltas, against 8 ms bounded).
 */
const invokeStream =
  (emit: (event: StreamEvent.StreamEvent) => void, structured: boolean): Invoke =>
  (adapter, request, attempt) =>
    Effect.scoped(
      Effect.gen(function* () {
        const target = request.target
        const limits = target.limits
        const start = yield* Clock.currentTimeMillis
        const attemptEnd = attempt.until
        const ttftEnd =
          limits.ttftTimeout !== undefined
            ? Math.min(attemptEnd, start + Duration.toMillis(limits.ttftTimeout))
            : attemptEnd
        const idleMs = limits.streamIdleTimeout !== undefined ? Duration.toMillis(limits.streamIdleTimeout) : Infinity
        const decision = attempt.decision
        const progress = attempt.progress
        const meta = new AttemptEvents(emit, target, attempt)
        emit(
          new StreamEvent.RouteSelected(
            { target: target.ref, attempt: attempt.attempt, fallback: decision.eligible[0] !== target.ref, decision },
            { disableValidation: true }
          )
        )
        const pull = yield* Stream.toPull(adapter.stream(request))
        let text = ""
        let parsedLength = 0
        const tools = new Map<number, ToolCallBuffer>()
        let requestId: string | undefined
        let httpStatus: number | undefined
        let rateLimit: RateLimitHeadroom | undefined
        let firstAt: number | undefined
        let outputTokens = 0
        // This attempt's memory of delta counts (short deltas such as " the" repeat within a response).
        const deltaCounts = makeCache()
        let finish:
          | { finishReason: FinishReason; refusal: boolean; usage: Usage | undefined; modelVersion: string | undefined }
          | undefined
        // What was sent and delivered (the input counted, when the router did not, by the one sliced counter).
        const counted = Effect.map(
          attempt.inputTokens,
          (inputTokens) => new Usage({ inputTokens, outputTokens }, { disableValidation: true })
        )
        // A failure after the first delta: the provider may have billed the output delivered so far.
        const afterCommit = (e: ProviderError): Effect.Effect<never, ProviderError> =>
          firstAt === undefined
            ? Effect.fail(e)
            : e.usage !== undefined
              ? Effect.fail(new ProviderError({ ...e, processed: "maybe" }))
              : Effect.flatMap(counted, (usage) => Effect.fail(new ProviderError({ ...e, processed: "maybe", usage })))
        while (finish === undefined) {
          const now = yield* Clock.currentTimeMillis
          const until = firstAt === undefined ? ttftEnd : Math.min(attemptEnd, now + idleMs)
          const pulled = yield* bounded(Effect.either(pull), until)
          if (Option.isNone(pulled)) {
            if (until >= attemptEnd && firstAt === undefined) return Option.none()
            // Out of total time (the attempt's own limit or the call's deadline) is a timeout, as for
            // `generate`; only a gap longer than the idle limit is a stall.
            const kind = firstAt === undefined || until >= attemptEnd ? "timeout" : "stream_stalled"
            return yield* afterCommit(
              new ProviderError({
                kind,
                processed: "maybe",
                requestId,
                detail:
                  firstAt === undefined
                    ? `no first token within ${ttftEnd - start} ms`
                    : until >= attemptEnd
                      ? "stream exceeded its total time"
                      : `no chunk for ${idleMs} ms`
              })
            )
          }
          const chunk = pulled.value
          if (Either.isLeft(chunk)) {
            if (Option.isSome(chunk.left)) return yield* afterCommit(chunk.left.value)
            return yield* afterCommit(
              new ProviderError({
                kind: "stream_truncated",
                processed: "maybe",
                requestId,
                detail: "stream ended without its terminator"
              })
            )
          }
          for (const event of chunk.right) {
            if (event._tag === "Started") {
              requestId = event.requestId
              httpStatus = event.httpStatus
              rateLimit = event.rateLimit
            } else if (event._tag === "Finish") {
              finish = event
              break
            } else if (event._tag === "Usage") {
              meta.usage(event.usage, false)
            } else {
              if (firstAt === undefined) {
                firstAt = yield* Clock.currentTimeMillis
                progress.ttftMs = firstAt - start
                progress.committed = true
                meta.commit()
              }
              if (event._tag === "TextDelta") {
                text += event.text
                // Any delta size: large deltas are counted in slices with event-loop turns.
                outputTokens += yield* countTextYielding(event.text, deltaCounts)
                emit(new StreamEvent.TextDelta({ text: event.text }, { disableValidation: true }))
                if (
                  structured &&
                  text.length <= maxPartialCharacters &&
                  (text.length - parsedLength) * 8 >= text.length
                ) {
                  parsedLength = text.length
                  const value = parsePartial(text)
                  if (value !== undefined) emit(new StreamEvent.PartialObject({ value }, { disableValidation: true }))
                }
              } else {
                outputTokens += yield* countTextYielding(event.argumentsDelta, deltaCounts)
                toolDelta(tools, event, emit)
              }
              progress.outputTokens = outputTokens
              // Cut at the output cap the reservation pays for.
              if (outputTokens >= request.maxOutputTokens) {
                finish = { finishReason: "length", refusal: false, usage: undefined, modelVersion: undefined }
                break
              }
            }
          }
        }
        const toolCalls: Array<ToolCall> = [...tools.values()].map(
          (b) => new ToolCallClass({ id: b.id, name: b.name, arguments: b.args }, { disableValidation: true })
        )
        const usage = finish.usage ?? (yield* counted)
        meta.usage(usage, finish.usage === undefined)
        const response: ProviderResponse = {
          text: text.length > 0 ? text : undefined,
          toolCalls,
          finishReason: finish.finishReason,
          refusal: finish.refusal,
          usage,
          modelVersion: finish.modelVersion,
          requestId,
          httpStatus,
          rateLimit
        }
        return Option.some(response)
      })
    )

/**
 * The deltas of an answer served from the response cache, as a stream that received its whole text
 * in one delta would deliver them (no `RouteSelected`: no attempt is made): the text, its partial
 * object (a structured workflow), then each tool call whole.
 */
const replay = (
  result: { readonly content: { readonly text?: string | undefined; readonly toolCalls: ReadonlyArray<ToolCall> } },
  structured: boolean,
  emit: (event: StreamEvent.StreamEvent) => void
): void => {
  const text = result.content.text
  if (text !== undefined && text.length > 0) {
    emit(new StreamEvent.TextDelta({ text }, { disableValidation: true }))
    if (structured && text.length <= maxPartialCharacters) {
      const value = parsePartial(text)
      if (value !== undefined) emit(new StreamEvent.PartialObject({ value }, { disableValidation: true }))
    }
  }
  const calls = result.content.toolCalls
  for (let index = 0; index < calls.length; index++) {
    const call = calls[index]!
    emit(
      new StreamEvent.ToolCallDelta(
        { index, id: call.id, name: call.name, argumentsDelta: call.arguments },
        { disableValidation: true }
      )
    )
  }
}

/**
 * Streams one command: `RouteSelected` per attempt, `RouteCommitted` at the commit point, deltas
 * and `UsageUpdate`s from it on, then `UsageReported` and `Final`. An answer from the response cache replays its deltas ({@link replay}). Failures end the stream with the typed error; a failure after the
 * first delta is recorded as `incomplete`.
 */
export const stream = (
  ctx: EngineContext,
  command: ModelCommand
): Stream.Stream<StreamEvent.StreamEvent, GatewayError> =>
  Stream.asyncPush<StreamEvent.StreamEvent, GatewayError>(
    (emit) => {
      // The running configuration, read once: the call and its output format both use it.
      const config = ctx.live.current
      const structured = config.router.workflows.get(command.workflow)?.schema !== undefined
      return execute(
        ctx,
        command,
        "stream",
        invokeStream((event) => void emit.single(event), structured),
        config
      ).pipe(
        Effect.matchCause({
          onSuccess: (result) => {
            if (result.evidence.cache?.hit === true) replay(result, structured, (event) => void emit.single(event))
            const usage = result.evidence.usage
            const cost = result.evidence.cost.actual
            emit.single(new StreamEvent.UsageReported({ usage, cost }, { disableValidation: true }))
            emit.single(new StreamEvent.Final({ result }, { disableValidation: true }))
            emit.end()
          },
          onFailure: (cause) => emit.halt(cause)
        }),
        Effect.forkScoped
      )
    },
    { bufferSize: "unbounded" }
  )
