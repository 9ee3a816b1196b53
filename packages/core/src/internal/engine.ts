/**
 * The pipeline of one call (DESIGN §4): route, reserve, acquire a permit, attempts under one
 * deadline with Schedule-driven retries and fallbacks, output validation, settlement, evidence.
 */
import { Cause, Clock, Duration, Effect, Either, Exit, Option } from "effect"
import type { Tracer } from "effect"
import { type Budgets, minimumUsefulOutputTokens, type Reservation } from "../Budgets.js"
import type * as CallRecorder from "../CallRecorder.js"
import type * as Concurrency from "../Concurrency.js"
import {
  AmbiguousOutcome,
  BudgetExceeded,
  NoEligibleRoute,
  DeadlineExceeded,
  type GatewayError,
  InvalidOutput,
  InvalidRequest,
  PolicyViolation,
  type ProviderError,
  ProviderRejected,
  ProviderUnavailable,
  RateLimited,
  Refusal
} from "../Errors.js"
import type { CompiledWorkflow } from "../GatewayConfig.js"
import type * as Health from "../Health.js"
import type { Message, ModelCommand } from "../ModelCommand.js"
import {
  AttemptRecord,
  type AttemptOutcome,
  CallId,
  CallRecord,
  Content,
  Cost,
  Evidence,
  type FinishReason,
  ModelResult,
  Usage
} from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import type { OutputFormat, ProviderAdapter, ProviderRequest, ProviderResponse } from "../ProviderAdapter.js"
import { ExcludedTarget } from "../RouteDecision.js"
import type { Route, Service as RouterService } from "../Router.js"
import * as Telemetry from "../Telemetry.js"
import { retrySchedule, stepper, withAttemptTimeout } from "./attempt.js"
import { issuesOf } from "./issues.js"

/** Services and data the engine runs with, resolved once when the gateway is built. */
export interface EngineContext {
  readonly router: RouterService
  readonly adapters: ReadonlyMap<string, ProviderAdapter>
  readonly budgets: Budgets["Type"]
  readonly concurrency: Concurrency.Service
  readonly recorder: CallRecorder.Service
  readonly health: Health.Service
  /** Read once when the gateway is built. */
  readonly telemetry: Telemetry.Settings
}

/** Smallest output cap worth starting an attempt with (defined next to the budgets, which the router also uses). */
export { minimumUsefulOutputTokens }

let callSeq = 0
const nextCallId = (now: number): CallId => CallId.make(`mg_${now.toString(36)}_${(++callSeq).toString(36)}`)

/** Cost in currency units of `usage` at `target`'s prices. */
export const costOf = (target: ModelTarget, usage: Usage): number => {
  const p = target.pricing
  const cached = Math.min(usage.cachedInputTokens, usage.inputTokens)
  return (
    ((usage.inputTokens - cached) * p.inputPerMillion +
      cached * (p.cachedInputPerMillion ?? p.inputPerMillion) +
      usage.outputTokens * p.outputPerMillion) /
    1_000_000
  )
}

/** Mutable state of one call, turned into evidence at the end. */
export class CallState {
  readonly attempts: Array<AttemptRecord> = []
  usage: Usage = Usage.zero
  actualCost = 0
  estimatedCost = 0
  reservedCost = 0
  retryCount = 0
  retryBudgetExhausted = false
  target: ModelTarget | undefined = undefined
  modelVersion: string | undefined = undefined
  fallbackUsed = false
  degraded = false
  schemaValid: boolean | undefined = undefined
  route: Route | undefined = undefined
  compiled: CompiledWorkflow | undefined = undefined
  /** Input cost of an attempt that was dispatched and has not ended. */
  inFlight: { readonly target: ModelTarget; readonly inputTokens: number } | undefined = undefined
  /** Targets skipped at attempt time (a half-open breaker with no probe slot left). */
  readonly skipped: Array<ExcludedTarget> = []
  /** Streams: the first delta was delivered to the consumer (no retry or fallback after this). */
  committed = false
  /** Streams: output tokens counted from delivered deltas of the current attempt. */
  deliveredOutputTokens = 0
  /** Streams: time to first token of the current attempt. */
  attemptTtftMs: number | undefined = undefined
  /** Telemetry: the call span, the last target attempted and its output cap, the permit wait. */
  span: Tracer.Span | undefined = undefined
  lastTarget: ModelTarget | undefined = undefined
  lastMaxOutputTokens: number | undefined = undefined
  permitWaitMs: number | undefined = undefined
  constructor(
    readonly callId: CallId,
    readonly startedAt: number,
    readonly command: ModelCommand,
    readonly mode: "generate" | "stream"
  ) {}

