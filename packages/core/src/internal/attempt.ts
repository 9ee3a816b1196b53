/**
 * One attempt, as a value: the provider request built for a target ({@link requestOf}), run under
 * the attempt's bound (`deadline.ts`), and classified by the disposition table
 * (`Disposition.classify`: an answer, a refusal, a timeout the call's deadline may have imposed,
 * an adapter defect, a classified failure). The pipeline's attempts also take the target's own
 * concurrency permit when it has a cap, are recorded in the call's tally and reported to health
 * ({@link dispatch}); shadow calls (`Shadow.ts`) build and classify theirs with the same functions.
 */
import { Cause, type Clock, Duration, Effect, Exit, type Option, type Tracer } from "effect"
import * as Disposition from "../Disposition.js"
import type { Classified } from "./disposition.js"
import type { Failure } from "../Errors.js"
import type { ProviderError } from "../ProviderAdapter.js"
import type { CompiledWorkflow } from "../GatewayConfig.js"
import type { Message, ModelCommand } from "../ModelCommand.js"
import type * as ModelOptions from "../ModelOptions.js"
import * as Options from "./options.js"
import { Usage } from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import { inputTokensAt } from "./affordable.js"
import type { AttemptRecord } from "../ModelResult.js"
import type { ProviderAdapter, ProviderRequest, ProviderResponse } from "../ProviderAdapter.js"
import type { Route } from "./router/decision.js"
import { tokensOf } from "./router/engine.js"
import type { RouteDecision } from "../RouteDecision.js"
import * as TokenEstimator from "../TokenEstimator.js"
import type { AttemptContext, AttemptProgress, Invoke } from "./attemptContext.js"
import { addUsage, type Call, type EngineContext, storeFailure, type Tally } from "./call.js"
import { bounded, boundedOrOwned } from "./deadline.js"
import * as FastPath from "./fastPath.js"
import { cancelledRecord, defectKind, recordOf } from "./evidence.js"
import { outputFormatOf } from "./output.js"
import * as Report from "./telemetry.js"

/** What every request of a call shares: its workflow, its command, its resolved options. */
export interface RequestBasis {
  readonly compiled: CompiledWorkflow
  readonly command: ModelCommand
  readonly options: ModelOptions.ResolvedOptions
}

/**
 * The provider request for `target`: the call's tools and output format, the options the target
 * accepts (and the provider options of its provider), the output cap and the attempt's timeout.
 */
export const requestOf = (
  basis: RequestBasis,
  target: ModelTarget,
  messages: ReadonlyArray<Message>,
  maxOutputTokens: number,
  timeoutMs: number
): ProviderRequest => ({
  target,
  messages,
  tools: basis.command.tools ?? noTools,
  toolChoice: basis.command.toolChoice,
  output: outputFormatOf(basis.compiled, target),
  maxOutputTokens,
  timeout: timeoutOf(target, timeoutMs),
  options: Options.forTarget(basis.options, target.capabilities.options),
  providerOptions: Options.forProvider(basis.options, target.provider)
})

/** The tools of a command that has none (one frozen array, not one per request). */
const noTools: ReadonlyArray<never> = Object.freeze([])

/** `timeoutMs` as a `Duration`: the target's own limit when it is that (no new value per request). */
const timeoutOf = (target: ModelTarget, timeoutMs: number): Duration.Duration => {
  const limit = target.limits.perAttemptTimeout
  return Duration.toMillis(limit) === timeoutMs ? limit : Duration.millis(timeoutMs)
}

/**
 * `generate` under the attempt's bound: `None` when `until` came first. An adapter that owns the
 * deadline (`generateUntil`) bounds itself under the live clock (no fork per attempt).
 */
