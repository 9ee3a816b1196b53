/**
 * Route health: a circuit breaker and a sliding-window health record per route (the target ref:
 * provider + pinned model + region endpoint), and a process-wide retry budget.
 *
 * **What trips a breaker.** Only availability failures count: 429, 5xx, overloads, transport
 * errors, stream stalls and attempts that hit the target's own `perAttemptTimeout`. Never counted:
 * 400s and other invalid requests, auth / quota / model-not-found rejections, invalid output,
 * refusals, caller cancellation, and an attempt cut short by the call's own deadline. A closed
 * breaker opens after `consecutiveFailures` availability failures in a row, or when at least
 * `minimumCalls` availability outcomes in the window show a failure share of `failureRatio` or
 * more. It stays open for `coolDown`, then lets `halfOpenProbes` probes through: it closes once they
 * all succeeded and re-opens (with a fresh cool-down) on the first failed probe. While a breaker is
 * open, or half-open with every probe slot taken, the router excludes the route with
 * `BREAKER_OPEN` before any attempt.
 *
 * **Retry budget.** Retries across the process take tokens from one bucket that every first attempt
 * fills by `ratio` of a token (plus `minPerSecond` tokens per second, at most `burst` tokens held).
 * When it is empty a call goes straight to its fallback, or fails fast with its last error, and its
 * evidence says `retryBudgetExhausted`.
 *
 * **Store errors.** Breaker states live in the `BreakerStore` (module `BreakerStore`); health
 * records and the retry budget stay in process memory. When the store cannot answer:
 *
 * - admission fails closed: `isOpen` and `tryAcquire` fail with the store's `StoreError`
 *   (`store: "breaker"`), so no attempt starts on a route whose breaker cannot be read;
 * - bookkeeping after a provider answered never discards the answer: `record` and `release` do not
 *   fail. The failure is logged (route and operation only) and counted in
 *   `metrics.breakerStoreFailures`; the attempt's health sample is still kept. A probe slot whose
 *   release was lost is freed after one cool-down, like any probe that never reports;
 * - `onFirstAttempt` and `tryRetry` touch no store and cannot fail; `snapshot` and `snapshotAll`
 *   read the store and fail with its `StoreError`.
 *
 * **Layers.** `layer(config?)` needs a `BreakerStore`; `layerMemory(config?)`, `layerConfig(config)`
 * and `layerJson(json)` keep breakers in memory; `layerNoop` turns health off.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Metric, Option, Schema } from "effect"
import type { Config, ConfigError } from "effect"
import * as Store from "./BreakerStore.js"
import { ConfigProblem, GatewayConfigError } from "./Errors.js"
import type { StoreError } from "./Errors.js"
import {
  describeIssue,
  isReservedKey,
  reservedKeyDetail,
  reservedKeysOf,
  safeRecord,
  segment,
  valueFreeIssues
} from "./internal/issues.js"
import * as Breaker from "./internal/breaker.js"
import { Kind, RouteWindow } from "./internal/healthWindow.js"
import { RetryBudget } from "./internal/healthRetryBudget.js"
import type { AttemptOutcome } from "./ModelResult.js"
import type { ModelTarget } from "./ModelTarget.js"
import { maxDuration, Millis } from "./ModelTarget.js"
import * as ProviderAdapter from "./ProviderAdapter.js"

// ---------------------------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------------------------

/**
 * @deprecated Use `ProviderAdapter.RateLimitHeadroom` (the one headroom type; its reset is an
 * instant, `resetAt`, no longer `resetAfterMs`). Kept for one release.
 * @since 0.1.0
 * @category Models
 */
export type RateLimitInfo = ProviderAdapter.RateLimitHeadroom

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
// Snapshots
// ---------------------------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category Models
 */
export const BreakerStatus = Schema.Literal("closed", "open", "half_open")
/** @since 0.1.0 */
export type BreakerStatus = typeof BreakerStatus.Type

/**
 * @deprecated Use `ProviderAdapter.RateLimitHeadroom` (the same fields; a plain struct schema, no
 * longer a class). Kept for one release.
 * @since 0.1.0
 * @category Models
 */
export const RateLimitHeadroom: typeof ProviderAdapter.RateLimitHeadroom = ProviderAdapter.RateLimitHeadroom

/**
 * @deprecated Use `ProviderAdapter.RateLimitHeadroom`. Kept for one release.
 * @since 0.1.0
 * @category Models
 */
export type RateLimitHeadroom = ProviderAdapter.RateLimitHeadroom

