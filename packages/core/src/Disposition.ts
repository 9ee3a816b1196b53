/**
 * The disposition table: the one place that decides what happens after a failed attempt (DESIGN
 * §5). Adapters classify wire facts into a `ProviderError`; {@link failureOf} maps it onto the
 * gateway's failure union; {@link rowOf} gives, for every failure tag, the attempt outcome it is
 * recorded as, whether it is an availability signal (breakers, degraded answers) and
 * {@link decide} what the call does next. The table is a `Match` over the closed union, so a new
 * error tag does not compile until it has a row.
 *
 * | failure | next | breaker | availability |
 * |---|---|---|---|
 * | `Refusal` | stop | no | no |
 * | `RateLimited` | retry this target, then next target | yes | yes |
 * | `ProviderUnavailable` | retry this target, then next target | yes (not a timeout the call's deadline cut) | yes |
 * | `InvalidOutput` | repair once if the workflow allows, else escalate if its escalation policy says so, else next target | no | no |
 * | `InvalidRequest` | stop; `context_length` → next larger-context target | no | no |
 * | `ProviderRejected` | next target | no | yes |
 * | `PolicyViolation`, `AmbiguousOutcome`, `BudgetExceeded`, `DeadlineExceeded`, `NoEligibleRoute`, `StoreError`, `RunExhausted` | stop | no | no |
 *
 * Before the row applies: after a stream's commit point every failure stops the call (the caller
 * already has text), and a retryable failure of an attempt that may have been processed, when the
 * command offers side-effecting tools, stops with `AmbiguousOutcome` (no retry, no fallback).
 *
 * Around the table, the rest of the engine's policy lives here too:
 *
 * - {@link classify}: how every attempt that ended is recorded — an answer, a refusal, sent and cut
 *   by its bound (a timeout, which the call's deadline may have imposed: {@link cutByDeadline}), an
 *   adapter defect, a classified provider error — and whether it counts against the breaker;
 * - {@link retryGate}: whether a `Retry` row retries now, after a delay, or not at all (attempt
 *   limit, the retry schedule's delay against the time left and the minimum attempt time, the
 *   target's breaker, the retry budget);
 * - {@link endOfRoute}: what a route that ran out of targets ends with (a degraded answer, a policy
 *   error, no eligible route, the deadline, or the last failure);
 * - {@link isTemporaryKind}: which adapter classifications are temporary (adapters read it for
 *   `x-should-retry`; there is no second list).
 *
 * @since 0.2.0
 */
import { Cause, Effect, Exit, Match, Option } from "effect"
import type { Failure } from "./Errors.js"
import type { ProviderError } from "./ProviderAdapter.js"
import type { AttemptOutcome } from "./ModelResult.js"
import { TargetRef } from "./ModelTarget.js"
import type { ProviderResponse } from "./ProviderAdapter.js"
import type { Classified, RetryFacts, RetryProbes, RetryVerdict, RouteEnd, RouteFacts } from "./internal/disposition.js"

/**
 * What the call does after a failed attempt.
 *
 * - `Stop`: the call fails with `failure` (which may differ from the attempt's: `AmbiguousOutcome`).
 * - `Retry`: another attempt on the same target, if its attempt limit, the retry schedule, the
 *   deadline, its breaker and the retry budget allow; otherwise as `NextTarget`.
 * - `Repair`: one more attempt on the same target with the validation issues (invalid output).
 * - `NextTarget`: the next eligible target.
 * - `NextLargerTarget`: the next eligible target with a larger context window.
 * - `Escalate`: the best eligible stronger target after this one (`internal/router/escalation`), else as
 *   `NextTarget`.
 *
 * @since 0.2.0
 * @category Models
 */
export type Disposition =
  | { readonly _tag: "Stop"; readonly failure: Failure }
  | { readonly _tag: "Retry" }
  | { readonly _tag: "Repair" }
  | { readonly _tag: "NextTarget" }
  | { readonly _tag: "NextLargerTarget" }
  | { readonly _tag: "Escalate" }

/**
 * What is known about the attempt that failed.
 *
 * @since 0.2.0
 * @category Models
 */
export interface AttemptFacts {
  /** The provider may have processed the request (timeout after send, reset mid-body, …). */
  readonly possiblyProcessed: boolean
  /** The command offers tools that change state outside the model. */
  readonly sideEffectingTools: boolean
  /** A stream delivered its first delta to the consumer: no retry or fallback after that. */
  readonly committed: boolean
  /** The workflow repairs invalid output and this target has not been re-asked yet. */
  readonly repairAvailable: boolean
  /** The attempt timed out because the call's deadline, not the target's own limit, cut it. */
  readonly cutByDeadline: boolean
  /** The workflow escalates on invalid output (`escalation.onInvalidOutput`). Omitted: false. */
  readonly escalateOnInvalidOutput?: boolean | undefined
}

