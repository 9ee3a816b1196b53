/**
 * The health service's contract: what one finished attempt says about its route, and the service's
 * operations. Defined here so the service's implementation (`healthService.ts`) and the public
 * `Health` module both import it without importing each other.
 */
import type { Effect, Option } from "effect"
import type { StoreError } from "../Errors.js"
import type { AttemptOutcome } from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import type * as ProviderAdapter from "../ProviderAdapter.js"
import type { RetryBudgetSnapshot, RouteHealth } from "./healthRecord.js"

// ---------------------------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------------------------

/**
 * What one finished attempt says about its route.
 *
 * @since 0.1.0
 * @category Models
 */
export interface AttemptSignal {
  readonly outcome: AttemptOutcome
  /**
   * True only for availability failures: 429, 5xx, overload, transport errors, and timeouts of the
   * target's own per-attempt limit (not the call's deadline).
   */
  readonly availabilityFailure: boolean
  readonly latencyMs: number
  readonly ttftMs: number | undefined
  readonly errorTag: string | undefined
  /** The provider's retry-after hint, if any. */
  readonly retryAfterMs?: number | undefined
  /** Rate-limit headroom the provider reported with this attempt, if any. */
  readonly rateLimit?: ProviderAdapter.RateLimitHeadroom | undefined
}

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /**
   * True when the route may not be tried now: its breaker is open, or half-open with every probe
   * slot taken (the router excludes it with `BREAKER_OPEN`).
   */
  readonly isOpen: (target: ModelTarget) => Effect.Effect<boolean, StoreError>
  /**
   * Called right before an attempt; false when the route may not be tried now (no probe slot left).
   * Fails closed with the store's error.
   */
  readonly tryAcquire: (target: ModelTarget) => Effect.Effect<boolean, StoreError>
  /**
   * Gives back what `tryAcquire` took for an attempt that will never `record` (it was cancelled).
   * Never fails: a store failure is logged and counted.
   */
  readonly release: (target: ModelTarget) => Effect.Effect<void>
  /**
   * Called after every attempt that was started (not for attempts cut by caller cancellation).
   * Never fails: a store failure is logged and counted, the health sample is kept.
   */
  readonly record: (target: ModelTarget, signal: AttemptSignal) => Effect.Effect<void>
  /** Called for every first attempt of a call (feeds the retry budget; in process, no store). */
  readonly onFirstAttempt: Effect.Effect<void>
  /** Takes one retry from the process-wide retry budget; false when exhausted (in process, no store). */
  readonly tryRetry: Effect.Effect<boolean>
  /** Health of one route (by route key, `Health.routeKey(target)`); `None` when nothing is known about it. */
  readonly snapshot: (route: string) => Effect.Effect<Option.Option<RouteHealth>, StoreError>
  /** Health of every route with a health record, least recently used first. */
  readonly snapshotAll: Effect.Effect<ReadonlyArray<RouteHealth>, StoreError>
  /** State of the retry budget. */
  readonly retryBudget: Effect.Effect<RetryBudgetSnapshot>
}
