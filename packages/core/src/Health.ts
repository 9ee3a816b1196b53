/**
 * Route health as the engine sees it: whether a route's breaker lets calls through, what each
 * attempt taught us, and a process-wide retry budget.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import type { AttemptOutcome } from "./ModelResult.js"
import type { ModelTarget } from "./ModelTarget.js"

/**
 * What one finished attempt says about its route.
 *
 * @since 0.1.0
 * @category Models
 */
export interface AttemptSignal {
  readonly outcome: AttemptOutcome
  /** True only for availability failures: 429, 5xx, overload, provider timeouts, transport errors. */
  readonly availabilityFailure: boolean
  readonly latencyMs: number
  readonly ttftMs: number | undefined
  readonly errorTag: string | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** True when the route's breaker is open now (the router excludes it with `BREAKER_OPEN`). */
  readonly isOpen: (target: ModelTarget) => Effect.Effect<boolean>
  /** Called right before an attempt; false when the route may not be tried now (no probe slot left). */
  readonly tryAcquire: (target: ModelTarget) => Effect.Effect<boolean>
  /** Called after every attempt that was started (not for attempts cut by caller cancellation). */
  readonly record: (target: ModelTarget, signal: AttemptSignal) => Effect.Effect<void>
  /** Called for every first attempt of a call (feeds the retry budget). */
  readonly onFirstAttempt: Effect.Effect<void>
  /** Takes one retry from the process-wide retry budget; false when exhausted. */
  readonly tryRetry: Effect.Effect<boolean>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Health extends Context.Tag("@modelgate/core/Health")<Health, Service>() {}

/**
 * Breakers always closed, retry budget unlimited.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerNoop: Layer.Layer<Health> = Layer.succeed(
  Health,
  Health.of({
    isOpen: () => Effect.succeed(false),
    tryAcquire: () => Effect.succeed(true),
    record: () => Effect.void,
    onFirstAttempt: Effect.void,
    tryRetry: Effect.succeed(true)
  })
)
