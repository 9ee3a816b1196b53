/**
 * A provider driven by a script and by Effect's Clock: per target, a list of outcomes with virtual
 * durations. Under `TestClock` every timeline is exact. It records, for each attempt, the virtual
 * instant it started and ended, the timeout the engine gave it, its output cap, and whether it was
 * interrupted. With `lateWork`, an abandoned attempt's server keeps working: its scripted completion
 * is still observed at its virtual instant and logged as a late response, never seen by the engine.
 *
 * @since 0.1.0
 */
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ToolCall } from "@modelgate/core/ModelCommand"
import type { FinishReason } from "@modelgate/core/ModelResult"
import { Usage } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Clock, Context, Duration, Effect, Layer, Stream } from "effect"

/**
 * Usage as written in scripts.
 *
 * @since 0.1.0
 * @category Models
 */
export interface ScriptUsage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cachedInputTokens?: number
  readonly reasoningTokens?: number
}

/**
 * Streaming shape of a success: time to first token and gap between chunks.
 *
 * @since 0.1.0
 * @category Models
 */
export interface StreamTiming {
  readonly ttft: Duration.DurationInput
  readonly interval: Duration.DurationInput
  /** Text chunks; default: the text split in 4. */
  readonly chunks?: ReadonlyArray<string>
  /**
   * Each tool call's arguments in this many deltas (default 1), after the text chunks and timed
   * like them; the first delta of a call carries its id and name.
   */
  readonly toolCallChunks?: number
  /** Fail with this error after delivering this many text chunks. */
  readonly failAfterChunks?: { readonly count: number; readonly error: ProviderError }
  /** End without a Finish event (a truncated stream) after all chunks. */
  readonly truncate?: boolean
}

/**
 * One scripted outcome.
 *
 * @since 0.1.0
 * @category Models
 */
export type Outcome =
  | {
      readonly _tag: "Success"
      readonly after: Duration.DurationInput
      readonly text: string | undefined
      readonly toolCalls: ReadonlyArray<ToolCall>
      readonly finishReason: FinishReason
      readonly refusal: boolean
      readonly usage: ScriptUsage | undefined
      readonly modelVersion: string | undefined
      readonly stream: StreamTiming | undefined
    }
  | { readonly _tag: "Fail"; readonly after: Duration.DurationInput; readonly error: ProviderError }
  | { readonly _tag: "Hang" }

const defaultUsage: ScriptUsage = { inputTokens: 100, outputTokens: 20 }

/**
 * @since 0.1.0
 * @category Constructors
 */
export const success = (options: {
  readonly after: Duration.DurationInput
  /** Text of the answer. */
  readonly text?: string
  /** A structured answer (sent as JSON text). */
  readonly value?: unknown
  readonly toolCalls?: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }>
  readonly finishReason?: FinishReason
  readonly usage?: ScriptUsage
  readonly modelVersion?: string
  readonly stream?: StreamTiming
}): Outcome => ({
  _tag: "Success",
  after: options.after,
  text:
    options.value !== undefined
      ? JSON.stringify(options.value)
      : (options.text ?? (options.toolCalls ? undefined : "ok")),
  toolCalls: (options.toolCalls ?? []).map((c) => new ToolCall(c)),
  finishReason: options.finishReason ?? (options.toolCalls ? "tool_calls" : "stop"),
  refusal: false,
  usage: options.usage ?? defaultUsage,
  modelVersion: options.modelVersion,
  stream: options.stream
})