  addUsage(target: ModelTarget, usage: Usage | undefined): number {
    if (usage === undefined) return 0
    const cost = costOf(target, usage)
    // Sums of valid counts: no per-call schema check (`Usage.add` would validate).
    const u = this.usage
    this.usage = new Usage(
      {
        inputTokens: u.inputTokens + usage.inputTokens,
        cachedInputTokens: u.cachedInputTokens + usage.cachedInputTokens,
        outputTokens: u.outputTokens + usage.outputTokens,
        reasoningTokens: u.reasoningTokens + usage.reasoningTokens
      },
      { disableValidation: true }
    )
    this.actualCost += cost
    return cost
  }

  evidence(now: number): Evidence {
    const w = this.compiled?.workflow
    const t = this.target
    return new Evidence(
      {
        callId: this.callId,
        workflow: this.command.workflow,
        policyVersion: w?.policyVersion ?? "",
        promptId: w?.prompt.id ?? "",
        promptVersion: w?.prompt.version ?? "",
        schemaVersion: w?.output?.schemaVersion,
        pricingVersion: t?.pricing.pricingVersion ?? this.route?.targets[0]?.pricing.pricingVersion,
        target: t?.ref,
        model: t?.model,
        modelVersion: this.modelVersion,
        eligible: this.route?.decision.eligible ?? [],
        excluded:
          this.skipped.length === 0
            ? (this.route?.decision.excluded ?? [])
            : [...(this.route?.decision.excluded ?? []), ...this.skipped],
        fallbackUsed: this.fallbackUsed,
        degraded: this.degraded,
        attempts: this.attempts,
        retryCount: this.retryCount,
        retryBudgetExhausted: this.retryBudgetExhausted,
        startedAt: this.startedAt,
        totalLatencyMs: now - this.startedAt,
        usage: this.usage,
        cost: new Cost(
          { currency: "USD", estimated: this.estimatedCost, reserved: this.reservedCost, actual: this.actualCost },
          { disableValidation: true }
        ),
        schemaValid: this.schemaValid
      },
      { disableValidation: true }
    )
  }
}

const attemptOutcomeOf = (error: GatewayError): AttemptOutcome => {
  switch (error._tag) {
    case "Refusal":
      return "refusal"
    case "RateLimited":
      return "rate_limited"
    case "ProviderUnavailable":
      return error.reason === "timeout" ? "timeout" : "unavailable"
    case "InvalidOutput":
      return "invalid_output"
    case "InvalidRequest":
      return "invalid_request"
    case "ProviderRejected":
      return "rejected"
    case "AmbiguousOutcome":
      return "timeout"
    default:
      return "unavailable"
  }
}

/** Maps an adapter's classified failure onto the gateway's error union. */
export const fromProviderError = (target: ModelTarget, e: ProviderError): GatewayError => {
  const ref = target.ref
  switch (e.kind) {
    case "refusal":
      return new Refusal({ target: ref, source: "safety_filter" })
    case "rate_limited":
      return new RateLimited({ target: ref, retryAfter: e.retryAfter })
    case "server_error":
    case "overloaded":
    case "transport":
    case "timeout":
    case "stream_stalled":
    case "stream_truncated":
      return new ProviderUnavailable({
        target: ref,
        reason: e.kind,
        httpStatus: e.httpStatus,
        retryAfter: e.retryAfter
      })
    case "invalid_request":
      return new InvalidRequest({
        reason: "bad_request",
        target: ref,
        httpStatus: e.httpStatus,
        detail: e.detail || "rejected by provider"
      })
    case "context_length":
      return new InvalidRequest({
        reason: "context_length",
        target: ref,
        httpStatus: e.httpStatus,
        detail: "input exceeds the context window"
      })
    case "authentication":
    case "permission":
    case "quota_exhausted":
    case "spend_cap":
    case "model_not_found":
    case "request_too_large":
      return new ProviderRejected({ target: ref, reason: e.kind, httpStatus: e.httpStatus })
    case "rejected":
      return new ProviderRejected({ target: ref, reason: "other", httpStatus: e.httpStatus })
    case "invalid_output":
      return new InvalidOutput({ target: ref, issues: [e.detail || "malformed provider response"] })
  }
}