/**
 * One row of the table.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Row {
  /** How the attempt is recorded. */
  readonly outcome: AttemptOutcome
  /** An availability failure: a degraded answer may replace it once every route failed. */
  readonly availability: boolean
  /** Counts against the target's breaker. */
  readonly breaker: boolean
  /** What the call does next. */
  readonly next: Disposition
}

const stop = (failure: Failure): Disposition => ({ _tag: "Stop", failure })
const retry: Disposition = { _tag: "Retry" }
const repair: Disposition = { _tag: "Repair" }
const nextTarget: Disposition = { _tag: "NextTarget" }
const nextLarger: Disposition = { _tag: "NextLargerTarget" }
const escalate: Disposition = { _tag: "Escalate" }

/** A temporary failure: retried unless it may have had effects the command cannot repeat. */
const temporary = (failure: Failure & { readonly target: TargetRef }, facts: AttemptFacts): Disposition =>
  facts.possiblyProcessed && facts.sideEffectingTools
    ? stop({
        _tag: "AmbiguousOutcome",
        target: failure.target,
        cause: failure._tag === "ProviderUnavailable" ? failure.reason : failure._tag
      })
    : retry

const final = (failure: Failure): Row => ({
  outcome: "unavailable",
  availability: false,
  breaker: false,
  next: stop(failure)
})

/** A failure the call stops with, whatever is known of its attempt. */
const finalRow =
  (f: Failure) =>
  (_: AttemptFacts): Row =>
    final(f)

const table = Match.type<Failure>().pipe(
  Match.tagsExhaustive({
    Refusal:
      (f) =>
      (_: AttemptFacts): Row => ({ outcome: "refusal", availability: false, breaker: false, next: stop(f) }),
    RateLimited:
      (f) =>
      (facts: AttemptFacts): Row => ({
        outcome: "rate_limited",
        availability: true,
        breaker: true,
        next: temporary(f, facts)
      }),
    ProviderUnavailable:
      (f) =>
      (facts: AttemptFacts): Row => ({
        outcome: f.reason === "timeout" ? "timeout" : "unavailable",
        availability: true,
        breaker: !(f.reason === "timeout" && facts.cutByDeadline),
        next: temporary(f, facts)
      }),
    InvalidOutput:
      (_) =>
      (facts: AttemptFacts): Row => ({
        outcome: "invalid_output",
        availability: false,
        breaker: false,
        next: facts.repairAvailable ? repair : facts.escalateOnInvalidOutput === true ? escalate : nextTarget
      }),
    InvalidRequest:
      (f) =>
      (_: AttemptFacts): Row => ({
        outcome: "invalid_request",
        availability: false,
        breaker: false,
        next: f.reason === "context_length" ? nextLarger : stop(f)
      }),
    ProviderRejected:
      (_) =>
      (_facts: AttemptFacts): Row => ({
        outcome: "rejected",
        availability: true,
        breaker: false,
        next: nextTarget
      }),
    PolicyViolation: finalRow,
    AmbiguousOutcome:
      (f) =>
      (_: AttemptFacts): Row => ({ ...final(f), outcome: "timeout" }),
    BudgetExceeded: finalRow,
    DeadlineExceeded: finalRow,
    NoEligibleRoute: finalRow,
    StoreError: finalRow,
    RunExhausted: finalRow
  })
)

/**
 * The row for `failure` given what is known about its attempt. After a stream's commit point the
 * call stops with the failure whatever the row says.
 *
 * @since 0.2.0
 * @category Policy
 */
export const rowOf = (failure: Failure, facts: AttemptFacts): Row => {
  const row = table(failure)(facts)
  return facts.committed ? { ...row, next: stop(failure) } : row
}

/**
 * What the call does next after `failure` (see {@link rowOf}).
 *
 * @since 0.2.0
 * @category Policy
 */
export const decide = (failure: Failure, facts: AttemptFacts): Disposition => rowOf(failure, facts).next

/**
 * Whether a failure is an availability failure (a degraded answer may replace it).
 *
 * @since 0.2.0
 * @category Policy
 */
export const isAvailability = (failure: Failure): boolean => table(failure)(noFacts).availability

const noFacts: AttemptFacts = {
  possiblyProcessed: false,
  sideEffectingTools: false,
  committed: false,
  repairAvailable: false,
  cutByDeadline: false
}