/**
 * Status of a route ({@link statusOf}): `HEALTHY`, `DEGRADED` or `UNAVAILABLE`.
 *
 * @since 0.6.0
 * @category Models
 */
export const RouteStatus = Schema.Literal("HEALTHY", "DEGRADED", "UNAVAILABLE")
/** @since 0.6.0 */
export type RouteStatus = typeof RouteStatus.Type

/**
 * Health of one route at one instant. Rates are over every attempt recorded in the window
 * (`samples`); latency percentiles are over successful attempts, TTFT over attempts that reported
 * one. Rates and percentiles are absent when the window is empty.
 *
 * @since 0.1.0
 * @category Models
 */
export class RouteHealth extends Schema.Class<RouteHealth>("@modelgate/core/Health/RouteHealth")({
  /** The target ref. */
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
  /** {@link statusOf} the record (absent in records made before 0.6.0). */
  status: Schema.optional(RouteStatus)
}) {}

/**
 * Scores below this {@link healthScore} are `DEGRADED` (at or above, `HEALTHY`).
 *
 * @since 0.4.0
 * @category Constants
 */
export const degradedBelow = 0.8

/**
 * Rate-limit headroom (the smaller of remaining / limit for requests and tokens) or concurrency
 * headroom below which the health score is scored down.
 *
 * @since 0.4.0
 * @category Constants
 */
export const lowHeadroom = 0.1

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

/** The scaling of a headroom share: 1 at or above {@link lowHeadroom}, down to 0.5 at none. */
const headroomFactor = (share: number): number =>
  share < lowHeadroom ? Math.min(1, 0.5 + (0.5 * Math.max(0, share)) / lowHeadroom) : 1

/**
 * What {@link healthScore} and {@link statusOf} read of a health record.
 *
 * @since 0.6.0
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
 * rate-limit headroom is below {@link lowHeadroom} and not yet reset (a 429 without headers: 0.5)
 * × the same factor for a concurrency headroom below {@link lowHeadroom}.
 *
 * @since 0.6.0
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
 * - `DEGRADED`: {@link healthScore} below {@link degradedBelow} (0.8): a success rate under 80 %, a
 *   half-open breaker, rate-limit or concurrency headroom under 10 %. Scored down by its score.
 * - `HEALTHY`: otherwise.
 *
 * @since 0.6.0
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
  /** Health of one route (by target ref); `None` when nothing is known about it. */
  readonly snapshot: (route: string) => Effect.Effect<Option.Option<RouteHealth>, StoreError>
  /** Health of every route with a health record, least recently used first. */
  readonly snapshotAll: Effect.Effect<ReadonlyArray<RouteHealth>, StoreError>
  /** State of the retry budget. */
  readonly retryBudget: Effect.Effect<RetryBudgetSnapshot>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Health extends Context.Tag("@modelgate/core/Health")<Health, Service>() {}

// ---------------------------------------------------------------------------------------------
// Deprecated store aliases (module BreakerStore)
// ---------------------------------------------------------------------------------------------

/**
 * @deprecated Use `BreakerStore.BreakerState` (module `BreakerStore`). Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export const BreakerState: typeof Store.BreakerState = Store.BreakerState
/**
 * @deprecated Use `BreakerStore.BreakerState` (module `BreakerStore`). Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type BreakerState = Store.BreakerState

/**
 * @deprecated Use `BreakerStore.Service` (module `BreakerStore`). Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type BreakerStoreService = Store.Service

/**
 * @deprecated Use `BreakerStore.BreakerStore` (module `BreakerStore`). Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export const BreakerStore: typeof Store.BreakerStore = Store.BreakerStore
/**
 * @deprecated Use `BreakerStore.BreakerStore` (module `BreakerStore`). Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type BreakerStore = Store.BreakerStore

/**
 * @deprecated Use `BreakerStore.makeMemory`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export const makeBreakerStoreMemory: Effect.Effect<Store.Service> = Store.makeMemory

/**
 * @deprecated Use `BreakerStore.layerMemory`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export const layerBreakerStoreMemory: Layer.Layer<Store.BreakerStore> = Store.layerMemory

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/**
 * Breaker settings of a route.
 *
 * @since 0.1.0
 * @category Models
 */