/** Validates a provider answer against the workflow's output schema. */
export const validateOutput = (
  compiled: CompiledWorkflow,
  target: ModelTarget,
  response: {
    readonly text: string | undefined
    readonly finishReason: FinishReason
    readonly toolCalls: ReadonlyArray<unknown>
  }
): Either.Either<{ readonly value: unknown; readonly valid: boolean | undefined }, InvalidOutput> => {
  if (compiled.decode === undefined || response.toolCalls.length > 0) {
    return Either.right({ value: undefined, valid: undefined })
  }
  if (response.finishReason === "length") {
    return Either.left(new InvalidOutput({ target: target.ref, issues: ["truncated at the output-token limit"] }))
  }
  let json: unknown
  try {
    json = JSON.parse(response.text ?? "")
  } catch {
    return Either.left(new InvalidOutput({ target: target.ref, issues: ["not valid JSON"] }))
  }
  return Either.match(compiled.decode(json), {
    onLeft: (e) => Either.left(new InvalidOutput({ target: target.ref, issues: issuesOf(e) })),
    onRight: (value) => Either.right({ value, valid: true })
  })
}

/** The structured-output part of a provider request. */
export const outputFormatOf = (compiled: CompiledWorkflow, target: ModelTarget): OutputFormat | undefined =>
  compiled.jsonSchema === undefined
    ? undefined
    : {
        name: compiled.workflow.name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64),
        jsonSchema: compiled.jsonSchema,
        strict: target.capabilities.structuredOutput.mode === "json_schema_strict"
      }

/** Input tokens at `target`, after its tokenizer safety factor. */
export const inputTokensAt = (route: Route, target: ModelTarget): number =>
  Math.ceil(route.inputTokens * target.tokenizerSafetyFactor)

/** Output cap a target is asked for before budget shrinking. */
export const outputCapAt = (command: ModelCommand, compiled: CompiledWorkflow, target: ModelTarget): number =>
  Math.min(
    command.maxOutputTokens ?? compiled.workflow.maxOutputTokens ?? target.capabilities.maxOutputTokens,
    compiled.workflow.maxOutputTokens ?? Infinity,
    target.capabilities.maxOutputTokens
  )

/** Worst-case cost of one attempt at `target`. */
export const worstCaseAt = (route: Route, command: ModelCommand, target: ModelTarget): number =>
  (inputTokensAt(route, target) * target.pricing.inputPerMillion +
    outputCapAt(command, route.compiled, target) * target.pricing.outputPerMillion) /
  1_000_000

/**
 * What the remaining reservation still pays for at `target` after this attempt's input.
 * `Infinity` when output is free.
 */
export const affordableOutput = (
  state: CallState,
  reservation: Reservation,
  inputTokens: number,
  target: ModelTarget
) => {
  const left = reservation.amount - state.actualCost - (inputTokens * target.pricing.inputPerMillion) / 1_000_000
  if (left < 0) return 0
  if (target.pricing.outputPerMillion === 0) return Infinity
  // A tiny epsilon keeps float error from costing a token.
  return Math.floor((left * 1_000_000) / target.pricing.outputPerMillion + 1e-9)
}

const isAvailability = (e: GatewayError) =>
  e._tag === "RateLimited" || e._tag === "ProviderUnavailable" || e._tag === "ProviderRejected"

/**
 * Whether a failed attempt counts against its route's breaker: 429, 5xx, overload, transport
 * errors, stream stalls and timeouts of the target's own per-attempt limit. Not: invalid requests,
 * rejections (auth, quota, model not found), invalid output, refusals, and a timeout of an attempt
 * that the call's own deadline cut short (`deadlineCut`).
 */
const countsAgainstRoute = (e: GatewayError, deadlineCut: boolean) =>
  e._tag === "RateLimited" || (e._tag === "ProviderUnavailable" && !(e.reason === "timeout" && deadlineCut))

type AttemptResult =
  | { readonly _tag: "ok"; readonly response: ProviderResponse }
  | { readonly _tag: "error"; readonly error: GatewayError; readonly possiblyProcessed: boolean }

/**
 * Runs `generate` for one command. Builds exactly one CallRecord, whatever the exit.
 */
export const generate = (ctx: EngineContext, command: ModelCommand): Effect.Effect<ModelResult, GatewayError> =>
  execute(ctx, command, "generate", invokeGenerate)

/**
 * Runs one call in `mode` with `invoke` calling the adapters. Builds exactly one CallRecord.
 */
export const execute = (
  ctx: EngineContext,
  command: ModelCommand,
  mode: "generate" | "stream",
  invoke: Invoke
): Effect.Effect<ModelResult, GatewayError> =>
  Effect.flatMap(Clock.currentTimeMillis, (startedAt) => {
    const state = new CallState(nextCallId(startedAt), startedAt, command, mode)
    return withCallSpan(
      ctx,
      state,
      run(ctx, state, (route, reservation, deadline) =>
        attemptLoop(ctx, state, route, reservation, deadline, invoke)
      ).pipe(Effect.onExit((exit) => recordCall(ctx, state, exit)))
    )
  })

