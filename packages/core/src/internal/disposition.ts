/**
 * The vocabulary of the disposition table's engine side (`Disposition.classify`,
 * `Disposition.retryGate`, `Disposition.endOfRoute`): what the pipeline tells the policy and what
 * the policy answers. The policy itself (which failure retries, which breaker counts, how a route
 * ends) stays in `Disposition.ts`; these are its argument and result types, named by the engine
 * only.
 */
import type { Effect, Option } from "effect"
import type { Failure } from "../Errors.js"
import type { AttemptOutcome } from "../ModelResult.js"
import type { ProviderError, ProviderResponse } from "../ProviderAdapter.js"

/**
 * The provider's retry hint of a failure, if it carries one.
 */
export const retryAfterOf = (failure: Failure) =>
  failure._tag === "RateLimited" || failure._tag === "ProviderUnavailable" ? failure.retryAfter : undefined

/**
 * How one attempt that ended is recorded: the row's outcome, the failure the table decides on
 * (none: an answer, still to be validated), whether it counts against the breaker, and what is
 * known for the table.
 */
export type Classified =
  /** An answer, to be validated. */
  | (ClassifiedCommon & { readonly failure: undefined; readonly response: ProviderResponse; readonly error: undefined })
  /** A refusal (with the provider's answer), a timeout, a defect, or the adapter's classified failure. */
  | (ClassifiedCommon & {
      readonly failure: Failure
      readonly response: ProviderResponse | undefined
      readonly error: ProviderError | undefined
    })

interface ClassifiedCommon {
  readonly outcome: AttemptOutcome
  readonly breaker: boolean
  /** The provider may have processed the request (for the table: an answer counts as processed). */
  readonly possiblyProcessed: boolean
  /** The attempt's timeout came from the call's deadline, not the target's own limit. */
  readonly cutByDeadline: boolean
  /** Sent without an answer or usage of its own (its timeout, a defect): billed what was sent. */
  readonly billSent: boolean
}

/**
 * What is known when a `Retry` row is applied.
 */
export interface RetryFacts {
  /** The attempt that failed (1 for the first on this target). */
  readonly attempt: number
  readonly maxAttempts: number
  /** Epoch ms now, and the call's deadline. */
  readonly now: number
  readonly deadline: number
  /** The target's minimum attempt time, ms. */
  readonly minimumMs: number
}

/**
 * The questions the gate asks, in order, each only when the previous ones let the retry through:
 * the retry schedule's next delay (stepping it), whether the target's breaker is open now, and a
 * token of the retry budget (taking it).
 */
export interface RetryProbes {
  readonly delay: Effect.Effect<Option.Option<number>>
  readonly breakerOpen: Effect.Effect<boolean>
  readonly retryToken: Effect.Effect<boolean>
}

/**
 * The gate's answer: retry now, after `delayMs`, or not (then the call goes to its next target).
 */
export type RetryVerdict =
  | { readonly _tag: "RetryNow" }
  | { readonly _tag: "RetryAfter"; readonly delayMs: number }
  | { readonly _tag: "NoRetry"; readonly reason: "attempts" | "schedule" | "time" | "breaker" | "retry_budget" }

/**
 * What is known when a route ran out of targets (every eligible one failed, was skipped, or there
 * was no time to try).
 */
export interface RouteFacts {
  /** The last attempt's failure; none when no attempt failed. */
  readonly last: Failure | undefined
  /** A target was given up for lack of time (too little left for its minimum, a capped target's permit came too late). */
  readonly stoppedForTime: boolean
  /** Less time is left than the smallest minimum attempt time of the route's targets. */
  readonly belowMinimum: boolean
  /** Targets were skipped at attempt time (an open breaker, a provider rate limit without headroom). */
  readonly skipped: boolean
  /** The workflow has a degrade handler that has not been tried (or answered invalidly). */
  readonly degrade: boolean
  /** The router kept targets out for residency or data class. */
  readonly policyExcluded: boolean
  /** An attempt was made and the deadline has passed. */
  readonly pastDeadline: boolean
}

/**
 * How a route that ran out of targets ends.
 *
 * - `Degrade`: the workflow's degrade handler answers (an availability failure ended the route);
 *   if its answer fails the schema, the table is read again with `degrade: false`.
 * - `PolicyViolation`: an outage left only targets policy excludes (residency, data class).
 * - `NoEligibleRoute`: nothing was tried, every target was skipped.
 * - `DeadlineExceeded`: no time was left, at `stage`.
 * - `Fail`: the last failure ends the call.
 */
export type RouteEnd =
  | { readonly _tag: "Degrade" }
  | { readonly _tag: "PolicyViolation" }
  | { readonly _tag: "NoEligibleRoute" }
  | { readonly _tag: "DeadlineExceeded"; readonly stage: "attempt" | "before_attempt" }
  | { readonly _tag: "Fail"; readonly failure: Failure }