export class BreakerSettings extends Schema.Class<BreakerSettings>("@modelgate/core/Health/BreakerSettings")({
  /** Off: the route is never excluded (its health is still recorded). */
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** Open after this many availability failures in a row; 0 turns the rule off. */
  consecutiveFailures: Schema.optionalWith(Schema.Number, { default: () => 5 }),
  /** Open when the failure share in the window reaches this (0 < r ≤ 1); 0 turns the rule off. */
  failureRatio: Schema.optionalWith(Schema.Number, { default: () => 0.5 }),
  /** The ratio rule needs at least this many availability outcomes in the window. */
  minimumCalls: Schema.optionalWith(Schema.Number, { default: () => 20 }),
  /** How long an open breaker stays open before it lets probes through. */
  coolDown: Schema.optionalWith(Millis, { default: () => Duration.seconds(30) }),
  /** Probes a half-open breaker lets through; it closes once all of them succeeded. */
  halfOpenProbes: Schema.optionalWith(Schema.Number, { default: () => 1 })
}) {}

/**
 * Per-target overrides of {@link BreakerSettings}.
 *
 * @since 0.1.0
 * @category Models
 */
export const BreakerOverrides = Schema.Struct({
  enabled: Schema.optional(Schema.Boolean),
  consecutiveFailures: Schema.optional(Schema.Number),
  failureRatio: Schema.optional(Schema.Number),
  minimumCalls: Schema.optional(Schema.Number),
  coolDown: Schema.optional(Millis),
  halfOpenProbes: Schema.optional(Schema.Number)
})
/** @since 0.1.0 */
export type BreakerOverrides = typeof BreakerOverrides.Type

/**
 * The sliding window of each route's health record (and of the breaker's ratio rule).
 *
 * @since 0.1.0
 * @category Models
 */
export class WindowSettings extends Schema.Class<WindowSettings>("@modelgate/core/Health/WindowSettings")({
  /** Most recent attempts kept per route (ring buffer size). */
  samples: Schema.optionalWith(Schema.Number, { default: () => 100 }),
  /** Attempts older than this are ignored. */
  duration: Schema.optionalWith(Millis, { default: () => Duration.seconds(60) })
}) {}

/**
 * The process-wide retry budget.
 *
 * @since 0.1.0
 * @category Models
 */
export class RetryBudgetSettings extends Schema.Class<RetryBudgetSettings>(
  "@modelgate/core/Health/RetryBudgetSettings"
)({
  /** Off: retries are limited only by each workflow's retry policy. */
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** Retries allowed per first attempt (0 ≤ r ≤ 1). */
  ratio: Schema.optionalWith(Schema.Number, { default: () => 0.2 }),
  /** Retries allowed per second whatever the traffic, so a quiet process can still retry. */
  minPerSecond: Schema.optionalWith(Schema.Number, { default: () => 1 }),
  /** Most retries banked (the bucket's size; it starts full). */
  burst: Schema.optionalWith(Schema.Number, { default: () => 10 })
}) {}

/**
 * Configuration of {@link layer} and {@link layerMemory}. Every field has a default; `targets` overrides breaker settings
 * per target ref.
 *
 * @since 0.1.0
 * @category Models
 */
export class HealthConfig extends Schema.Class<HealthConfig>("@modelgate/core/HealthConfig")({
  breaker: Schema.optionalWith(BreakerSettings, { default: () => BreakerSettings.make({}) }),
  /** Breaker overrides by target ref (`__proto__`, `constructor`, `prototype` are refused as keys). */
  targets: Schema.optionalWith(safeRecord(BreakerOverrides), { default: () => ({}) }),
  window: Schema.optionalWith(WindowSettings, { default: () => WindowSettings.make({}) }),
  retryBudget: Schema.optionalWith(RetryBudgetSettings, { default: () => RetryBudgetSettings.make({}) }),
  /**
   * Routes with a health record at most; the least recently used record is dropped beyond it
   * (its breaker state, kept in the store, is not).
   */
  maxRoutes: Schema.optionalWith(Schema.Number, { default: () => 10_000 })
}) {}

/** Breaker settings after overrides, in the units the engine uses. @internal */
interface Resolved extends Breaker.Rules {
  readonly enabled: boolean
  readonly consecutiveFailures: number
  readonly failureRatio: number
  readonly minimumCalls: number
}

const resolve = (base: BreakerSettings, o: BreakerOverrides | undefined): Resolved => ({
  enabled: o?.enabled ?? base.enabled,
  consecutiveFailures: o?.consecutiveFailures ?? base.consecutiveFailures,
  failureRatio: o?.failureRatio ?? base.failureRatio,
  minimumCalls: o?.minimumCalls ?? base.minimumCalls,
  coolDownMs: Duration.toMillis(o?.coolDown ?? base.coolDown),
  halfOpenProbes: o?.halfOpenProbes ?? base.halfOpenProbes
})