/**
 * Runs a call (whose `recordCall` runs inside) in its `modelgate.generate` / `modelgate.stream`
 * span; `recordCall` annotates the span from the CallRecord.
 */
export const withCallSpan = <A, E, R>(ctx: EngineContext, state: CallState, self: Effect.Effect<A, E, R>) =>
  Telemetry.withCallSpan(
    ctx.telemetry,
    { mode: state.mode, callId: state.callId, workflow: state.command.workflow, tenant: state.command.tenant },
    (span) => {
      state.span = span
      return self
    }
  )

/** Builds and hands over the CallRecord of a finished call. */
export const recordCall = (
  ctx: EngineContext,
  state: CallState,
  exit: Exit.Exit<ModelResult, GatewayError>,
  incomplete = state.committed
): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    const outcome = Exit.isSuccess(exit)
      ? state.degraded
        ? "degraded"
        : "success"
      : Exit.isInterrupted(exit)
        ? "cancelled"
        : incomplete
          ? "incomplete"
          : "failed"
    const record = new CallRecord(
      {
        tenant: state.command.tenant,
        mode: state.mode,
        outcome,
        errorTag: error?._tag,
        errorReason: error !== undefined ? reasonOf(error) : undefined,
        finishReason: Exit.isSuccess(exit) ? exit.value.finishReason : undefined,
        evidence: state.evidence(now)
      },
      { disableValidation: true }
    )
    Telemetry.unsafeEndCall(state.span, record, {
      target: state.target ?? state.lastTarget ?? state.route?.targets[0],
      workflow: state.compiled?.workflow.name,
      maxOutputTokens: state.lastMaxOutputTokens,
      permitWaitMs: state.permitWaitMs
    })
    return Telemetry.outsideCallSpanEvents(state.span, ctx.recorder.record(record))
  })

const reasonOf = (e: GatewayError): string | undefined => {
  switch (e._tag) {
    case "ProviderUnavailable":
    case "InvalidRequest":
    case "ProviderRejected":
    case "PolicyViolation":
      return e.reason
    case "Refusal":
      return e.source
    case "DeadlineExceeded":
      return e.stage
    default:
      return undefined
  }
}

/**
 * The shared frame of `generate` and `stream`: route, deadline, reservation, permit, backstop.
 * `body` runs the attempts with the route, the reservation and the absolute deadline (ms).
 */
export const run = <A>(
  ctx: EngineContext,
  state: CallState,
  body: (route: Route, reservation: Reservation, deadline: number) => Effect.Effect<A, GatewayError>
): Effect.Effect<A, GatewayError> =>
  Effect.gen(function* () {
    const route = yield* ctx.router.resolve(state.command, state.mode)
    state.route = route
    state.compiled = route.compiled
    const w = route.compiled.workflow
    const timeoutMs = Math.min(
      state.command.timeout !== undefined ? Duration.toMillis(state.command.timeout) : Infinity,
      Duration.toMillis(w.timeout)
    )
    const deadline = state.startedAt + timeoutMs
    // Worst case over every target the call may still use.
    let worst = 0
    for (const t of route.targets) worst = Math.max(worst, worstCaseAt(route, state.command, t))
    state.estimatedCost = worstCaseAt(route, state.command, route.targets[0]!)
    const cap = Math.min(state.command.maxCost ?? Infinity, w.maxCost ?? Infinity)
    const amount = Math.min(worst, cap)
    const deadlineError = (stage: DeadlineExceeded["stage"]) =>
      Effect.flatMap(
        Clock.currentTimeMillis,
        (now) =>
          new DeadlineExceeded({
            callId: state.callId,
            attempts: state.attempts,
            stage,
            timeoutMs,
            elapsedMs: now - state.startedAt
          })
      )
    /** When the call started waiting for its permit, while it waits. */
    let queuedSince: number | undefined
    const settled = Effect.scoped(
      Effect.gen(function* () {
        const reservation = yield* ctx.budgets.reserve(state.command.tenant, amount)
        state.reservedCost = reservation.amount
        const queueStart = yield* Clock.currentTimeMillis
        // No timer of its own (two fibers per call saved): the backstop bounds the wait and
        // reports a call still queued at the deadline with stage "queue".
        queuedSince = queueStart
        yield* ctx.concurrency.acquire(state.command.tenant, w.name)
        queuedSince = undefined
        state.permitWaitMs = (yield* Clock.currentTimeMillis) - queueStart
        return yield* body(route, reservation, deadline).pipe(
          Effect.onExit((exit) => {
            // Interrupted with an attempt in flight: its input was likely billed.
            if (Exit.isInterrupted(exit) && state.inFlight !== undefined) {
              const f = state.inFlight
              state.addUsage(
                f.target,
                new Usage({ inputTokens: f.inputTokens, outputTokens: state.deliveredOutputTokens })
              )
            }
            return reservation.commit(state.actualCost)
          })
        )
      })
    )
    // The backstop: nothing in the call outlives the deadline, whatever a service does.
    const backstop = Math.max(0, deadline - (yield* Clock.currentTimeMillis))
    return yield* settled.pipe(
      Effect.timeoutFail({ duration: Duration.millis(backstop), onTimeout: () => undefined }),
      Effect.catchIf(
        (e): e is undefined => e === undefined,
        () => {
          if (queuedSince !== undefined) {
            const since = queuedSince
            return Effect.flatMap(Clock.currentTimeMillis, (now) => {
              state.permitWaitMs = now - since
              return deadlineError("queue")
            })
          }
          // An attempt cut by the backstop ended at the deadline; it was not cancelled by the caller.
          const last = state.attempts[state.attempts.length - 1]
          if (last !== undefined && last.outcome === "cancelled") {
            state.attempts[state.attempts.length - 1] = new AttemptRecord(
              { ...last, outcome: "timeout", errorTag: "DeadlineExceeded" },
              { disableValidation: true }
            )
          }
          return deadlineError("call")
        }
      )
    )
  }).pipe(Effect.mapError((e) => (e.callId === undefined ? withCall(e, state) : e)))