/**
 * What {@link failureOf} reads of an adapter's classified failure.
 *
 * @since 0.2.0
 * @category Models
 */
export type ProviderFacts = Pick<ProviderError, "kind" | "httpStatus" | "retryAfter" | "detail">

/**
 * Maps an adapter's classified failure onto the gateway's failure union.
 *
 * @since 0.2.0
 * @category Policy
 */
export const failureOf = (target: TargetRef, e: ProviderFacts): Failure => {
  switch (e.kind) {
    case "refusal":
      return { _tag: "Refusal", target, source: "safety_filter" }
    case "rate_limited":
      return { _tag: "RateLimited", target, retryAfter: e.retryAfter }
    case "server_error":
    case "overloaded":
    case "transport":
    case "timeout":
    case "stream_stalled":
    case "stream_truncated":
      return { _tag: "ProviderUnavailable", target, reason: e.kind, httpStatus: e.httpStatus, retryAfter: e.retryAfter }
    case "invalid_request":
      return {
        _tag: "InvalidRequest",
        reason: "bad_request",
        target,
        httpStatus: e.httpStatus,
        detail: e.detail || "rejected by provider"
      }
    case "context_length":
      return {
        _tag: "InvalidRequest",
        reason: "context_length",
        target,
        httpStatus: e.httpStatus,
        detail: "input exceeds the context window"
      }
    case "authentication":
    case "permission":
    case "quota_exhausted":
    case "spend_cap":
    case "model_not_found":
    case "request_too_large":
      return { _tag: "ProviderRejected", target, reason: e.kind, httpStatus: e.httpStatus }
    case "rejected":
      return { _tag: "ProviderRejected", target, reason: "other", httpStatus: e.httpStatus }
    case "invalid_output":
      return { _tag: "InvalidOutput", target, issues: [e.detail || "malformed provider response"] }
  }
}

// ---------------------------------------------------------------------------------------------
// Temporary kinds (adapters)
// ---------------------------------------------------------------------------------------------

const probeTarget = TargetRef.make("model://disposition/probe")

/**
 * Whether the engine retries an adapter classification on the same target (its row is `Retry`
 * when nothing else is known). Adapters read it (`x-should-retry`) instead of a list of their own.
 *
 * @since 0.2.0
 * @category Policy
 */
export const isTemporaryKind = (kind: ProviderError["kind"]): boolean =>
  decide(failureOf(probeTarget, { kind, httpStatus: undefined, retryAfter: undefined, detail: "" }), noFacts)._tag ===
  "Retry"

// ---------------------------------------------------------------------------------------------
// Classification of an attempt that ended
// ---------------------------------------------------------------------------------------------

type Failed = Extract<Classified, { readonly failure: Failure }>

/**
 * Whether an attempt bounded to `boundMs` (the earliest of the call's deadline and the target's own
 * `ownLimitMs`) that ran `elapsedMs` was cut by the call's deadline: its bound was shorter than the
 * target's limit and it ran to the bound. Such a timeout is not the target's fault.
 *
 * @since 0.2.0
 * @category Policy
 */
export const cutByDeadline = (boundMs: number, ownLimitMs: number, elapsedMs: number): boolean =>
  boundMs < ownLimitMs && elapsedMs >= boundMs

/**
 * Classifies how an attempt ended: `Some` answer (success or refusal), `None` (sent and cut by its
 * bound: a timeout), a classified `ProviderError`, or a defect of the adapter (a bug: recorded as
 * unavailable, billed what was sent, counted against the breaker; the call goes on).
 *
 * @since 0.2.0
 * @category Policy
 */
export const classify = (
  target: TargetRef,
  exit: Exit.Exit<Option.Option<ProviderResponse>, ProviderError>,
  cut: boolean
): Classified => {
  if (Exit.isSuccess(exit)) {
    if (Option.isNone(exit.value)) return sentWithoutAnswer(target, "timeout", cut)
    const r = exit.value.value
    if (!r.refusal) return answered(r, cut)
    const failure: Failure = {
      _tag: "Refusal",
      target,
      source: r.finishReason === "content_filter" ? "safety_filter" : "model"
    }
    return classified(rowOf(failure, noFacts), failure, true, cut, r, undefined, false)
  }
  const error = Cause.failureOption(exit.cause)
  if (Option.isNone(error)) return sentWithoutAnswer(target, "adapter_defect", false)
  const pe = error.value
  const failure = failureOf(target, pe)
  const possiblyProcessed = pe.processed === "maybe"
  const row = rowOf(failure, { ...noFacts, possiblyProcessed, cutByDeadline: cut })
  return classified(row, failure, possiblyProcessed, cut, undefined, pe, false)
}

