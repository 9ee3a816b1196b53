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
 * @since 0.2.0
 */
import { Match } from "effect"
import type { Failure, ProviderError } from "./Errors.js"
import type { AttemptOutcome } from "./ModelResult.js"
import type { TargetRef } from "./ModelTarget.js"

/**
 * What the call does after a failed attempt.
 *
 * - `Stop`: the call fails with `failure` (which may differ from the attempt's: `AmbiguousOutcome`).
 * - `Retry`: another attempt on the same target, if its attempt limit, the retry schedule, the
 *   deadline, its breaker and the retry budget allow; otherwise as `NextTarget`.
 * - `Repair`: one more attempt on the same target with the validation issues (invalid output).
 * - `NextTarget`: the next eligible target.
 * - `NextLargerTarget`: the next eligible target with a larger context window.
 * - `Escalate`: the best eligible stronger target after this one (`Router.escalateFrom`), else as
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
    PolicyViolation:
      (f) =>
      (_: AttemptFacts): Row =>
        final(f),
    AmbiguousOutcome:
      (f) =>
      (_: AttemptFacts): Row => ({ ...final(f), outcome: "timeout" }),
    BudgetExceeded:
      (f) =>
      (_: AttemptFacts): Row =>
        final(f),
    DeadlineExceeded:
      (f) =>
      (_: AttemptFacts): Row =>
        final(f),
    NoEligibleRoute:
      (f) =>
      (_: AttemptFacts): Row =>
        final(f),
    StoreError:
      (f) =>
      (_: AttemptFacts): Row =>
        final(f),
    RunExhausted:
      (f) =>
      (_: AttemptFacts): Row =>
        final(f)
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
 * Maps an adapter's classified failure onto the gateway's failure union.
 *
 * @since 0.2.0
 * @category Policy
 */
export const failureOf = (target: TargetRef, e: ProviderError): Failure => {
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

/**
 * The provider's retry hint of a failure, if it carries one.
 *
 * @since 0.2.0
 * @category Policy
 */
export const retryAfterOf = (failure: Failure) =>
  failure._tag === "RateLimited" || failure._tag === "ProviderUnavailable" ? failure.retryAfter : undefined