export const generateUntil = (
  adapter: ProviderAdapter,
  request: ProviderRequest,
  until: number,
  clock?: Clock.Clock
): Effect.Effect<Option.Option<ProviderResponse>, ProviderError> => {
  const owned = adapter.generateUntil
  return owned === undefined
    ? bounded(adapter.generate(request), until, clock)
    : boundedOrOwned(
        () => adapter.generate(request),
        () => owned(request, until),
        until,
        clock
      )
}

/** How the pipeline's `generate` calls its adapter. */
export const invokeGenerate: Invoke = (adapter, request, attempt) =>
  generateUntil(adapter, request, attempt.until, attempt.clock)

/**
 * Classifies an attempt started at `startedAt`, bounded to `until`, that ended at `endedAt` with
 * `exit`: whether the call's deadline cut it (its bound shorter than the target's own limit) is
 * decided here, once, for every path.
 */
export const classifyEnd = (
  target: ModelTarget,
  exit: Exit.Exit<Option.Option<ProviderResponse>, ProviderError>,
  startedAt: number,
  until: number,
  endedAt: number
): Classified =>
  Disposition.classify(
    target.ref,
    exit,
    Disposition.cutByDeadline(
      until - startedAt,
      Duration.toMillis(target.limits.perAttemptTimeout),
      endedAt - startedAt
    )
  )

/** What one attempt of the pipeline needs of its call. */
export interface Frame {
  readonly ctx: EngineContext
  readonly call: Call
  readonly route: Route
  readonly invoke: Invoke
}

/** One attempt of the pipeline, before it is dispatched. */
export interface Attempt {
  /** The target's index in the route (0: not a fallback). */
  readonly index: number
  /** 1 for the first attempt on this target. */
  readonly number: number
  readonly request: ProviderRequest
  /** Input tokens at this target, when the router counted them. */
  readonly inputTokens: number | undefined
  /** The target's minimum attempt time, ms: a capped target's permit is not awaited past it. */
  readonly minimumMs: number
}

/**
 * Dispatches one attempt (holding the target's permit when it has a concurrency cap), records it
 * and reports it to health. `undefined` when the target's permit did not come before too little
 * time was left.
 */
export const dispatch = (frame: Frame, attempt: Attempt): Effect.Effect<Classified | undefined, Failure> => {
  const { ctx, call } = frame
  const target = attempt.request.target
  if (!ctx.concurrency.isCapped(target.ref)) return run(frame, attempt)
  return Effect.clockWith((clock) => {
    const start = clock.unsafeCurrentTimeMillis()
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        Effect.mapError(
          restore(ctx.concurrency.acquireTarget(target.ref, call.deadline - attempt.minimumMs)),
          storeFailure
        ),
        (permit) => {
          if (permit === undefined) return Effect.succeed(undefined)
          const at = clock.unsafeCurrentTimeMillis()
          // Time spent waiting for the target's permit comes off the attempt's timeout.
          const waited: Attempt =
            at === start
              ? attempt
              : {
                  ...attempt,
                  request: {
                    ...attempt.request,
                    timeout: Duration.min(attempt.request.timeout, Duration.millis(call.deadline - at))
                  }
                }
          return Effect.ensuring(restore(run(frame, waited)), Effect.sync(permit.release))
        }
      )
    )
  })
}

/** Runs one provider call, records it in the call's tally, and reports its outcome to health. */
const run = (frame: Frame, attempt: Attempt): Effect.Effect<Classified> => {
  const { call } = frame
  const target = attempt.request.target
  return call.span === undefined
    ? runTraced(frame, attempt, undefined)
    : Report.withAttemptSpan(target, attempt.number, attempt.request.maxOutputTokens, (span) =>
        runTraced(frame, attempt, span)
      )
}

