/**
 * Route health: a circuit breaker and a sliding-window health record per route (the target ref —
 * provider, model and region endpoint — and its pinned model version: {@link routeKey}, so two
 * versions of one ref never share a breaker), and a process-wide retry budget.
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
 * **Layers.** `layer(config?)` and `layerConfig(config)` need a `BreakerStore`; `layerMemory(config?)`
 * and `layerJson(json)` keep breakers in memory; `layerOff` turns health off.
 *
 * @since 0.1.0
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import type { ConfigError } from "effect"
import * as Store from "./BreakerStore.js"
import { GatewayConfigError } from "./Errors.js"
import * as FastPath from "./internal/fastPath.js"
import { decode, HealthConfig, validate } from "./internal/healthConfig.js"
import { RetryBudgetSnapshot, type RouteHealth } from "./internal/healthRecord.js"
import { makeService } from "./internal/healthService.js"
import type { Service } from "./internal/healthTypes.js"

export {
  BreakerSettings,
  HealthConfig,
  RetryBudgetSettings,
  WindowSettings
} from "./internal/healthConfig.js"
export { healthScore, RouteHealth, routeKey } from "./internal/healthRecord.js"

export type { AttemptSignal, Service } from "./internal/healthTypes.js"

/**
 * @since 0.1.0
 * @category Context
 */
export class Health extends Context.Tag("@modelgate/core/Health")<Health, Service>() {}

// ---------------------------------------------------------------------------------------------
// Constructors and layers
// ---------------------------------------------------------------------------------------------

/**
 * Builds the service with breaker states in the `BreakerStore` from the context. Fails with a
 * `GatewayConfigError` listing every invalid setting.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (
  config: HealthConfig = HealthConfig.make({})
): Effect.Effect<Service, GatewayConfigError, Store.BreakerStore> =>
  Effect.gen(function* () {
    const problems = validate(config)
    if (problems.length > 0) return yield* new GatewayConfigError({ problems })
    return Health.of(makeService(config, yield* Store.BreakerStore))
  })

/**
 * Breakers, health records and the retry budget, with breaker states in the `BreakerStore` from the
 * context (e.g. a shared store, so that every process sees the same breakers). Fails with a
 * `GatewayConfigError` listing every invalid setting, so the application does not start.
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
 * {@link layer} with the configuration read from `Config` (each field may be a `Config`, or the
 * whole of it, e.g. `Config.succeed(HealthConfig.make({}))`), over the `BreakerStore` in the
 * context (in memory: `BreakerStore.layerMemory`).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<HealthConfig>
): Layer.Layer<Health, GatewayConfigError | ConfigError.ConfigError, Store.BreakerStore> =>
  Layer.effect(Health, Effect.flatMap(Config.unwrap(config), make))

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
 * The settled "closed" answer of {@link layerOff}'s `isOpen` (one shared value).
 */
const noBreaker: Effect.Effect<boolean> = Effect.succeed(false)

/**
 * The settled "no health record" answer of {@link layerOff}'s `snapshot` (one shared value).
 */
const noRecord: Effect.Effect<Option.Option<RouteHealth>> = Effect.succeed(Option.none())

/**
 * {@link layerOff}'s `snapshot`: no record for any route (the router reads `noRecords` on its fast path and skips asking).
 */
const noSnapshot = (_route: string): Effect.Effect<Option.Option<RouteHealth>> => noRecord

const nothing = () => {}

/**
 * Health off: breakers always closed, retry budget unlimited, nothing recorded.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerOff: Layer.Layer<Health> = Layer.sync(Health, () =>
  FastPath.attach(
    Health.of({
      // Shared answers; the router reads the synchronous ones attached below instead.
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
    }),
    {
      _tag: "Health",
      isOpen: () => false,
      tryAcquire: () => true,
      record: nothing,
      onFirstAttempt: nothing,
      noRecords: true
    }
  )
)