const isInt = (n: number) => Number.isInteger(n)
const maxDurationMs = Duration.toMillis(maxDuration)

/**
 * Every problem of a configuration (empty when valid). Paths start at `health`; a per-target
 * override is checked for the fields it sets and for the rules its merge with the defaults breaks.
 *
 * @since 0.1.0
 * @category Validation
 */
export const validate = (config: HealthConfig): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const add = (path: string, detail: string, target?: string) =>
    problems.push(
      new ConfigProblem({ path, reason: "INVALID_HEALTH_SETTING", detail, ...(target !== undefined ? { target } : {}) })
    )
  const samples = config.window.samples
  if (!isInt(samples) || samples < 1 || samples > 10_000) {
    add("health.window.samples", "must be an integer in [1, 10000]")
  }
  const windowMs = Duration.toMillis(config.window.duration)
  if (!(windowMs > 0) || !(windowMs <= maxDurationMs)) add("health.window.duration", "must be > 0 and at most 24 h")
  if (!isInt(config.maxRoutes) || config.maxRoutes < 1) {
    add("health.maxRoutes", "must be a positive integer")
  }
  /** `fields`: the fields an override sets (all for the defaults); a check reports when it involves one. */
  const checkBreaker = (path: string, s: Resolved, fields: ReadonlySet<string> | undefined, target?: string) => {
    const involves = (...names: ReadonlyArray<string>) => fields === undefined || names.some((n) => fields.has(n))
    if (involves("consecutiveFailures") && (!isInt(s.consecutiveFailures) || s.consecutiveFailures < 0)) {
      add(`${path}.consecutiveFailures`, "must be a non-negative integer", target)
    }
    if (involves("failureRatio") && !(s.failureRatio >= 0 && s.failureRatio <= 1)) {
      add(`${path}.failureRatio`, "must be in [0, 1]", target)
    }
    if (!isInt(s.minimumCalls) || s.minimumCalls < 1) {
      if (involves("minimumCalls")) add(`${path}.minimumCalls`, "must be a positive integer", target)
    } else if (involves("minimumCalls", "failureRatio") && s.failureRatio > 0 && s.minimumCalls > samples) {
      add(`${path}.minimumCalls`, "exceeds window.samples: the ratio rule could never trip", target)
    }
    if (involves("coolDown") && (!(s.coolDownMs > 0) || !(s.coolDownMs <= maxDurationMs))) {
      add(`${path}.coolDown`, "must be > 0 and at most 24 h", target)
    }
    if (involves("halfOpenProbes") && (!isInt(s.halfOpenProbes) || s.halfOpenProbes < 1)) {
      add(`${path}.halfOpenProbes`, "must be a positive integer", target)
    }
    if (
      involves("enabled", "consecutiveFailures", "failureRatio") &&
      s.enabled &&
      s.consecutiveFailures === 0 &&
      s.failureRatio === 0
    ) {
      add(path, "enabled but both consecutiveFailures and failureRatio are 0: it could never open", target)
    }
  }
  checkBreaker("health.breaker", resolve(config.breaker, undefined), undefined)
  for (const key of reservedKeysOf(config.targets)) {
    problems.push(
      new ConfigProblem({
        path: `health.targets[${JSON.stringify(key)}]`,
        reason: "RESERVED_KEY",
        detail: reservedKeyDetail
      })
    )
  }
  for (const [ref, o] of Object.entries(config.targets)) {
    if (isReservedKey(ref)) continue
    const name = segment(ref)
    checkBreaker(`health.targets[${JSON.stringify(name)}]`, resolve(config.breaker, o), new Set(Object.keys(o)), name)
  }
  const r = config.retryBudget
  if (!(r.ratio >= 0 && r.ratio <= 1)) add("health.retryBudget.ratio", "must be in [0, 1]")
  if (!(r.minPerSecond >= 0) || !Number.isFinite(r.minPerSecond)) {
    add("health.retryBudget.minPerSecond", "must be >= 0 and finite")
  }
  if (!(r.burst >= 1) || !Number.isFinite(r.burst)) add("health.retryBudget.burst", "must be >= 1 and finite")
  return problems
}