/** Adds call id and attempts to an error raised before they were known. */
const withCall = (e: GatewayError, state: CallState): GatewayError => {
  const extra = { callId: state.callId, attempts: state.attempts }
  switch (e._tag) {
    case "Refusal":
      return new Refusal({ ...e, ...extra })
    case "RateLimited":
      return new RateLimited({ ...e, ...extra })
    case "ProviderUnavailable":
      return new ProviderUnavailable({ ...e, ...extra })
    case "InvalidOutput":
      return new InvalidOutput({ ...e, ...extra })
    case "InvalidRequest":
      return new InvalidRequest({ ...e, ...extra })
    case "ProviderRejected":
      return new ProviderRejected({ ...e, ...extra })
    case "PolicyViolation":
      return new PolicyViolation({ ...e, ...extra })
    case "AmbiguousOutcome":
      return new AmbiguousOutcome({ ...e, ...extra })
    case "BudgetExceeded":
      return new BudgetExceeded({ ...e, ...extra })
    case "DeadlineExceeded":
      return new DeadlineExceeded({ ...e, ...extra })
    case "NoEligibleRoute":
      return new NoEligibleRoute({ ...e, ...extra })
  }
}

/**
 * How an attempt calls its adapter: `None` when the attempt's own time ran out. `generate` bounds
 * the call by the attempt timeout; `stream` drives the adapter's stream with its TTFT, gap and
 * total limits and delivers deltas as they arrive.
 */
export type Invoke = (
  adapter: ProviderAdapter,
  request: ProviderRequest,
  state: CallState
) => Effect.Effect<Option.Option<ProviderResponse>, ProviderError>

const invokeGenerate: Invoke = (adapter, request) => withAttemptTimeout(adapter.generate(request), request.timeout)

/**
 * Runs `attempt` holding a permit of the request's target (its optional concurrency cap), waiting
 * for one at most until `waitUntil`; `undefined` when none came in time. Time spent waiting is
 * taken off the attempt's timeout.
 */
const withTargetPermit = <A>(
  ctx: EngineContext,
  request: ProviderRequest,
  waitUntil: number,
  deadline: number,
  attempt: (request: ProviderRequest) => Effect.Effect<A>
): Effect.Effect<A | undefined> =>
  !ctx.concurrency.isCapped(request.target.ref)
    ? attempt(request)
    : Effect.scoped(
        Effect.gen(function* () {
          const start = yield* Clock.currentTimeMillis
          const maxWait = Duration.millis(Math.max(0, waitUntil - start))
          if (!(yield* ctx.concurrency.acquireTarget(request.target.ref, maxWait))) return undefined
          const now = yield* Clock.currentTimeMillis
          if (now === start) return yield* attempt(request)
          return yield* attempt({ ...request, timeout: Duration.min(request.timeout, Duration.millis(deadline - now)) })
        })
      )

