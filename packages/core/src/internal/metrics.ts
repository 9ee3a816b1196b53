/**
 * The metric objects of the canary controller, quality signals, shadow traffic and the response
 * cache (their names are listed in `Telemetry`); internal: users read them by name from an exporter.
 */
import * as Metric from "effect/Metric"
import { counter } from "./counter.js"

/**
 * Metrics of the canary controller.
 */
export const canaryMetrics = {
  /** Changes of canaries' shares, by workflow, canary id and action. */
  changes: Metric.counter("modelgate.canary.changes", {
    description: "Changes of a canary's share (started, ramped, rolled back, completed)",
    incremental: true
  })
} as const

/**
 * Metrics of quality signals.
 */
export const qualityMetrics = {
  /** Changes of a target's quality standing on a workflow, by workflow, target and level. */
  standing: Metric.counter("modelgate.quality.standing_changes", {
    description: "Changes of a target's quality standing on a workflow (ok, demoted, excluded)",
    incremental: true
  })
} as const

/**
 * Metrics of shadow traffic.
 */
export const shadowMetrics = {
  /** Shadow calls made, by workflow, candidate and outcome. */
  calls: Metric.counter("modelgate.shadow.calls", { description: "Shadow calls made", incremental: true }),
  /**
   * Sampled calls not shadowed, by workflow, candidate and reason: `side_effecting_tools`, `policy`,
   * `load` (the workflow's `maxConcurrent`), `concurrency` (no permit of the candidate's cap free at
   * once), `rate_limit` (no headroom in the candidate's provider rate limit), `budget`.
   */
  dropped: Metric.counter("modelgate.shadow.dropped", {
    description:
      "Sampled calls not shadowed (side-effecting tools, policy, load, candidate concurrency cap, rate limit, budget)",
    incremental: true
  })
} as const

/**
 * The cache's metrics, labelled by `workflow` and `outcome` only (bounded: names from the
 * configuration and closed sets; never a key or content).
 */
export const cacheMetrics = {
  /** Lookups by outcome: `hit`, `miss`, `error` (fail-open), `refresh`, `bypass`. */
  lookups: counter("modelgate.cache.lookups", "Response cache lookups by outcome (hit, miss, error, refresh, bypass)"),
  /** Encoded bytes, `outcome` `served` (hits) or `stored`. */
  bytes: counter("modelgate.cache.bytes", "Response cache bytes served and stored")
} as const
