/**
 * Redis implementations of modelgate's store seams, so that several gateway processes share one
 * state: budgets (`BudgetStore`), concurrency permits (`PermitStore`), circuit breakers
 * (`BreakerStore`), the tool ledger (`ToolLedgerStore`) and provider rate limits
 * (`RateLimitStore`). Over `ioredis` 5, one client per layer (commands issued in the same tick
 * leave in one write and share a round trip), against a single Redis node (not Redis Cluster).
 *
 * Details
 *
 * - Budgets: `reserve`, `commit`, `release` and `balance` are one Lua script each (atomic, one round
 *   trip), on integer store units, with the memory store's semantics: reservations expire at the
 *   caller's `expiresAt`, a commit counts all of its spend (beyond its reservation, or late), the
 *   part beyond the limit also as overspent, and an account's keys expire once its window is over.
 *   A `retry` commit counts nothing when its reservation is gone.
 * - Permits: per-tenant reserved permits, a shared pool, a per-tenant maximum and per-target caps,
 *   each permit a lease (a crashed holder's permit comes back at its end); waiting bounded by the
 *   caller's `until`, FIFO per key within a process, woken by pub/sub (see `permitWakeup`).
 * - Breakers: every change is a compare-and-set script that also publishes it; each process keeps
 *   a mirror, so `get` answers without a round trip while the mirror is in sync. While Redis cannot
 *   be reached the breakers fall back to the mirror (changed locally); once Redis is back the shared
 *   state replaces it.
 * - Tool ledger: `claim` sets the record only if its key is free (one script); records are kept
 *   for `ledgerRetention`. A `started` claim is never freed by time: its key stays in doubt, as
 *   with the memory store.
 * - Rate limits: one hash per provider key and UTC minute; `take` is one script.
 * - Failures: a Redis error, a lost connection or an operation that outlives `commandTimeout`
 *   fails with `StoreError` naming the store and the operation (never a key, value or URL). While
 *   the connection is down an operation fails at once; no operation waits longer than
 *   `commandTimeout`. Store health: `StoreHealth.metrics` (`modelgate.store.errors`,
 *   `modelgate.store.healthy`).
 *
 * @example
 * ```ts
 * import * as Redis from "@modelgate/adapters/redis"
 * import { Budgets } from "@modelgate/core"
 * import { Layer } from "effect"
 *
 * // MODELGATE_REDIS_URL=redis://redis:6379 MODELGATE_REDIS_PASSWORD=…
 * const BudgetsLive = Budgets.layer(options).pipe(Layer.provide(Redis.layerConfigBudgetStore()))
 * // every store over one client: Budgets.layer, Concurrency.layer, Health.layer, ToolLedger.layer
 * const Stores = Redis.layerConfig()
 * ```
 *
 * @since 0.2.0
 */