const runTraced = (frame: Frame, attempt: Attempt, span: Tracer.Span | undefined): Effect.Effect<Classified> => {
  const { ctx, call, route } = frame
  const { request } = attempt
  const target = request.target
  const adapter = ctx.adapters.get(target.provider)!
  const run = new AttemptRun(frame, route, attempt, span, call.clock.unsafeCurrentTimeMillis())
  const { tally, holds } = call
  // Only an attempt actually dispatched to a later target makes this a fallback.
  if (attempt.index > 0) tally.fallbackUsed = true
  holds.inFlight = run
  tally.lastTarget = target
  tally.lastMaxOutputTokens = request.maxOutputTokens
  const invoked = frame.invoke(adapter, request, run)
  // Traced: a cancelled attempt's span says so before it ends (the exit handler records the attempt).
  const traced =
    span === undefined
      ? invoked
      : Effect.onInterrupt(invoked, () =>
          Effect.clockWith((c) =>
            Effect.sync(() => Report.annotateAttempt(span, cancelledRecord(call, run, c.unsafeCurrentTimeMillis())))
          )
        )
  // One frame for both outcomes (no `Effect.exit` step in between).
  return Effect.matchCauseEffect(traced, run)
}

/**
 * One dispatched attempt: what the adapter and the stream driver see of it (its
 * {@link AttemptContext}, which is also its own {@link AttemptProgress}), and the handler of its
 * outcome. One object per attempt: the route's decision and the input count are read on demand.
 */
class AttemptRun implements AttemptContext, AttemptProgress {
  readonly target: ModelTarget
  readonly attempt: number
  readonly position: number
  readonly fallback: boolean
  readonly until: number
  ttftMs: number | undefined = undefined
  outputTokens = 0
  committed = false

  constructor(
    readonly frame: Frame,
    readonly route: Route,
    readonly planned: Attempt,
    readonly span: Tracer.Span | undefined,
    readonly startedAt: number
  ) {
    const request = planned.request
    this.target = request.target
    this.attempt = planned.number
    this.position = planned.index
    this.fallback = planned.index > 0
    this.until = startedAt + Duration.toMillis(request.timeout)
  }

  get clock(): Clock.Clock {
    return this.frame.call.clock
  }

  get progress(): AttemptProgress {
    return this
  }

  get decision(): RouteDecision {
    return this.route.decision
  }

  get inputTokens(): Effect.Effect<number> {
    const counted = this.planned.inputTokens
    if (counted !== undefined) return Effect.succeed(counted)
    const target = this.target
    return Effect.map(countInput(this.frame.call, this.route, this.planned.request.messages), (n) =>
      inputTokensAt(n, target)
    )
  }

  readonly onFailure = (cause: Cause.Cause<ProviderError>): Effect.Effect<Classified> =>
    this.ended(Exit.failCause(cause))

  readonly onSuccess = (value: Option.Option<ProviderResponse>): Effect.Effect<Classified> =>
    this.ended(Exit.succeed(value))

  /** Classifies and records the attempt's outcome. */
  private ended(exit: Exit.Exit<Option.Option<ProviderResponse>, ProviderError>): Effect.Effect<Classified> {
    const { frame, target, startedAt } = this
    const call = frame.call
    const request = this.planned.request
    const end = call.clock.unsafeCurrentTimeMillis()
    const c = classifyEnd(target, exit, startedAt, this.until, end)
    // Sent without a reported usage: billed what was sent (counted, uninterruptibly, if the
    // router did not count), while the attempt is still the call's attempt in flight.
    if (c.billSent) {
      return Effect.flatMap(Effect.uninterruptible(billSent(call.tally, this)), (billed) =>
        ended(
          frame,
          this,
          this.span,
          exit,
          c,
          recordOf(call, this, end, request.maxOutputTokens, c, billed.usage, billed.cost)
        )
      )
    }
    const usage = c.response !== undefined ? c.response.usage : c.error?.usage
    const cost = addUsage(call.tally, target, usage)
    const record = recordOf(
      call,
      this,
      end,
      request.maxOutputTokens,
      c,
      usage,
      c.response !== undefined || usage !== undefined ? cost : undefined
    )
    return ended(frame, this, this.span, exit, c, record)
  }
}