/**
 * Upper bound, in bytes, of the health records of one route once its window is full:
 * `window.samples` × 17 B of ring buffer (Float64 instant, Float32 latency and TTFT, Uint8 kind)
 * plus 1.5 KiB for the objects around it. Rings grow on demand from 8 samples, so a route with
 * few attempts holds far less. An open or half-open breaker adds one small store entry.
 *
 * @since 0.1.0
 * @category Utils
 */
export const maxBytesPerRoute = (config: HealthConfig): number => config.window.samples * 17 + 1536

/**
 * Upper bound, in bytes, of all health records: `maxRoutes` × {@link maxBytesPerRoute}.
 *
 * @since 0.1.0
 * @category Utils
 */
export const maxBytes = (config: HealthConfig): number => config.maxRoutes * maxBytesPerRoute(config)

const decodeConfig = Schema.decodeUnknownEither(HealthConfig, { errors: "all", onExcessProperty: "error" })

/**
 * Decodes a configuration from plain JSON and validates it; a failure lists every problem.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decode = (input: unknown): Effect.Effect<HealthConfig, GatewayConfigError> => {
  const decoded = decodeConfig(input)
  if (decoded._tag === "Left") {
    // A field inside a Schema class is reported twice (encoded and class side) and its parent once
    // more: keep the first report of each path, and only the deepest paths.
    const issues = valueFreeIssues(decoded.left).map((issue) => ({
      path: ["health", ...issue.path.map(segment)].join("."),
      reason: issue.kind === "reserved_key" ? "RESERVED_KEY" : "INVALID_VALUE",
      detail: describeIssue(issue)
    }))
    const seen = new Set<string>()
    const problems = issues.filter((issue) => {
      if (seen.has(issue.path)) return false
      seen.add(issue.path)
      return !issues.some((other) => other.path.startsWith(`${issue.path}.`))
    })
    return Effect.fail(
      new GatewayConfigError({
        problems: problems.map((p) => new ConfigProblem({ path: p.path, reason: p.reason, detail: p.detail }))
      })
    )
  }
  const problems = validate(decoded.right)
  return problems.length > 0 ? Effect.fail(new GatewayConfigError({ problems })) : Effect.succeed(decoded.right)
}

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

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
  breakerTransitions: Metric.counter("modelgate.breaker.transitions", {
    description: "Circuit breaker transitions per route",
    incremental: true
  }),
  retryBudgetRejections: Metric.counter("modelgate.retry_budget.rejections", {
    description: "Retries refused because the process-wide retry budget was exhausted",
    incremental: true
  }),
  breakerStoreFailures: Metric.counter("modelgate.breaker.store_failures", {
    description: "Breaker bookkeeping (record or release) the breaker store could not do",
    incremental: true
  })
} as const

const gaugeValue = (s: Breaker.Status): number => (s === "closed" ? 0 : s === "half_open" ? 1 : 2)

// ---------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------

type TripReason = "consecutive_failures" | "failure_ratio" | "probe_failed"

interface Transition {
  readonly from: Breaker.Status
  readonly to: Breaker.Status
  /** The instant the transition took effect (a cool-down ends before anyone notices). */
  readonly at: number
}

/** The transitions between `before` and `after`, with an open breaker's cool-down end in between. */
const transitionsOf = (
  before: Store.BreakerState | undefined,
  after: Store.BreakerState | undefined,
  now: number,
  rules: Breaker.Rules
): ReadonlyArray<Transition> => {
  const out: Array<Transition> = []
  const seen = Breaker.view(before, now, rules)
  const from = Breaker.statusOf(before)
  const mid = Breaker.statusOf(seen)
  if (from !== mid) out.push({ from, to: mid, at: seen!.since })
  const to = Breaker.statusOf(after)
  if (mid !== to) out.push({ from: mid, to, at: now })
  return out
}

/** Bookkeeping the store could not do: logged with route and operation only, and counted. */
const storeFailed = (route: string, operation: "record" | "release") =>
  Effect.zipRight(
    Metric.increment(Metric.tagged(metrics.breakerStoreFailures, "operation", operation)),
    Effect.annotateLogs(Effect.logWarning("breaker store failed; breaker bookkeeping skipped"), { route, operation })
  )