const answered = (response: ProviderResponse, cut: boolean): Classified => ({
  outcome: "success",
  failure: undefined,
  breaker: false,
  possiblyProcessed: true,
  cutByDeadline: cut,
  response,
  error: undefined,
  billSent: false
})

const sentWithoutAnswer = (target: TargetRef, reason: "timeout" | "adapter_defect", cut: boolean): Failed => {
  const failure: Failure = { _tag: "ProviderUnavailable", target, reason }
  const row = rowOf(failure, { ...noFacts, possiblyProcessed: true, cutByDeadline: cut })
  return classified(row, failure, true, cut, undefined, undefined, true)
}

const classified = (
  row: Row,
  failure: Failure,
  possiblyProcessed: boolean,
  cut: boolean,
  response: ProviderResponse | undefined,
  error: ProviderError | undefined,
  billSent: boolean
): Failed => ({
  outcome: row.outcome,
  failure,
  breaker: row.breaker,
  possiblyProcessed,
  cutByDeadline: cut,
  response,
  error,
  billSent
})

// ---------------------------------------------------------------------------------------------
// The retry gate
// ---------------------------------------------------------------------------------------------

const noRetry = {
  attempts: { _tag: "NoRetry", reason: "attempts" },
  schedule: { _tag: "NoRetry", reason: "schedule" },
  time: { _tag: "NoRetry", reason: "time" },
  breaker: { _tag: "NoRetry", reason: "breaker" },
  retry_budget: { _tag: "NoRetry", reason: "retry_budget" }
} as const satisfies Record<string, RetryVerdict>
const retryNow: RetryVerdict = { _tag: "RetryNow" }

/**
 * Whether a wait of `delayMs` from `now` still leaves the minimum attempt time before `deadline`:
 * no sleep is taken that would leave too little time for the retry.
 */
const retryFits = (now: number, delayMs: number, minimumMs: number, deadline: number): boolean =>
  now + delayMs + minimumMs <= deadline

/**
 * The one retry gate: the target's attempt limit, then the schedule's delay against the time left
 * (`retryFits`), then the breaker (a breaker this failure opened spends no retry token on a
 * route that will not be tried), then the retry budget.
 *
 * @since 0.2.0
 * @category Policy
 */
export const retryGate = (facts: RetryFacts, probes: RetryProbes): Effect.Effect<RetryVerdict> => {
  if (facts.attempt >= facts.maxAttempts) return Effect.succeed(noRetry.attempts)
  return Effect.flatMap(probes.delay, (delay) => {
    if (Option.isNone(delay)) return Effect.succeed(noRetry.schedule)
    const delayMs = delay.value
    if (!retryFits(facts.now, delayMs, facts.minimumMs, facts.deadline)) return Effect.succeed(noRetry.time)
    return Effect.flatMap(probes.breakerOpen, (open) =>
      open
        ? Effect.succeed(noRetry.breaker)
        : Effect.map(
            probes.retryToken,
            (token): RetryVerdict =>
              !token ? noRetry.retry_budget : delayMs > 0 ? { _tag: "RetryAfter", delayMs } : retryNow
          )
    )
  })
}

// ---------------------------------------------------------------------------------------------
// End of route
// ---------------------------------------------------------------------------------------------

const routeEnds = {
  degrade: { _tag: "Degrade" },
  policy: { _tag: "PolicyViolation" },
  noRoute: { _tag: "NoEligibleRoute" },
  attempt: { _tag: "DeadlineExceeded", stage: "attempt" },
  beforeAttempt: { _tag: "DeadlineExceeded", stage: "before_attempt" }
} as const satisfies Record<string, RouteEnd>

/**
 * The end-of-route table: an availability failure is replaced by a degraded answer, else by a
 * policy error naming what policy kept out; nothing tried and targets skipped is no eligible
 * route; no failure, or an availability failure with no time left, is the deadline; otherwise the
 * last failure stands.
 *
 * @since 0.2.0
 * @category Policy
 */
export const endOfRoute = (facts: RouteFacts): RouteEnd => {
  const last = facts.last
  const availability = last !== undefined && isAvailability(last)
  if (availability && facts.degrade) return routeEnds.degrade
  if (availability && facts.policyExcluded) return routeEnds.policy
  if (last === undefined && !facts.stoppedForTime && facts.skipped) return routeEnds.noRoute
  if (last === undefined || (availability && (facts.stoppedForTime || facts.belowMinimum))) {
    return facts.pastDeadline ? routeEnds.attempt : routeEnds.beforeAttempt
  }
  return { _tag: "Fail", failure: last }
}
