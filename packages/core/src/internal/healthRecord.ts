/**
 * What `Health` reports: the record of a route (`RouteHealth`), its score and status, the retry
 * budget's state, and the metrics. Re-exported by module `Health`, which documents them.
 */
import { Metric, Schema } from "effect"
import * as ProviderAdapter from "../ProviderAdapter.js"
import type * as Breaker from "./breaker.js"
import { counter } from "./counter.js"

/**
 * @since 0.1.0
 * @category Models
 */
export const BreakerStatus = Schema.Literal("closed", "open", "half_open")
/** @since 0.1.0 */
export type BreakerStatus = typeof BreakerStatus.Type

/**
 * Status of a route (`statusOf`): `HEALTHY`, `DEGRADED` or `UNAVAILABLE`.
 *
 * @since 0.2.0
 * @category Models
 */
export const RouteStatus = Schema.Literal("HEALTHY", "DEGRADED", "UNAVAILABLE")
/** @since 0.2.0 */
export type RouteStatus = typeof RouteStatus.Type

/**
 * The key of a target's route health (breaker, health record, metrics and logs `route` label,
 * breaker store key): its ref and its pinned model version, `<ref>#<model>`. Two versions of one
 * ref (a new model version on canary and the version it replaces) have their own breakers and
 * records, so a failing new version does not take the running version's health.
 *
 * @since 0.2.0
 * @category Routing
 */
export const routeKey = (target: { readonly ref: string; readonly model: string }): string =>
  `${target.ref}#${target.model}`

/**
 * Health of one route at one instant. Rates are over every attempt recorded in the window
 * (`samples`); latency percentiles are over successful attempts, TTFT over attempts that reported
 * one. Rates and percentiles are absent when the window is empty.
 *
 * @since 0.1.0
 * @category Models
 */
export class RouteHealth extends Schema.Class<RouteHealth>("@modelgate/core/Health/RouteHealth")({
  /** The route key: the target's ref and model version ({@link routeKey}). */
  route: Schema.String,
  /** Instant (epoch ms) of this snapshot. */
  at: Schema.Number,
  breaker: BreakerStatus,
  /** Instant the breaker entered its current open / half-open state. */
  breakerSince: Schema.optional(Schema.Number),
  /** For an open breaker: the instant it lets a probe through. */
  probeAt: Schema.optional(Schema.Number),
  /** Availability failures since the last success. */
  consecutiveFailures: Schema.Number,
  /** Attempts recorded in the window. */
  samples: Schema.Number,
  successRate: Schema.optional(Schema.Number),
  /** Share of availability failures (timeouts included). */
  failureRate: Schema.optional(Schema.Number),
  timeoutRate: Schema.optional(Schema.Number),
  latencyP50Ms: Schema.optional(Schema.Number),
  latencyP95Ms: Schema.optional(Schema.Number),
  ttftP50Ms: Schema.optional(Schema.Number),
  ttftP95Ms: Schema.optional(Schema.Number),
  /**
   * How the last failed attempt ended: an attempt outcome (`rate_limited`, `unavailable`, `timeout`,
   * `invalid_request`, …) or `deadline` for an attempt cut by the call's deadline.
   */
  lastErrorClass: Schema.optional(Schema.String),
  lastErrorTag: Schema.optional(Schema.String),
  lastErrorAt: Schema.optional(Schema.Number),
  lastAttemptAt: Schema.optional(Schema.Number),
  /** The last rate-limit headroom reported for the route (a 429 without headers: none left). */
  rateLimit: Schema.optional(ProviderAdapter.RateLimitHeadroom),
  /**
   * Smoothed p95 latency of successes, ms: an exponentially weighted mean plus two mean deviations
   * over every success recorded (not only the window), so that noisy samples move it slowly.
   */
  latencyP95SmoothedMs: Schema.optional(Schema.Number),
  /** Smoothed p95 time to first token, ms (the same estimate). */
  ttftP95SmoothedMs: Schema.optional(Schema.Number),
  /**
   * Free share (0..1) of the target's concurrency cap (`Concurrency` `targets`); absent for an
   * uncapped target. The health service does not know it: the router adds it to the record it
   * scores.
   */
  concurrencyHeadroom: Schema.optional(Schema.Number),
  /** `statusOf` the record (absent in records made before 0.6.0). */
  status: Schema.optional(RouteStatus)
}) {}

/**
 * Scores below this {@link healthScore} are `DEGRADED` (at or above, `HEALTHY`).
 *
 * @since 0.2.0
 * @category Constants
 */
export const degradedBelow = 0.8

/**
 * Rate-limit headroom (the smaller of remaining / limit for requests and tokens) or concurrency
 * headroom below which the health score is scored down.
 *
 * @since 0.2.0
 * @category Constants
 */
export const lowHeadroom = 0.1

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

/** The scaling of a headroom share: 1 at or above {@link lowHeadroom}, down to 0.5 at none. */
const headroomFactor = (share: number): number =>
  share < lowHeadroom ? Math.min(1, 0.5 + (0.5 * Math.max(0, share)) / lowHeadroom) : 1

