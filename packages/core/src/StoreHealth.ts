/**
 * Health of the stores behind the seams (`BudgetStore`, `PermitStore`, `BreakerStore`,
 * `ToolLedgerStore`): metrics a store implementation updates, so that an operator sees a shared
 * store (Redis) that cannot answer before the calls it refuses pile up.
 *
 * - `modelgate.store.errors` (counter, tags `store` and `operation`): operations the store could not
 *   do (unreachable, timed out, unexpected reply).
 * - `modelgate.store.healthy` (gauge, tag `store`): 1 while the store's last operation succeeded, 0
 *   after a failure. Updated only when it changes, so a healthy store costs nothing per call.
 *
 * The memory stores never fail and never update these.
 *
 * @since 0.2.0
 */
import { Effect, Metric } from "effect"
import type { StoreError } from "./Errors.js"

/**
 * @since 0.2.0
 * @category Metrics
 */
export const metrics = {
  errors: Metric.counter("modelgate.store.errors", {
    description: "Store operations that failed (unreachable, timed out or an unexpected reply)",
    incremental: true
  }),
  healthy: Metric.gauge("modelgate.store.healthy", {
    description: "1 while the store's last operation succeeded, 0 after a failure"
  })
}

/**
 * The health of one store as its operations report it; updates {@link metrics}. One per store
 * and client.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Tracker {
  /** Whether the last operation succeeded (`true` before any). */
  readonly healthy: () => boolean
  /** An operation succeeded: the gauge goes to 1 if it was 0. */
  readonly succeeded: Effect.Effect<void>
  /** An operation failed: counted, and the gauge goes to 0 if it was 1. */
  readonly failed: (operation: string) => Effect.Effect<void>
}

/**
 * @since 0.2.0
 * @category Constructors
 */
export const tracker = (store: StoreError["store"]): Tracker => {
  // `undefined` until the first operation: the gauge is set by the first report, whatever it is.
  let healthy: boolean | undefined
  const gauge = Metric.tagged(metrics.healthy, "store", store)
  const errors = Metric.tagged(metrics.errors, "store", store)
  const up = Metric.set(gauge, 1)
  return {
    healthy: () => healthy !== false,
    succeeded: Effect.suspend(() => {
      if (healthy === true) return Effect.void
      healthy = true
      return up
    }),
    failed: (operation) =>
      Effect.suspend(() => {
        const counted = Metric.increment(Metric.tagged(errors, "operation", operation))
        if (healthy === false) return counted
        healthy = false
        return Effect.zipRight(counted, Metric.set(gauge, 0))
      })
  }
}