/**
 * A slow success: the same as `success`, named for readability in scripts.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const slowSuccess = success

/**
 * The model declines (a refusal in the answer, HTTP 200).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const refusal = (options: {
  readonly after: Duration.DurationInput
  readonly usage?: ScriptUsage
}): Outcome => ({
  _tag: "Success",
  after: options.after,
  text: undefined,
  toolCalls: [],
  finishReason: "refusal",
  refusal: true,
  usage: options.usage ?? defaultUsage,
  modelVersion: undefined,
  stream: undefined
})

/**
 * Output that is not JSON (for workflows with an output schema).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const invalidJson = (options: {
  readonly after: Duration.DurationInput
  readonly usage?: ScriptUsage
}): Outcome => ({
  ...success({ after: options.after, text: "{not json", ...(options.usage ? { usage: options.usage } : {}) })
})

/**
 * Any classified provider failure.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fail = (
  after: Duration.DurationInput,
  error: ConstructorParameters<typeof ProviderError>[0]
): Outcome => ({
  _tag: "Fail",
  after,
  error: new ProviderError(error)
})

/**
 * A 503 with an error body (definitely not processed).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const unavailable = (options: { readonly after: Duration.DurationInput; readonly status?: number }): Outcome =>
  fail(options.after, { kind: "server_error", processed: "no", httpStatus: options.status ?? 503 })

/**
 * A 429 with an optional retry-after.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const rateLimited = (options: {
  readonly after: Duration.DurationInput
  readonly retryAfter?: Duration.DurationInput
}): Outcome =>
  fail(options.after, {
    kind: "rate_limited",
    processed: "no",
    httpStatus: 429,
    ...(options.retryAfter !== undefined ? { retryAfter: Duration.decode(options.retryAfter) } : {})
  })

/**
 * A 400: the request itself is wrong.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const invalidRequest = (options: { readonly after: Duration.DurationInput }): Outcome =>
  fail(options.after, { kind: "invalid_request", processed: "no", httpStatus: 400, detail: "bad request" })

/**
 * Never answers (until interrupted).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const hang: Outcome = { _tag: "Hang" }

/**
 * A scripted completion that arrived after the engine had abandoned its attempt (see `lateWork`).
 *
 * @since 0.2.0
 * @category Models
 */
export interface LateResponse {
  /** Virtual instant (Clock millis) the completion arrived. */
  readonly at: number
  /** What the server finished with. */
  readonly outcome: "Success" | "Fail"
  /** The status it would have sent: 200, or the scripted error's. */
  readonly httpStatus: number | undefined
}

/**
 * What the provider saw of one attempt.
 *
 * @since 0.1.0
 * @category Models
 */