/** An attempt that ended and was recorded: kept in the call's tally, annotated, reported to health. */
const ended = (
  frame: Frame,
  context: AttemptContext,
  span: Tracer.Span | undefined,
  exit: Exit.Exit<Option.Option<ProviderResponse>, ProviderError>,
  c: Classified,
  record: AttemptRecord
): Effect.Effect<Classified> => {
  const { call } = frame
  const { tally, holds } = call
  const target = context.target
  holds.inFlight = undefined
  holds.admitted = undefined
  if (context.progress.committed) tally.committed = true
  if (c.response?.modelVersion !== undefined) tally.modelVersion = c.response.modelVersion
  tally.attempts.push(record)
  if (span !== undefined) Report.annotateAttempt(span, record)
  const left = reportToHealth(frame, target, c, record)
  const reported = left === undefined ? Effect.succeed(c) : Effect.as(left, c)
  // A bug, reported loudly; by the defect's kind only (its message may quote content).
  return Exit.isFailure(exit) && c.error === undefined
    ? Effect.zipRight(
        Effect.logError(
          `modelgate: adapter defect on ${target.ref} (${defectKind(Cause.squash(exit.cause))}); attempt recorded as unavailable`
        ),
        reported
      )
    : reported
}

/**
 * Reports an attempt to health; returns what is left to run (`undefined`: nothing). Health off
 * records at once with nothing to build; in memory the sample is kept at once and only a breaker
 * transition (or a store to ask) is left; any other service is asked with its Effect.
 */
const reportToHealth = (
  frame: Frame,
  target: ModelTarget,
  c: Classified,
  record: AttemptRecord
): Effect.Effect<void> | undefined => {
  const { ctx, call } = frame
  const fast = FastPath.health(ctx.health)
  if (fast?.record !== undefined) {
    fast.record()
    return undefined
  }
  const signal = {
    outcome: record.outcome,
    availabilityFailure: c.breaker,
    latencyMs: record.latencyMs,
    ttftMs: record.ttftMs,
    errorTag: record.errorTag,
    retryAfterMs: record.retryAfterMs,
    rateLimit: c.response?.rateLimit
  }
  return fast?.recordAt === undefined
    ? ctx.health.record(target, signal)
    : fast.recordAt(target, signal, call.clock.unsafeCurrentTimeMillis())
}

/**
 * Input tokens of `messages` sent with the call's tools and output schema, before any safety
 * factor: the router's count for the command's own messages; otherwise counted once per call (the
 * one sliced counter, which gives the event loop turns) and kept in the call's holds, so no path
 * counts the caller's text twice.
 */
export const countInput = (call: Call, route: Route, messages: ReadonlyArray<Message>): Effect.Effect<number> => {
  if (route.inputTokens !== undefined && messages === call.command.messages) return Effect.succeed(route.inputTokens)
  const kept = call.holds.counted
  if (kept !== undefined && kept.messages === messages) return Effect.succeed(kept.tokens)
  return Effect.map(
    TokenEstimator.estimateInputYielding(
      { messages, tools: call.command.tools, outputJsonSchema: route.compiled.jsonSchema },
      // The gateway's cache of counts, as the router counts with.
      tokensOf(call.config.router.workflows)
    ),
    (tokens) => {
      call.holds.counted = { messages, tokens }
      return tokens
    }
  )
}

/**
 * Bills an attempt that was sent and reported no usage of its own (cut by its timeout, a defect or
 * the caller's cancellation): its input, and the output delivered so far.
 */
export const billSent = (
  tally: Tally,
  attempt: AttemptContext
): Effect.Effect<{ readonly usage: Usage; readonly cost: number }> =>
  Effect.map(attempt.inputTokens, (inputTokens) => {
    const usage = new Usage({ inputTokens, outputTokens: attempt.progress.outputTokens }, { disableValidation: true })
    return { usage, cost: addUsage(tally, attempt.target, usage) }
  })