/**
 * Builds the service with breaker states in the `BreakerStore` from the context. Fails with a
 * `GatewayConfigError` listing every invalid setting.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (config: HealthConfig = HealthConfig.make({})) =>
  Effect.gen(function* () {
    const problems = validate(config)
    if (problems.length > 0) return yield* new GatewayConfigError({ problems })
    const store = yield* Store.BreakerStore
    const windowMs = Duration.toMillis(config.window.duration)
    const samples = config.window.samples
    const defaults = resolve(config.breaker, undefined)
    const overridden = new Map(Object.entries(config.targets).map(([ref, o]) => [ref, resolve(config.breaker, o)]))
    const settingsFor = (ref: string): Resolved => overridden.get(ref) ?? defaults
    const rb = config.retryBudget
    const budget = new RetryBudget(rb.ratio, rb.minPerSecond, rb.burst)

    // Insertion order is recency order: a record moves its route to the end.
    const windows = new Map<string, RouteWindow>()
    const touch = (ref: string): RouteWindow => {
      let w = windows.get(ref)
      if (w !== undefined) {
        windows.delete(ref)
      } else {
        w = new RouteWindow(samples)
        if (windows.size >= config.maxRoutes) {
          const oldest = windows.keys().next()
          if (oldest.done !== true) windows.delete(oldest.value)
        }
      }
      windows.set(ref, w)
      return w
    }

    const announce = (
      route: string,
      transitions: ReadonlyArray<Transition>,
      reason: TripReason | undefined,
      rules: Resolved
    ) =>
      Effect.forEach(
        transitions,
        (t) => {
          const annotations = {
            route,
            from: t.from,
            to: t.to,
            at: t.at,
            ...(t.to === "open" ? { reason: reason ?? "probe_failed", coolDownMs: rules.coolDownMs } : {}),
            ...(t.to === "half_open" ? { probes: rules.halfOpenProbes } : {})
          }
          const log =
            t.to === "open"
              ? Effect.logWarning("circuit breaker opened")
              : t.to === "half_open"
                ? Effect.logInfo("circuit breaker half-open")
                : Effect.logInfo("circuit breaker closed")
          if (t.to === "closed") {
            const w = windows.get(route)
            if (w !== undefined) {
              w.countFrom = t.at
              w.consecutiveFailures = 0
            }
          }
          return Effect.all(
            [
              log.pipe(Effect.annotateLogs(annotations)),
              Metric.set(Metric.tagged(metrics.breakerState, "route", route), gaugeValue(t.to)),
              Metric.increment(
                Metric.tagged(
                  Metric.tagged(Metric.tagged(metrics.breakerTransitions, "route", route), "from", t.from),
                  "to",
                  t.to
                )
              )
            ],
            { discard: true }
          )
        },
        { discard: true }
      )

    /** Applies `f` in the store and announces the transitions it made. */
    const transit = <A>(
      route: string,
      now: number,
      rules: Resolved,
      f: (s: Store.BreakerState | undefined) => readonly [A, Store.BreakerState | undefined],
      reason?: TripReason
    ): Effect.Effect<A, StoreError> =>
      Effect.flatMap(
        store.modify(route, (before) => {
          const [a, after] = f(before)
          return [{ a, transitions: transitionsOf(before, after, now, rules) }, after] as const
        }),
        ({ a, transitions }) =>
          transitions.length === 0 ? Effect.succeed(a) : Effect.as(announce(route, transitions, reason, rules), a)
      )

    const tripReason = (w: RouteWindow, now: number, s: Resolved): TripReason | undefined => {
      if (s.consecutiveFailures > 0 && w.consecutiveFailures >= s.consecutiveFailures) return "consecutive_failures"
      if (s.failureRatio > 0) {
        const { calls, failures } = w.availability(now, windowMs)
        if (calls >= s.minimumCalls && failures / calls >= s.failureRatio) return "failure_ratio"
      }
      return undefined
    }

    const kindOf = (signal: AttemptSignal): Kind => {
      if (signal.availabilityFailure) return signal.outcome === "timeout" ? Kind.timeout : Kind.failure
      return signal.outcome === "success" ? Kind.success : Kind.neutral
    }

    const isOpen = (target: ModelTarget): Effect.Effect<boolean, StoreError> => {
      const rules = settingsFor(target.ref)
      if (!rules.enabled) return Effect.succeed(false)
      return Effect.flatMap(store.get(target.ref), (s) =>
        s === undefined
          ? Effect.succeed(false)
          : Effect.map(Clock.currentTimeMillis, (now) => !Breaker.admits(s, now, rules))
      )
    }

    const tryAcquire = (target: ModelTarget): Effect.Effect<boolean, StoreError> => {
      const rules = settingsFor(target.ref)
      if (!rules.enabled) return Effect.succeed(true)
      return Effect.flatMap(store.get(target.ref), (s) =>
        s === undefined
          ? Effect.succeed(true)
          : Effect.flatMap(Clock.currentTimeMillis, (now) =>
              transit(target.ref, now, rules, (cur) => Breaker.acquire(cur, now, rules))
            )
      )
    }

    const release = (target: ModelTarget): Effect.Effect<void> => {
      const rules = settingsFor(target.ref)
      if (!rules.enabled) return Effect.void
      return Effect.catchAll(
        Effect.flatMap(store.get(target.ref), (s) =>
          s === undefined
            ? Effect.void
            : Effect.flatMap(Clock.currentTimeMillis, (now) =>
                transit(target.ref, now, rules, (cur) => [undefined, Breaker.release(cur, now, rules)] as const)
              )
        ),
        () => storeFailed(target.ref, "release")
      )
    }

    const record = (target: ModelTarget, signal: AttemptSignal): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const ref = target.ref
        const kind = kindOf(signal)
        const w = touch(ref)
        w.add(now, kind, signal.latencyMs, signal.ttftMs)
        if (kind !== Kind.success) {
          w.lastErrorClass = kind === Kind.neutral && signal.outcome === "timeout" ? "deadline" : signal.outcome
          w.lastErrorTag = signal.errorTag
          w.lastErrorAt = now
        }
        const rl = signal.rateLimit
        if (rl !== undefined) {
          w.headroom = {
            remainingRequests: rl.remainingRequests,
            limitRequests: rl.limitRequests,
            remainingTokens: rl.remainingTokens,
            limitTokens: rl.limitTokens,
            resetAt: rl.resetAt,
            reportedAt: rl.reportedAt
          }
        } else if (signal.outcome === "rate_limited") {
          w.headroom = {
            remainingRequests: 0,
            limitRequests: w.headroom?.limitRequests,
            remainingTokens: w.headroom?.remainingTokens,
            limitTokens: w.headroom?.limitTokens,
            resetAt: signal.retryAfterMs !== undefined ? now + signal.retryAfterMs : undefined,
            reportedAt: now
          }
        }
        const rules = settingsFor(ref)
        if (!rules.enabled) return Effect.void
        const result: Breaker.Result = kind === Kind.success ? "success" : kind === Kind.neutral ? "neutral" : "failure"
        const reason = result === "failure" ? tripReason(w, now, rules) : undefined
        return Effect.catchAll(
          Effect.flatMap(store.get(ref), (s) =>
            // The hot path: a closed breaker that stays closed only reads the store.
            s === undefined && reason === undefined
              ? Effect.void
              : transit(
                  ref,
                  now,
                  rules,
                  (cur) => [undefined, Breaker.onResult(cur, now, rules, result, reason !== undefined)],
                  reason
                )
          ),
          () => storeFailed(ref, "record")
        )
      })

    const snapshotOf = (route: string, now: number, s: Store.BreakerState | undefined): RouteHealth | undefined => {
      const w = windows.get(route)
      if (w === undefined && s === undefined) return undefined
      const rules = settingsFor(route)
      const v = Breaker.view(s, now, rules)
      const st = w?.stats(now, windowMs)
      const n = st?.samples ?? 0
      const rate = (k: number) => (n === 0 ? undefined : k / n)
      const breaker = Breaker.statusOf(v)
      const successRate = rate(st?.successes ?? 0)
      const rateLimit = w?.headroom
      const status = statusOf({ at: now, breaker, samples: n, successRate, rateLimit })
      return new RouteHealth(
        {
          route,
          at: now,
          breaker,
          breakerSince: v?.since,
          probeAt: v?.status === "open" ? v.since + rules.coolDownMs : undefined,
          consecutiveFailures: w?.consecutiveFailures ?? 0,
          samples: n,
          successRate,
          failureRate: rate((st?.failures ?? 0) + (st?.timeouts ?? 0)),
          timeoutRate: rate(st?.timeouts ?? 0),
          latencyP50Ms: st?.latencyP50,
          latencyP95Ms: st?.latencyP95,
          ttftP50Ms: st?.ttftP50,
          ttftP95Ms: st?.ttftP95,
          lastErrorClass: w?.lastErrorClass,
          lastErrorTag: w?.lastErrorTag,
          lastErrorAt: w?.lastErrorAt,
          lastAttemptAt: w?.lastAt,
          rateLimit,
          latencyP95SmoothedMs: w?.latencyP95Smoothed,
          ttftP95SmoothedMs: w?.ttftP95Smoothed,
          status
        },
        { disableValidation: true }
      )
    }

    return Health.of({
      isOpen,
      tryAcquire,
      release,
      record,
      onFirstAttempt: Effect.map(Clock.currentTimeMillis, (now) => budget.deposit(now)),
      tryRetry: rb.enabled
        ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
            budget.withdraw(now)
              ? Effect.succeed(true)
              : Effect.as(Metric.increment(metrics.retryBudgetRejections), false)
          )
        : Effect.succeed(true),
      snapshot: (route) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.map(store.get(route), (s) => Option.fromNullable(snapshotOf(route, now, s)))
        ),
      snapshotAll: Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.forEach([...windows.keys()], (route) => Effect.map(store.get(route), (s) => snapshotOf(route, now, s)!))
      ),
      retryBudget: Effect.map(
        Clock.currentTimeMillis,
        (now) =>
          new RetryBudgetSnapshot({
            enabled: rb.enabled,
            tokens: budget.tokens(now),
            capacity: budget.capacity,
            firstAttempts: budget.firstAttempts,
            retriesGranted: budget.granted,
            retriesRejected: budget.rejected
          })
      )
    })
  })