import * as BreakerStore from "@modelgate/core/BreakerStore"
import type { StoreError } from "@modelgate/core/Errors"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import * as ToolLedgerStore from "@modelgate/core/ToolLedgerStore"
import * as PermitStore from "@modelgate/core/PermitStore"
import * as RateLimitStore from "@modelgate/core/RateLimitStore"
import * as ResponseCache from "@modelgate/core/ResponseCache"
import * as ResponseCacheStore from "@modelgate/core/ResponseCacheStore"
import type { ConfigError, Scope } from "effect"
import type { Redis as IORedis } from "ioredis"
import { Config, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { makeBreakerStore } from "./internal/redis/breakers.js"
import { makeBudgetStore } from "./internal/redis/budgets.js"
import { bad, type Client, makeClient } from "./internal/redis/client.js"
import { type Epoch, makeEpoch } from "./internal/redis/epoch.js"
import { makePermitStore, type RedisPermitStore } from "./internal/redis/permits.js"
import { makeRateLimitStore } from "./internal/redis/rateLimits.js"
import { makeResponseCacheStore } from "./internal/redis/responseCache.js"
import { makeToolLedgerStore } from "./internal/redis/toolLedger.js"

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------

/**
 * @since 0.2.0
 * @category Models
 */
export interface Options {
  /** `redis://host:port/db`; give the password in `password`, not in the URL. */
  readonly url: string
  readonly password?: Redacted.Redacted | undefined
  /** Default {@link defaultConnectTimeout}. */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /** The longest any store operation waits; default {@link defaultCommandTimeout}. */
  readonly commandTimeout?: Duration.DurationInput | undefined
  /** Prefix of every key; default `modelgate:`. */
  readonly keyPrefix?: string | undefined
  /** How long tool ledger records are kept; default {@link defaultLedgerRetention}. */
  readonly ledgerRetention?: Duration.DurationInput | undefined
  /**
   * How long a permit's lease outlives its holder's deadline (and the whole lease of a permit taken
   * without a deadline): a crashed holder's permit comes back this long after its deadline. Default
   * {@link defaultPermitLease}.
   */
  readonly permitLease?: Duration.DurationInput | undefined
  /**
   * How a permit waiter learns that a permit was freed in another process: `pubsub` (default: a
   * message on the pool's channel, with polling from 5 ms doubling to 100 ms as a fallback) or
   * `polling` alone (2 ms doubling to 50 ms).
   */
  readonly permitWakeup?: "pubsub" | "polling" | undefined
  /**
   * How often the stores read the epoch key that tells them Redis came back empty (besides every
   * tool-ledger claim, which reads it in the same round trip). Default 1 second.
   */
  readonly epochCheckInterval?: Duration.DurationInput | undefined
  /**
   * Called when this client finds Redis empty after having seen it initialised (the epoch key is
   * gone): the budget spend it had seen committed, now forgotten by Redis. Logged either way.
   */
  readonly onDataLoss?: ((loss: DataLoss) => void) | undefined
}

/**
 * What a client knew when it found Redis empty: the committed spend of each budget account it had
 * seen (store units, `BudgetStore.unitsPerCurrency` per currency unit), which Redis no longer has.
 * Tool-ledger claims fail closed from then on until {@link acknowledgeDataLoss}.
 *
 * @since 0.2.0
 * @category Models
 */
export interface DataLoss {
  readonly budgets: ReadonlyArray<{ readonly account: string; readonly committedUnits: number }>
}

/**
 * @since 0.2.0
 * @category Constants
 */
export const defaultPermitLease: Duration.Duration = Duration.seconds(10)

/**
 * @since 0.2.0
 * @category Constants
 */
export const defaultConnectTimeout: Duration.Duration = Duration.seconds(2)

/**
 * @since 0.2.0
 * @category Constants
 */
export const defaultCommandTimeout: Duration.Duration = Duration.millis(500)

/**
 * @since 0.2.0
 * @category Constants
 */
export const defaultLedgerRetention: Duration.Duration = Duration.days(7)

/**
 * Options read from `MODELGATE_REDIS_URL`, `MODELGATE_REDIS_PASSWORD` (optional, redacted),
 * `MODELGATE_REDIS_CONNECT_TIMEOUT`, `MODELGATE_REDIS_COMMAND_TIMEOUT` (durations, e.g. `500 millis`)
 * `MODELGATE_REDIS_KEY_PREFIX` and `MODELGATE_REDIS_PERMIT_LEASE` (a duration). The URL is read
 * redacted too.
 *
 * @since 0.2.0
 * @category Config
 */
export const config: Config.Config<Options> = Config.map(
  Config.all({
    url: Config.redacted("MODELGATE_REDIS_URL"),
    password: Config.option(Config.redacted("MODELGATE_REDIS_PASSWORD")),
    connectTimeout: Config.withDefault(Config.duration("MODELGATE_REDIS_CONNECT_TIMEOUT"), defaultConnectTimeout),
    commandTimeout: Config.withDefault(Config.duration("MODELGATE_REDIS_COMMAND_TIMEOUT"), defaultCommandTimeout),
    keyPrefix: Config.withDefault(Config.string("MODELGATE_REDIS_KEY_PREFIX"), "modelgate:"),
    permitLease: Config.withDefault(Config.duration("MODELGATE_REDIS_PERMIT_LEASE"), defaultPermitLease)
  }),
  ({ password, url, ...rest }): Options => ({
    ...rest,
    url: Redacted.value(url),
    password: Option.getOrUndefined(password)
  })
)

// ---------------------------------------------------------------------------------------------
// Constructors and layers
// ---------------------------------------------------------------------------------------------

/**
 * The stores over one client.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Stores {
  readonly budget: BudgetStore.Service
  readonly breaker: BreakerStore.Service
  readonly ledger: ToolLedgerStore.Service
  /** @since 0.2.0 */
  readonly permit: PermitStore.Service
  /** @since 0.2.0 */
  readonly rateLimit: RateLimitStore.Service
  /** Answers of workflows with `cache` (give it to `ResponseCache.make`). @since 0.2.0 */
  readonly responseCache: ResponseCacheStore.Service
  /** The client's connection, for measurements and tests (command counts); the stores own it. @since 0.2.0 */
  readonly connection: IORedis
  /**
   * The operator's acknowledgement of a data loss (see {@link DataLoss}): writes a new epoch;
   * claims resume here at once and in every other process at its next epoch read.
   *
   * @since 0.2.0
   */
  readonly acknowledgeDataLoss: Effect.Effect<void, StoreError>
  /** Whether this client detected a data loss not yet acknowledged. @since 0.2.0 */
  readonly dataLost: () => boolean
}

