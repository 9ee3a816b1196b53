/**
 * The stored state of a breaker (the `BreakerStore` entry), apart from the store itself so that the
 * breaker's pure functions and the private fast path read it without importing the store module.
 * Re-exported by module `BreakerStore`, which documents it.
 */
import { Schema } from "effect"

/**
 * Stored state of a breaker that is open or half-open (a closed breaker has no entry).
 *
 * @since 0.2.0
 * @category Models
 */
export const BreakerState = Schema.Struct({
  status: Schema.Literal("open", "half_open"),
  /** Instant (epoch ms) it opened, or its cool-down ended. */
  since: Schema.Number,
  /** Probes granted and not yet reported. */
  probes: Schema.Number,
  probeSuccesses: Schema.Number,
  /** Instant the last probe was granted. */
  lastProbeAt: Schema.Number
})
/** @since 0.2.0 */
export type BreakerState = typeof BreakerState.Type