/**
 * Breakers, health records and the retry budget, with breaker states in the `BreakerStore` from the
 * context (e.g. a shared store, so that every process sees the same breakers). Fails with a
 * `GatewayConfigError` listing every invalid setting, so the application does not start.
 *
 * Before 0.2.0 `layer` kept breakers in memory: that is now {@link layerMemory}.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (config?: HealthConfig): Layer.Layer<Health, GatewayConfigError, Store.BreakerStore> =>
  Layer.effect(Health, make(config))

/**
 * Like {@link layer}, with breaker states in memory (one process).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory = (config?: HealthConfig): Layer.Layer<Health, GatewayConfigError> =>
  Layer.provide(layer(config), Store.layerMemory)

/**
 * Like {@link layerMemory}, with the configuration read from `Config` (e.g.
 * `Config.succeed(HealthConfig.make({}))`, or a `Config` that decodes one).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config<HealthConfig>
): Layer.Layer<Health, GatewayConfigError | ConfigError.ConfigError> =>
  Layer.provide(Layer.effect(Health, Effect.flatMap(config, make)), Store.layerMemory)

/**
 * @deprecated Use {@link layer} (it needs the `BreakerStore` now). Kept for one release.
 * @since 0.1.0
 * @category Layers
 */
export const layerStore: (config?: HealthConfig) => Layer.Layer<Health, GatewayConfigError, Store.BreakerStore> = layer