export interface AttemptLog {
  readonly target: string
  readonly provider: string
  readonly mode: "generate" | "stream"
  /** Virtual instant (Clock millis) the attempt started. */
  readonly startedAt: number
  /** Virtual instant it ended (answered, failed or was interrupted). */
  endedAt: number | undefined
  readonly timeoutMs: number
  readonly maxOutputTokens: number
  readonly messages: number
  interrupted: boolean
  readonly outcome: Outcome["_tag"]
  /** Virtual instant the script completes the attempt (`startedAt + after`); `undefined` for a hang. */
  readonly scriptedCompletionAt: number | undefined
  /** With `lateWork`: the completion that arrived after the attempt was abandoned (generate only). */
  late: LateResponse | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** Every attempt so far, in start order (a snapshot: later attempts do not appear in it). */
  readonly attempts: Effect.Effect<ReadonlyArray<AttemptLog>>
  /** Attempts on one target, in start order (a snapshot, read from a per-target index). */
  readonly attemptsOn: (target: string) => Effect.Effect<ReadonlyArray<AttemptLog>>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class ScriptedProvider extends Context.Tag("@modelgate/testing/ScriptedProvider")<ScriptedProvider, Service>() {}

/**
 * Scripts by target ref. When a script runs out its last outcome repeats; a target without a script
 * answers `success({ after: 0 })`.
 *
 * @since 0.1.0
 * @category Models
 */
export type Scripts = Readonly<Record<string, ReadonlyArray<Outcome>>>

const toUsage = (u: ScriptUsage | undefined) =>
  u === undefined
    ? undefined
    : new Usage({
        inputTokens: u.inputTokens,
        outputTokens: u.outputTokens,
        cachedInputTokens: u.cachedInputTokens ?? 0,
        reasoningTokens: u.reasoningTokens ?? 0
      })

/** Sleeps for `after`; nothing for a zero duration (the same instant, without the clock's bookkeeping). */
const wait = (after: Duration.DurationInput): Effect.Effect<void> =>
  Duration.toMillis(after) > 0 ? Effect.sleep(after) : Effect.void

/** `text` in at most `parts` consecutive slices (none for an empty text). */
const splitText = (text: string, parts = 4): ReadonlyArray<string> => {
  const size = Math.max(1, Math.ceil(text.length / parts))
  const out: Array<string> = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

/**
 * Options of {@link make} and {@link layer}.
 *
 * @since 0.2.0
 * @category Models
 */
export interface MakeOptions {
  /**
   * Model the server work that outlives a client timeout: when the engine abandons a `generate`
   * attempt, its scripted completion still happens at its virtual instant and is logged as the
   * attempt's `late` response. The engine's result is unchanged. Default `false`.
   */
  readonly lateWork?: boolean
}

/**
 * Builds the adapters (one per provider id) and the log.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (scripts: Scripts, options?: MakeOptions) =>
  Effect.gen(function* () {
    const lateWork = options?.lateWork === true
    // Appended in place, O(1) per attempt (a long run must not copy the log on every attempt);
    // readers get copies, so what they hold never changes under them.
    const logs: Array<AttemptLog> = []
    const byTarget = new Map<string, Array<AttemptLog>>()
    const cursors = new Map<string, number>()
    const nextOutcome = (target: string): Outcome => {
      const script = scripts[target]
      if (script === undefined || script.length === 0) return success({ after: 0 })
      const i = cursors.get(target) ?? 0
      cursors.set(target, i + 1)
      return script[Math.min(i, script.length - 1)]!
    }
    const begin = (request: ProviderAdapter.ProviderRequest, provider: string, mode: "generate" | "stream") =>
      Effect.gen(function* () {
        const outcome = nextOutcome(request.target.ref)
        const startedAt = yield* Clock.currentTimeMillis
        const log: AttemptLog = {
          target: request.target.ref,
          provider,
          mode,
          startedAt,
          endedAt: undefined,
          timeoutMs: Duration.toMillis(request.timeout),
          maxOutputTokens: request.maxOutputTokens,
          messages: request.messages.length,
          interrupted: false,
          outcome: outcome._tag,
          scriptedCompletionAt: outcome._tag === "Hang" ? undefined : startedAt + Duration.toMillis(outcome.after),
          late: undefined
        }
        logs.push(log)
        const own = byTarget.get(log.target)
        if (own === undefined) byTarget.set(log.target, [log])
        else own.push(log)
        return { outcome, log }
      })
    const finish = (log: AttemptLog) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        log.endedAt = now
      })
    const interrupted = (log: AttemptLog) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        log.interrupted = true
        log.endedAt = now
      })
    // The server behind an abandoned attempt keeps working until its scripted completion, on its own
    // fiber (the engine's attempt is gone): the completion is logged, never delivered.
    const serverKeepsWorking = (log: AttemptLog, outcome: Outcome): Effect.Effect<void> => {
      const completesAt = log.scriptedCompletionAt
      if (!lateWork || outcome._tag === "Hang" || completesAt === undefined) return Effect.void
      const httpStatus = outcome._tag === "Success" ? 200 : outcome.error.httpStatus
      return Effect.forkDaemon(
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          if (completesAt > now) yield* Effect.sleep(Duration.millis(completesAt - now))
          log.late = { at: yield* Clock.currentTimeMillis, outcome: outcome._tag, httpStatus }
        })
      ).pipe(Effect.asVoid)
    }
    const adapterFor = (provider: string): Omit<ProviderAdapter.ProviderAdapter, "provider"> => ({
      generate: (request) =>
        Effect.flatMap(begin(request, provider, "generate"), ({ outcome, log }) => {
          const body: Effect.Effect<ProviderAdapter.ProviderResponse, ProviderError> =
            outcome._tag === "Hang"
              ? Effect.never
              : outcome._tag === "Fail"
                ? Effect.zipRight(wait(outcome.after), Effect.fail(outcome.error))
                : Effect.as(wait(outcome.after), {
                    text: outcome.text,
                    toolCalls: outcome.toolCalls,
                    finishReason: outcome.finishReason,
                    refusal: outcome.refusal,
                    usage: toUsage(outcome.usage),
                    modelVersion: outcome.modelVersion ?? request.target.model,
                    requestId: `req_${log.startedAt}_${request.target.ref}`,
                    httpStatus: 200
                  })
          return body.pipe(
            Effect.onExit(() => finish(log)),
            Effect.onInterrupt(() => Effect.zipRight(interrupted(log), serverKeepsWorking(log, outcome)))
          )
        }),
      stream: (request) =>
        Stream.unwrap(
          Effect.map(begin(request, provider, "stream"), ({ outcome, log }) => {
            const events: Stream.Stream<ProviderAdapter.ProviderStreamEvent, ProviderError> =
              outcome._tag === "Hang"
                ? Stream.never
                : outcome._tag === "Fail"
                  ? Stream.fromEffect(Effect.zipRight(wait(outcome.after), Effect.fail(outcome.error)))
                  : scriptedStream(outcome, request, log)
            // Ended on its own (finished, failed or truncated) vs closed early by the consumer.
            let ended = false
            const markEnded = Effect.sync(() => {
              ended = true
            })
            const tracked = events.pipe(
              Stream.tap((e) => (e._tag === "Finish" ? markEnded : Effect.void)),
              Stream.tapError(() => markEnded)
            )
            return Stream.concat(tracked, Stream.execute(markEnded)).pipe(
              Stream.ensuring(Effect.suspend(() => (ended ? finish(log) : interrupted(log))))
            )
          })
        )
    })
    const service = ScriptedProvider.of({
      attempts: Effect.sync(() => logs.slice()),
      attemptsOn: (target) => Effect.sync(() => byTarget.get(target)?.slice() ?? [])
    })
    return { service, adapterFor }
  })

const scriptedStream = (
  outcome: Extract<Outcome, { _tag: "Success" }>,
  request: ProviderAdapter.ProviderRequest,
  log: AttemptLog
): Stream.Stream<ProviderAdapter.ProviderStreamEvent, ProviderError> => {
  const timing = outcome.stream ?? { ttft: outcome.after, interval: 0 }
  const chunks = timing.chunks ?? splitText(outcome.text ?? "")
  const started: ProviderAdapter.ProviderStreamEvent = {
    _tag: "Started",
    requestId: `req_${log.startedAt}_${request.target.ref}`,
    httpStatus: 200
  }
  // Text chunks, then each tool call's argument slices: every delta `interval` after the one
  // before it, the first at `ttft`.
  const events: Array<ProviderAdapter.ProviderStreamEvent> = chunks.map((text) => ({ _tag: "TextDelta", text }))
  for (const [index, call] of outcome.toolCalls.entries()) {
    const parts = splitText(call.arguments, timing.toolCallChunks ?? 1)
    // At least one delta per call, which names it.
    for (let j = 0; j < Math.max(1, parts.length); j++) {
      events.push({
        _tag: "ToolCallDelta",
        index,
        id: j === 0 ? call.id : undefined,
        name: j === 0 ? call.name : undefined,
        argumentsDelta: parts[j] ?? ""
      })
    }
  }
  const deltas = Stream.fromIterable(events.map((event, i) => ({ event, i }))).pipe(
    Stream.mapEffect(({ event, i }) =>
      Effect.gen(function* () {
        if (timing.failAfterChunks !== undefined && i === timing.failAfterChunks.count && i < chunks.length) {
          return yield* Effect.fail(timing.failAfterChunks.error)
        }
        yield* wait(i === 0 ? timing.ttft : timing.interval)
        return event
      })
    )
  )
  const finish: ProviderAdapter.ProviderStreamEvent = {
    _tag: "Finish",
    finishReason: outcome.finishReason,
    refusal: outcome.refusal,
    usage: toUsage(outcome.usage),
    modelVersion: outcome.modelVersion ?? request.target.model
  }
  const tail =
    timing.failAfterChunks !== undefined && timing.failAfterChunks.count >= chunks.length
      ? Stream.fail(timing.failAfterChunks.error)
      : timing.truncate
        ? Stream.empty
        : Stream.succeed(finish)
  return Stream.concat(Stream.succeed(started), Stream.concat(deltas, tail)).pipe(Stream.rechunk(1))
}

/**
 * Provides a scripted adapter for each provider id, and the `ScriptedProvider` log.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (
  options: {
    readonly providers: ReadonlyArray<string>
    readonly scripts: Scripts
  } & MakeOptions
): Layer.Layer<ScriptedProvider | ProviderAdapter.ProviderAdapter> =>
  Layer.unwrapEffect(
    Effect.map(make(options.scripts, options), ({ service, adapterFor }) =>
      Layer.mergeAll(
        Layer.succeed(ScriptedProvider, service),
        ...options.providers.map((p) => Layer.succeed(ProviderAdapter.tag(p), { ...adapterFor(p), provider: p }))
      )
    )
  )