/** Runs one provider call for `target` as an attempt and records it in `state`. */
const runAttempt = (
  ctx: EngineContext,
  state: CallState,
  target: ModelTarget,
  attemptNo: number,
  request: ProviderRequest,
  inputTokens: number,
  invoke: Invoke = invokeGenerate
): Effect.Effect<AttemptResult> =>
  Telemetry.withAttemptSpan(target, attemptNo, request.maxOutputTokens, (span) =>
    Effect.gen(function* () {
      const adapter = ctx.adapters.get(target.provider)!
      const start = yield* Clock.currentTimeMillis
      const timeoutMs = Duration.toMillis(request.timeout)
      state.inFlight = { target, inputTokens }
      state.lastTarget = target
      state.lastMaxOutputTokens = request.maxOutputTokens
      const exit = yield* Effect.exit(invoke(adapter, request, state)).pipe(
        Effect.onInterrupt(() =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.sync(() => {
              const cancelled = new AttemptRecord(
                {
                  target: target.ref,
                  attempt: attemptNo,
                  outcome: "cancelled",
                  startOffsetMs: start - state.startedAt,
                  latencyMs: now - start,
                  timeoutMs,
                  possiblyProcessed: true,
                  maxOutputTokens: request.maxOutputTokens
                },
                { disableValidation: true }
              )
              state.attempts.push(cancelled)
              Telemetry.annotateAttempt(span, cancelled)
            })
          )
        )
      )
      state.inFlight = undefined
      const end = yield* Clock.currentTimeMillis
      const base = {
        target: target.ref,
        attempt: attemptNo,
        startOffsetMs: start - state.startedAt,
        latencyMs: end - start,
        timeoutMs,
        ttftMs: state.attemptTtftMs,
        maxOutputTokens: request.maxOutputTokens
      }
      let result: AttemptResult
      let record: AttemptRecord
      if (Exit.isSuccess(exit) && Option.isSome(exit.value)) {
        const response = exit.value.value
        const cost = state.addUsage(target, response.usage)
        if (response.modelVersion !== undefined) state.modelVersion = response.modelVersion
        const common = {
          ...base,
          httpStatus: response.httpStatus,
          providerRequestId: response.requestId,
          usage: response.usage,
          cost,
          modelVersion: response.modelVersion
        }
        if (response.refusal) {
          const error = new Refusal({
            target: target.ref,
            source: response.finishReason === "content_filter" ? "safety_filter" : "model"
          })
          record = new AttemptRecord(
            { ...common, outcome: "refusal", errorTag: "Refusal" },
            { disableValidation: true }
          )
          result = { _tag: "error", error, possiblyProcessed: true }
        } else {
          record = new AttemptRecord({ ...common, outcome: "success" }, { disableValidation: true })
          result = { _tag: "ok", response }
        }
      } else if (Exit.isSuccess(exit)) {
        const error = new ProviderUnavailable({ target: target.ref, reason: "timeout" })
        // Sent and never answered in time: the provider has likely billed the input, so settle it.
        const usage = new Usage({ inputTokens, outputTokens: state.deliveredOutputTokens }, { disableValidation: true })
        const cost = state.addUsage(target, usage)
        record = new AttemptRecord(
          { ...base, outcome: "timeout", errorTag: error._tag, possiblyProcessed: true, usage, cost },
          { disableValidation: true }
        )
        result = { _tag: "error", error, possiblyProcessed: true }
      } else {
        const pe = Option.getOrUndefined(Cause.failureOption(exit.cause))
        if (pe === undefined) return yield* Effect.die(Cause.squash(exit.cause))
        const error = fromProviderError(target, pe)
        const cost = state.addUsage(target, pe.usage)
        record = new AttemptRecord(
          {
            ...base,
            outcome: attemptOutcomeOf(error),
            errorTag: error._tag,
            httpStatus: pe.httpStatus,
            providerRequestId: pe.requestId,
            retryAfterMs: pe.retryAfter !== undefined ? Duration.toMillis(pe.retryAfter) : undefined,
            possiblyProcessed: pe.processed === "maybe",
            usage: pe.usage,
            cost: pe.usage ? cost : undefined
          },
          { disableValidation: true }
        )
        result = { _tag: "error", error, possiblyProcessed: pe.processed === "maybe" }
      }
      state.attempts.push(record)
      Telemetry.annotateAttempt(span, record)
      yield* ctx.health.record(target, {
        outcome: record.outcome,
        availabilityFailure:
          result._tag === "error" &&
          countsAgainstRoute(
            result.error,
            timeoutMs < Duration.toMillis(target.limits.perAttemptTimeout) && record.latencyMs >= timeoutMs
          ),
        latencyMs: record.latencyMs,
        ttftMs: record.ttftMs,
        errorTag: record.errorTag,
        retryAfterMs: record.retryAfterMs,
        rateLimit: result._tag === "ok" ? result.response.rateLimit : undefined
      })
      return result
    })
  )