/**
 * Decodes the configuration from plain JSON first (all problems listed with their paths); breakers
 * in memory.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerJson = (json: unknown): Layer.Layer<Health, GatewayConfigError> =>
  Layer.provide(Layer.effect(Health, Effect.flatMap(decode(json), make)), Store.layerMemory)

/**
 * The settled "closed" answer of {@link layerNoop}'s `isOpen` (one shared value: the router reads
 * it by identity).
 *
 * @since 0.6.0
 * @category Constants
 */
export const noBreaker: Effect.Effect<boolean> = Effect.succeed(false)

/**
 * The settled "no health record" answer of {@link layerNoop}'s `snapshot` (one shared value: the
 * router skips it by identity).
 *
 * @since 0.6.0
 * @category Constants
 */
export const noRecord: Effect.Effect<Option.Option<RouteHealth>> = Effect.succeed(Option.none())

/**
 * {@link layerNoop}'s `snapshot`: no record for any route (the router skips asking per target).
 *
 * @since 0.6.0
 * @category Constants
 */
export const noSnapshot = (_route: string): Effect.Effect<Option.Option<RouteHealth>> => noRecord

/**
 * Breakers always closed, retry budget unlimited, nothing recorded.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerNoop: Layer.Layer<Health> = Layer.succeed(
  Health,
  Health.of({
    // Shared settled answers: the router reads them per target without allocating.
    isOpen: () => noBreaker,
    tryAcquire: () => Effect.succeed(true),
    release: () => Effect.void,
    record: () => Effect.void,
    onFirstAttempt: Effect.void,
    tryRetry: Effect.succeed(true),
    snapshot: noSnapshot,
    snapshotAll: Effect.succeed([]),
    retryBudget: Effect.succeed(
      new RetryBudgetSnapshot({
        enabled: false,
        tokens: Number.POSITIVE_INFINITY,
        capacity: Number.POSITIVE_INFINITY,
        firstAttempts: 0,
        retriesGranted: 0,
        retriesRejected: 0
      })
    )
  })
)
