/**
 * The configuration of `Health`: breaker settings (with per-target overrides), the health window,
 * the retry budget, their validation and their decoding from JSON. Re-exported by module `Health`.
 */
import { Duration, Effect, Schema } from "effect"
import { ConfigProblem, GatewayConfigError } from "../Errors.js"
import { maxDuration, Millis } from "./fieldSchemas.js"
import type * as Breaker from "./breaker.js"
import {
  describeIssue,
  isReservedKey,
  reservedKeyDetail,
  reservedKeysOf,
  safeRecord,
  segment,
  valueFreeIssues
} from "./issues.js"

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
 * Configuration of `Health.layer` and `Health.layerMemory`. Every field has a default; `targets` overrides breaker settings
 * per target ref.
 *
 * @since 0.1.0
 * @category Models
 */
export class HealthConfig extends Schema.Class<HealthConfig>("@modelgate/core/HealthConfig")({
  breaker: Schema.optionalWith(BreakerSettings, { default: () => BreakerSettings.make({}) }),
  /**
   * Breaker overrides by target ref, for every model version of it (each version still has its own
   * breaker); `__proto__`, `constructor`, `prototype` are refused as keys.
   */
  targets: Schema.optionalWith(safeRecord(BreakerOverrides), { default: () => ({}) }),
  window: Schema.optionalWith(WindowSettings, { default: () => WindowSettings.make({}) }),
  retryBudget: Schema.optionalWith(RetryBudgetSettings, { default: () => RetryBudgetSettings.make({}) }),
  /**
   * Routes with a health record at most; the least recently used record is dropped beyond it
   * (its breaker state, kept in the store, is not).
   */
  maxRoutes: Schema.optionalWith(Schema.Number, { default: () => 10_000 })
}) {}

/** Breaker settings after overrides, in the units the engine uses. */
export interface Resolved extends Breaker.Rules {
  readonly enabled: boolean
  readonly consecutiveFailures: number
  readonly failureRatio: number
  readonly minimumCalls: number
}

export const resolve = (base: BreakerSettings, o: BreakerOverrides | undefined): Resolved => ({
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