/**
 * What {@link healthScore} and `statusOf` read of a health record.
 *
 * @since 0.2.0
 * @category Models
 */
export type HealthFacts = Pick<
  RouteHealth,
  "at" | "breaker" | "samples" | "successRate" | "rateLimit" | "concurrencyHeadroom"
>

/** Whether the record's rate-limit headroom is exhausted until a reset still to come. */
const rateLimitExhausted = (record: HealthFacts): boolean => {
  const limits = record.rateLimit
  return (
    limits !== undefined &&
    limits.resetAt !== undefined &&
    limits.resetAt > record.at &&
    (limits.remainingRequests === 0 || limits.remainingTokens === 0)
  )
}

/**
 * The health score of a route (0..1, 4 decimals): `successRate` in the window (1 without samples)
 * × 0.5 for a half-open breaker × `min(1, 0.5 + 0.5·headroom / lowHeadroom)` while a reported
 * rate-limit headroom is below 10 % (`lowHeadroom`) and not yet reset (a 429 without headers: 0.5)
 * × the same factor for a concurrency headroom below 10 %.
 *
 * @since 0.2.0
 * @category Routing
 */
export const healthScore = (record: HealthFacts): number => {
  let health = record.samples > 0 ? (record.successRate ?? 1) : 1
  if (record.breaker === "half_open") health *= 0.5
  const limits = record.rateLimit
  if (limits !== undefined && (limits.resetAt === undefined || limits.resetAt > record.at)) {
    let headroom = 1
    const share = (remaining: number | undefined, limit: number | undefined) => {
      if (remaining === undefined) return
      const s = limit === undefined || limit <= 0 ? (remaining <= 0 ? 0 : 1) : Math.max(0, remaining / limit)
      headroom = Math.min(headroom, s)
    }
    share(limits.remainingRequests, limits.limitRequests)
    share(limits.remainingTokens, limits.limitTokens)
    health *= headroomFactor(headroom)
  }
  if (record.concurrencyHeadroom !== undefined) health *= headroomFactor(record.concurrencyHeadroom)
  return round4(Math.max(0, Math.min(1, health)))
}

/**
 * The status of a route:
 *
 * - `UNAVAILABLE`: the breaker is open, or the provider said its rate limit (requests or tokens)
 *   is used up until a reset still to come. Scored selection excludes it (`UNHEALTHY`).
 * - `DEGRADED`: {@link healthScore} below 0.8 (`degradedBelow`): a success rate under 80 %, a
 *   half-open breaker, rate-limit or concurrency headroom under 10 %. Scored down by its score.
 * - `HEALTHY`: otherwise.
 *
 * @since 0.2.0
 * @category Routing
 */
export const statusOf = (record: HealthFacts): RouteStatus =>
  record.breaker === "open" || rateLimitExhausted(record)
    ? "UNAVAILABLE"
    : healthScore(record) < degradedBelow
      ? "DEGRADED"
      : "HEALTHY"

/**
 * State of the process-wide retry budget.
 *
 * @since 0.1.0
 * @category Models
 */
export class RetryBudgetSnapshot extends Schema.Class<RetryBudgetSnapshot>(
  "@modelgate/core/Health/RetryBudgetSnapshot"
)({
  enabled: Schema.Boolean,
  tokens: Schema.Number,
  capacity: Schema.Number,
  firstAttempts: Schema.Number,
  retriesGranted: Schema.Number,
  retriesRejected: Schema.Number
}) {}

/**
 * Metrics of route health (names follow the scheme of module `Telemetry`). `breakerState`
 * (`modelgate.breaker.state`, tagged `route`) is 0 closed, 1 half-open, 2 open and is set on every
 * transition; `breakerTransitions` (`modelgate.breaker.transitions`) is tagged `route`, `from`, `to`;
 * `retryBudgetRejections` (`modelgate.retry_budget.rejections`) counts retries the retry budget
 * refused; `breakerStoreFailures` (`modelgate.breaker.store_failures`, tagged `operation`: `record`
 * or `release`) counts bookkeeping the breaker store could not do.
 *
 * Before 0.2.0 the first three were named `modelgate_breaker_state`,
 * `modelgate_breaker_transitions_total` and `modelgate_retry_budget_rejections_total`.
 *
 * @since 0.1.0
 * @category Metrics
 */
export const metrics = {
  breakerState: Metric.gauge("modelgate.breaker.state", {
    description: "Circuit breaker state per route: 0 closed, 1 half-open, 2 open"
  }),
  breakerTransitions: counter("modelgate.breaker.transitions", "Circuit breaker transitions per route"),
  retryBudgetRejections: counter(
    "modelgate.retry_budget.rejections",
    "Retries refused because the process-wide retry budget was exhausted"
  ),
  breakerStoreFailures: counter(
    "modelgate.breaker.store_failures",
    "Breaker bookkeeping (record or release) the breaker store could not do"
  )
} as const

/** The breaker state gauge's value of a status. */
export const gaugeValue = (s: Breaker.Status): number => (s === "closed" ? 0 : s === "half_open" ? 1 : 2)