/**
 * The services of {@link layer}: every store seam.
 *
 * @since 0.2.0
 * @category Models
 */
export type Services =
  | BudgetStore.BudgetStore
  | BreakerStore.BreakerStore
  | ToolLedgerStore.ToolLedgerStore
  | PermitStore.PermitStore
  | RateLimitStore.RateLimitStore

const millisOf = (d: Duration.DurationInput) => Math.max(1, Math.ceil(Duration.toMillis(Duration.decode(d))))

/**
 * One Redis client (closed with the scope) and the stores over it. Connects in the background:
 * while Redis cannot be reached, operations fail with `StoreError`.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Stores, never, Scope.Scope> =>
  Effect.gen(function* () {
    const client = yield* clientOf(options)
    const epoch = yield* epochOf(client, options)
    const prefix = prefixOf(options)
    // One client: the budget store takes a reservation and a permit of this permit store in one script.
    const permit = permitStoreOf(client, options)
    return {
      budget: budgetStoreOf(client, options, epoch, permit),
      breaker: makeBreakerStore(client, prefix),
      ledger: ledgerStoreOf(client, options, epoch),
      permit,
      rateLimit: makeRateLimitStore(client, prefix),
      responseCache: makeResponseCacheStore(client, prefix, epoch),
      connection: client.redis,
      acknowledgeDataLoss: epoch.acknowledge,
      dataLost: epoch.lost
    }
  })

/**
 * The operator's acknowledgement that Redis lost its data, from anywhere (a CLI, an admin task):
 * writes a new epoch; every client adopts it at its next epoch read and its tool-ledger claims
 * resume.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const acknowledgeDataLoss = (options: Options): Effect.Effect<void, StoreError> =>
  Effect.scoped(
    Effect.flatMap(clientOf(options), (client) =>
      client.command(
        "ledger",
        "acknowledge",
        (r) => r.set(`${prefixOf(options)}epoch`, `${Date.now().toString(36)}.ack`),
        (reply) => (reply === "OK" ? undefined : bad)
      )
    )
  )

const epochOf = (client: Client, options: Options) =>
  makeEpoch(client, prefixOf(options), millisOf(options.epochCheckInterval ?? Duration.seconds(1)))

const budgetStoreOf = (client: Client, options: Options, epoch: Epoch, permits?: RedisPermitStore) =>
  makeBudgetStore(client, prefixOf(options), epoch, (lost) => options.onDataLoss?.({ budgets: lost }), permits)

const clientOf = (options: Options): Effect.Effect<Client, never, Scope.Scope> =>
  makeClient({
    url: options.url,
    password: options.password,
    connectTimeoutMs: millisOf(options.connectTimeout ?? defaultConnectTimeout),
    commandTimeoutMs: millisOf(options.commandTimeout ?? defaultCommandTimeout)
  })

const prefixOf = (options: Options) => options.keyPrefix ?? "modelgate:"

const ledgerStoreOf = (client: Client, options: Options, epoch: Epoch) =>
  makeToolLedgerStore(client, prefixOf(options), millisOf(options.ledgerRetention ?? defaultLedgerRetention), epoch)

const permitStoreOf = (client: Client, options: Options) => {
  const wakeup = options.permitWakeup ?? "pubsub"
  return makePermitStore(client, {
    prefix: prefixOf(options),
    leaseMs: millisOf(options.permitLease ?? defaultPermitLease),
    wakeup,
    pollMinMs: wakeup === "pubsub" ? 5 : 2,
    pollMaxMs: wakeup === "pubsub" ? 100 : 50
  })
}

/**
 * One store over a client of its own: only that store is built (the breakers' mirror, with its
 * subscriber connection, exists only in a layer that has the breaker store).
 */