/** Replaces the last attempt record's outcome (e.g. a success whose output failed validation). */
const markLast = (state: CallState, outcome: AttemptOutcome, errorTag: string) => {
  const last = state.attempts[state.attempts.length - 1]
  if (last !== undefined) {
    state.attempts[state.attempts.length - 1] = new AttemptRecord(
      { ...last, outcome, errorTag },
      { disableValidation: true }
    )
  }
}

/** Messages for a repair attempt: the invalid answer and what was wrong with it (paths only). */
const repairMessages = (
  messages: ReadonlyArray<Message>,
  text: string,
  issues: ReadonlyArray<string>
): Array<Message> => [
  ...messages,
  { _tag: "assistant", content: text },
  {
    _tag: "user",
    content: `The previous answer did not match the required JSON schema (${issues.join("; ")}). Answer again with JSON that matches the schema exactly.`
  }
]

/**
 * Attempts over the eligible targets in order, each with Schedule-driven retries, all under one
 * deadline. Exported for `stream`, which replaces the provider call.
 */
export const attemptLoop = (
  ctx: EngineContext,
  state: CallState,
  route: Route,
  reservation: Reservation,
  deadline: number,
  invoke: Invoke = invokeGenerate
): Effect.Effect<ModelResult, GatewayError> =>
  Effect.gen(function* () {
    const { compiled } = route
    const w = compiled.workflow
    const cmd = state.command
    let lastError: GatewayError | undefined
    let stoppedForTime = false
    let contextLimitedAt: number | undefined
    let first = true
    // Targets whose breaker opened (or whose probe slots filled) after routing.
    const breakerSkipped = state.skipped
    for (let i = 0; i < route.targets.length; i++) {
      const target = route.targets[i]!
      // After a context-length rejection only a larger-context target may be tried.
      if (contextLimitedAt !== undefined && target.capabilities.contextWindow <= contextLimitedAt) continue
      const next = stepper(retrySchedule(w.retry))
      const limits = target.limits
      const minimumMs = Duration.toMillis(limits.minimumAttemptTime)
      let messages: ReadonlyArray<Message> = cmd.messages
      let repaired = false
      for (let attemptNo = 1; attemptNo <= limits.maxAttempts + (repaired ? 1 : 0); attemptNo++) {
        const now = yield* Clock.currentTimeMillis
        const remaining = deadline - now
        if (remaining < minimumMs) {
          stoppedForTime = true
          break
        }
        const inputTokens = inputTokensAt(route, target)
        const cap = Math.min(
          outputCapAt(cmd, compiled, target),
          affordableOutput(state, reservation, inputTokens, target)
        )
        if (cap < minimumUsefulOutputTokens) {
          return yield* new BudgetExceeded({
            callId: state.callId,
            attempts: state.attempts,
            tenant: cmd.tenant,
            limit: reservation.amount,
            committed: state.actualCost,
            reserved: reservation.amount,
            requested:
              (inputTokens * target.pricing.inputPerMillion +
                minimumUsefulOutputTokens * target.pricing.outputPerMillion) /
              1_000_000
          })
        }
        if (!(yield* ctx.health.tryAcquire(target))) {
          breakerSkipped.push(
            new ExcludedTarget({ target: target.ref, reason: "BREAKER_OPEN", detail: "circuit breaker open" })
          )
          break
        }
        if (first) {
          first = false
          yield* ctx.health.onFirstAttempt
        }
        const request: ProviderRequest = {
          target,
          messages,
          tools: cmd.tools ?? [],
          toolChoice: cmd.toolChoice,
          output: outputFormatOf(compiled, target),
          maxOutputTokens: cap,
          timeout: Duration.millis(Math.min(remaining, Duration.toMillis(limits.perAttemptTimeout)))
        }
        const result = yield* withTargetPermit(ctx, request, deadline - minimumMs, deadline, (req) =>
          Effect.suspend(() => {
            // Only an attempt actually dispatched to a later target makes this a fallback.
            if (i > 0) state.fallbackUsed = true
            return runAttempt(ctx, state, target, attemptNo, req, inputTokens, invoke)
          })
        ).pipe(Effect.onInterrupt(() => ctx.health.release(target)))
        if (result === undefined) {
          yield* ctx.health.release(target)
          // The target's concurrency cap stayed full until too little time was left for it.
          stoppedForTime = true
          break
        }
        if (result._tag === "ok") {
          const { response } = result
          const validated = validateOutput(compiled, target, response)
          if (Either.isRight(validated)) {
            state.target = target
            state.schemaValid = validated.right.valid
            return new ModelResult(
              {
                content: new Content(
                  { text: response.text, value: validated.right.value, toolCalls: response.toolCalls },
                  { disableValidation: true }
                ),
                finishReason: response.finishReason,
                evidence: state.evidence(yield* Clock.currentTimeMillis)
              },
              { disableValidation: true }
            )
          }
          markLast(state, "invalid_output", "InvalidOutput")
          state.schemaValid = false
          lastError = validated.left
          if (state.committed) return yield* Effect.fail(withCall(validated.left, state))
          if (w.repair && !repaired && response.text !== undefined) {
            repaired = true
            messages = repairMessages(cmd.messages, response.text, validated.left.issues)
            continue
          }
          break // invalid output: next route
        }
        const error = result.error
        lastError = error
        // After the commit point of a stream no retry or fallback can help: the caller has text.
        if (state.committed) return yield* Effect.fail(withCall(error, state))
        switch (error._tag) {
          case "Refusal":
          case "PolicyViolation":
            return yield* Effect.fail(error)
          case "InvalidRequest":
            if (error.reason === "context_length") {
              contextLimitedAt = target.capabilities.contextWindow
              break
            }
            return yield* Effect.fail(error)
          default:
            break
        }
        if (error._tag === "InvalidRequest" || error._tag === "ProviderRejected" || error._tag === "InvalidOutput")
          break
        // Retryable from here on: RateLimited, ProviderUnavailable.
        if (result.possiblyProcessed && cmd.allowsStateChangingTools) {
          return yield* new AmbiguousOutcome({
            callId: state.callId,
            attempts: state.attempts,
            target: target.ref,
            cause: error._tag === "ProviderUnavailable" ? error.reason : error._tag
          })
        }
        if (attemptNo >= limits.maxAttempts) break
        const at = yield* Clock.currentTimeMillis
        const delay = yield* next.next(
          at,
          error._tag === "RateLimited" || error._tag === "ProviderUnavailable" ? error : {}
        )
        if (Option.isNone(delay)) break
        // No sleep that would leave too little time for the retry: go to the fallback or stop.
        if (at + delay.value + minimumMs > deadline) break
        // A breaker this failure opened: no retry token spent on a route that will not be tried.
        if (yield* ctx.health.isOpen(target)) break
        if (!(yield* ctx.health.tryRetry)) {
          state.retryBudgetExhausted = true
          break
        }
        if (delay.value > 0) yield* Effect.sleep(Duration.millis(delay.value))
        state.retryCount++
      }
    }
    // Every eligible route failed, or there was no time to try.
    if (lastError !== undefined && isAvailability(lastError)) {
      if (compiled.degrade !== undefined) {
        const value = yield* compiled.degrade(cmd)
        const valid = compiled.decode === undefined ? true : Either.isRight(compiled.decode(value))
        if (valid) {
          state.degraded = true
          state.schemaValid = compiled.schema === undefined ? undefined : true
          return new ModelResult(
            {
              content: new Content(
                {
                  text: typeof value === "string" ? value : undefined,
                  value: typeof value === "string" ? undefined : value,
                  toolCalls: []
                },
                { disableValidation: true }
              ),
              finishReason: "other",
              evidence: state.evidence(yield* Clock.currentTimeMillis)
            },
            { disableValidation: true }
          )
        }
      }
      const policyExcluded = route.decision.excluded.filter(
        (e) => e.reason === "DATA_REGION_MISMATCH" || e.reason === "DATA_CLASS_NOT_ALLOWED"
      )
      if (policyExcluded.length > 0) {
        return yield* new PolicyViolation({
          callId: state.callId,
          attempts: state.attempts,
          reason: policyExcluded[0]!.reason,
          excluded: policyExcluded
        })
      }
    }
    const now = yield* Clock.currentTimeMillis
    const smallestMinimum = Math.min(...route.targets.map((t) => Duration.toMillis(t.limits.minimumAttemptTime)))
    const outOfTime = stoppedForTime || deadline - now < smallestMinimum
    if (lastError === undefined && !stoppedForTime && breakerSkipped.length > 0) {
      return yield* new NoEligibleRoute({
        callId: state.callId,
        attempts: state.attempts,
        workflow: w.name,
        excluded: [...route.decision.excluded, ...breakerSkipped]
      })
    }
    if (lastError === undefined || (outOfTime && isAvailability(lastError))) {
      return yield* new DeadlineExceeded({
        callId: state.callId,
        attempts: state.attempts,
        stage: state.attempts.length > 0 && now >= deadline ? "attempt" : "before_attempt",
        timeoutMs: deadline - state.startedAt,
        elapsedMs: now - state.startedAt
      })
    }
    return yield* Effect.fail(withCall(lastError, state))
  })