const layerOf = <I, S>(
  tag: Context.Tag<I, S>,
  options: Options,
  build: (client: Client, options: Options) => S
): Layer.Layer<I> =>
  Layer.scoped(
    tag,
    Effect.map(clientOf(options), (client) => build(client, options))
  )

/** {@link layerOf} for a store that watches the data-loss epoch (on the same client). */
const layerWithEpochOf = <I, S>(
  tag: Context.Tag<I, S>,
  options: Options,
  build: (client: Client, options: Options, epoch: Epoch) => S
): Layer.Layer<I> =>
  Layer.scoped(
    tag,
    Effect.flatMap(clientOf(options), (client) =>
      Effect.map(epochOf(client, options), (epoch) => build(client, options, epoch))
    )
  )

/**
 * `BudgetStore` on Redis (a client of its own).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerBudgetStore = (options: Options): Layer.Layer<BudgetStore.BudgetStore> =>
  layerWithEpochOf(BudgetStore.BudgetStore, options, budgetStoreOf)

/**
 * `BreakerStore` on Redis (a client of its own).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerBreakerStore = (options: Options): Layer.Layer<BreakerStore.BreakerStore> =>
  layerOf(BreakerStore.BreakerStore, options, (client) => makeBreakerStore(client, prefixOf(options)))

/**
 * `ToolLedgerStore` on Redis (a client of its own).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerToolLedgerStore = (options: Options): Layer.Layer<ToolLedgerStore.ToolLedgerStore> =>
  layerWithEpochOf(ToolLedgerStore.ToolLedgerStore, options, ledgerStoreOf)

/**
 * `PermitStore` on Redis (a client of its own): give it to `Concurrency.layer`.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerPermitStore = (options: Options): Layer.Layer<PermitStore.PermitStore> =>
  layerOf(PermitStore.PermitStore, options, permitStoreOf)

/**
 * `RateLimitStore` on Redis (a client of its own): provider rate limits shared by every process.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerRateLimitStore = (options: Options): Layer.Layer<RateLimitStore.RateLimitStore> =>
  layerOf(RateLimitStore.RateLimitStore, options, (client) => makeRateLimitStore(client, prefixOf(options)))

/**
 * `ResponseCacheStore` on Redis (a client of its own): cached answers shared by every process,
 * expiring by Redis (`PX`). Reads fail open (see `ResponseCache`).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerResponseCacheStore = (options: Options): Layer.Layer<ResponseCacheStore.ResponseCacheStore> =>
  layerOf(ResponseCacheStore.ResponseCacheStore, options, (client) => makeResponseCacheStore(client, prefixOf(options)))

/**
 * The gateway's `ResponseCache` over {@link layerResponseCacheStore}: provide it to the gateway
 * layer and workflows with `cache` share their answers through Redis.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerResponseCache = (options: Options): Layer.Layer<ResponseCache.ResponseCache> =>
  Layer.provide(ResponseCache.layer, layerResponseCacheStore(options))

/**
 * Every store on Redis over one client (budgets, permits, breakers, tool ledger, rate limits).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<Services> =>
  Layer.scopedContext(
    Effect.map(make(options), (s) =>
      Context.make(BudgetStore.BudgetStore, s.budget).pipe(
        Context.add(BreakerStore.BreakerStore, s.breaker),
        Context.add(ToolLedgerStore.ToolLedgerStore, s.ledger),
        Context.add(PermitStore.PermitStore, s.permit),
        Context.add(RateLimitStore.RateLimitStore, s.rateLimit)
      )
    )
  )

/**
 * {@link layer} with its options read from `Config` (default {@link config}: `MODELGATE_REDIS_URL`…).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerConfig = (options: Config.Config<Options> = config): Layer.Layer<Services, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(options, layer))

/**
 * {@link layerBudgetStore} with its options read from `Config` (default {@link config}).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerConfigBudgetStore = (
  options: Config.Config<Options> = config
): Layer.Layer<BudgetStore.BudgetStore, ConfigError.ConfigError> =>
  Layer.unwrapEffect(Effect.map(options, layerBudgetStore))
