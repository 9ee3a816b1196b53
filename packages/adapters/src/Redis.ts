/**
 * Redis implementations of modelgate's store seams, so that several gateway processes share one
 * state: budgets (`BudgetStore`), concurrency permits (`PermitStore`), circuit breakers
 * (`BreakerStore`), the tool ledger (`ToolLedgerStore`) and provider rate limits
 * (`RateLimitStore`). Over `ioredis` 5, one client per layer (auto-pipelined: commands issued
 * together share a round trip), against a single Redis node (not Redis Cluster).
 *
 * Details
 *
 * - Budgets: `reserve`, `commit`, `release` and `balance` are one Lua script each (atomic, one round
 *   trip), on integer store units, with the memory store's semantics: reservations expire at the
 *   caller's `expiresAt`, a late commit is clamped to the limit and the rest recorded as
 *   overspent, and an account's keys expire once its window is over. A `retry` commit counts
 *   nothing when its reservation is gone.
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
import * as BudgetStore from "@modelgate/core/BudgetStore"
import type { StoreError } from "@modelgate/core/Errors"
import * as ToolLedgerStore from "@modelgate/core/ToolLedgerStore"
import * as PermitStore from "@modelgate/core/PermitStore"
import * as RateLimits from "@modelgate/core/RateLimits"
import type { ConfigError, Scope } from "effect"
import type { Redis as IORedis } from "ioredis"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { bad, type Client, makeClient, storeError } from "./internal/redis/client.js"
import { makePermitStore } from "./internal/redis/permits.js"
import { makeRateLimitStore } from "./internal/redis/rateLimits.js"
import * as Scripts from "./internal/redisScripts.js"

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
}

/**
 * @since 0.5.0
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
// Client
// ---------------------------------------------------------------------------------------------

const ints = <N extends number>(reply: unknown, n: N): ReadonlyArray<number> | typeof bad =>
  Array.isArray(reply) && reply.length === n && reply.every((x): x is number => typeof x === "number") ? reply : bad

/** An integer as a script argument. */
const int = (n: number) => Math.trunc(n).toString()

// ---------------------------------------------------------------------------------------------
// Budget store
// ---------------------------------------------------------------------------------------------

const makeBudgetStore = (client: Client, prefix: string): BudgetStore.Service => {
  const keys = (account: string) => {
    const h = `${prefix}budget:{${account}}`
    return [h, `${h}:r`]
  }
  const settle = (
    operation: string,
    account: string,
    id: string,
    spend: number,
    limit: number,
    retry: boolean,
    maxWaitMs: number | undefined
  ) =>
    client.script(
      "budget",
      operation,
      Scripts.settle,
      keys(account),
      [id, int(spend), int(limit), retry ? "1" : "0"],
      (reply): BudgetStore.CommitOutcome | typeof bad => {
        const v = ints(reply, 2)
        return v === bad ? bad : { committed: v[0] ?? 0, overspent: v[1] ?? 0 }
      },
      maxWaitMs
    )
  return BudgetStore.BudgetStore.of({
    reserve: (r) =>
      client.script(
        "budget",
        "reserve",
        Scripts.reserve,
        keys(r.account),
        [
          r.id,
          int(r.amount),
          int(r.limit),
          int(r.now),
          int(r.expiresAt),
          Number.isFinite(r.accountExpiresAt) ? int(r.accountExpiresAt) : "-1"
        ],
        (reply): BudgetStore.ReserveOutcome | typeof bad => {
          const v = ints(reply, 3)
          if (v === bad) return bad
          const committed = v[1] ?? 0
          const reserved = v[2] ?? 0
          return v[0] === 1 ? { _tag: "Reserved", committed, reserved } : { _tag: "Rejected", committed, reserved }
        },
        // never waits past the caller's deadline (the caller releases the id if the answer is lost)
        r.deadline === undefined ? undefined : r.deadline - r.now
      ),
    commit: (r) =>
      settle(
        "commit",
        r.account,
        r.id,
        Math.max(0, Math.min(r.spend, r.amount)),
        r.limit,
        r.retry === true,
        r.maxWaitMs
      ),
    release: (r) => Effect.asVoid(settle("release", r.account, r.id, 0, 0, false, r.maxWaitMs)),
    balance: (account, now) =>
      client.script(
        "budget",
        "balance",
        Scripts.balance,
        keys(account),
        [int(now)],
        (reply): BudgetStore.AccountBalance | typeof bad => {
          const v = ints(reply, 3)
          return v === bad ? bad : { committed: v[0] ?? 0, reserved: v[1] ?? 0, overspent: v[2] ?? 0 }
        }
      )
  })
}

// ---------------------------------------------------------------------------------------------
// Breaker store
// ---------------------------------------------------------------------------------------------

/** The stored value: the state and a version bumped by every write (the compare-and-set's witness). */
const StoredBreaker = Schema.parseJson(Schema.Struct({ v: Schema.Int, s: BreakerStore.BreakerState }))
const decodeStoredBreaker = Schema.decodeUnknownOption(StoredBreaker)

/** Compare-and-set attempts before `modify` gives up (each one lost to a concurrent writer). */
const maxCasAttempts = 64

/** What this process knows of one breaker: the stored value, its state, the change that wrote it. */
interface Mirrored {
  readonly seq: number
  readonly raw: string
  readonly state: BreakerStore.BreakerState | undefined
}

/**
 * Breakers shared through Redis, mirrored in this process: every change is a compare-and-set
 * script that also publishes the change, and each process applies the changes it hears to its
 * mirror. While the mirror is in sync (subscribed, and loaded once after each (re)subscription),
 * `get` answers from it (no round trip) and `modify` starts its compare-and-set from it (one round
 * trip when nobody changed the breaker meanwhile). While Redis cannot be reached, the breakers fall
 * back to this process's mirror: `get` answers the last state seen, `modify` changes it locally;
 * once Redis is back, the shared state replaces the local one.
 */
const makeBreakerStore = (client: Client, prefix: string): BreakerStore.Service => {
  const key = (route: string) => `${prefix}breaker:${route}`
  const keyPrefix = `${prefix}breaker:`
  const routesKey = `${prefix}breakers`
  const seqKey = `${prefix}breaker-seq`
  const channel = `${prefix}breaker-changes`
  const mirror = new Map<string, Mirrored>()
  let synced = false
  const parse = (raw: string): Option.Option<BreakerStore.BreakerState | undefined> => {
    if (raw === "") return Option.some(undefined)
    const stored = decodeStoredBreaker(raw)
    return Option.isSome(stored) ? Option.some(stored.value.s) : Option.none()
  }
  /** A change heard or made: applied unless the mirror already has a later one. */
  const apply = (route: string, seq: number, raw: string) => {
    const current = mirror.get(route)
    if (current !== undefined && current.seq >= seq) return
    const state = parse(raw)
    if (Option.isSome(state)) mirror.set(route, { seq, raw, state: state.value })
  }
  const resync = client.script("breaker", "sync", Scripts.breakerAll, [routesKey, seqKey], [keyPrefix], (reply) =>
    Array.isArray(reply) && reply.length % 2 === 1 && typeof reply[0] === "number" ? reply : bad
  )
  client.subscribe(
    channel,
    (message) => {
      const a = message.indexOf("\n")
      const b = message.indexOf("\n", a + 1)
      if (a < 0 || b < 0) return
      apply(message.slice(a + 1, b), Number(message.slice(0, a)), message.slice(b + 1))
    },
    {
      subscribed: () => {
        Effect.runFork(
          Effect.match(resync, {
            onFailure: () => {},
            onSuccess: (reply) => {
              const seq = Number(reply[0])
              const seen = new Set<string>()
              for (let i = 1; i + 1 < reply.length; i += 2) {
                const route = String(reply[i])
                seen.add(route)
                const current = mirror.get(route)
                if (current !== undefined && current.seq > seq) continue
                const raw = String(reply[i + 1])
                const state = parse(raw)
                if (Option.isSome(state)) mirror.set(route, { seq, raw, state: state.value })
              }
              for (const [route, m] of mirror) if (!seen.has(route) && m.seq <= seq) mirror.delete(route)
              synced = true
            }
          })
        )
      },
      lost: () => {
        synced = false
      }
    }
  )
  /** Redis could not answer: the operation falls back to this process's mirror. */
  const unreachable = (e: StoreError) => e.detail === "unavailable" || e.detail === "timed out"
  const local = (route: string) => mirror.get(route)
  /** The stored value of `route` read from Redis (and kept in the mirror). */
  const read = (operation: string, route: string): Effect.Effect<Mirrored, StoreError> =>
    client.command(
      "breaker",
      operation,
      (r) => r.get(key(route)),
      (reply): Mirrored | typeof bad => {
        const raw = reply === null ? "" : typeof reply === "string" ? reply : undefined
        if (raw === undefined) return bad
        const state = parse(raw)
        if (Option.isNone(state)) return bad
        const seq = mirror.get(route)?.seq ?? 0
        const m = { seq, raw, state: state.value }
        if (!synced) mirror.set(route, m)
        return m
      }
    )
  const get = (route: string): Effect.Effect<BreakerStore.BreakerState | undefined, StoreError> =>
    Effect.suspend(() =>
      synced
        ? Effect.succeed(mirror.get(route)?.state)
        : Effect.catchAll(
            Effect.map(read("get", route), (m) => m.state),
            (e) => (unreachable(e) ? Effect.succeed(local(route)?.state) : Effect.fail(e))
          )
    )
  const modify = <A>(
    route: string,
    f: (current: BreakerStore.BreakerState | undefined) => readonly [A, BreakerStore.BreakerState | undefined]
  ): Effect.Effect<A, StoreError> => {
    const k = key(route)
    const attempt = (n: number, from: Mirrored | undefined): Effect.Effect<A, StoreError> =>
      Effect.flatMap(from !== undefined ? Effect.succeed(from) : read("modify", route), ({ raw, state }) => {
        const [a, next] = f(state)
        // Unchanged: nothing to write (the read is the linearization point).
        if (next === state) return Effect.succeed(a)
        const version = raw === "" ? 0 : Option.match(decodeStoredBreaker(raw), { onNone: () => 0, onSome: (x) => x.v })
        const value = next === undefined ? "" : JSON.stringify({ v: version + 1, s: next })
        return Effect.flatMap(
          client.script(
            "breaker",
            "modify",
            Scripts.breakerCas,
            [k, routesKey, seqKey],
            [raw, value, channel, route],
            (reply) => (typeof reply === "number" ? reply : bad)
          ),
          (seq) => {
            if (seq > 0) {
              apply(route, seq, value)
              return Effect.succeed(a)
            }
            return n + 1 >= maxCasAttempts
              ? Effect.fail(storeError("breaker", "modify", "contention"))
              : attempt(n + 1, undefined)
          }
        )
      })
    const fromMirror = Effect.suspend(() =>
      attempt(0, synced ? (mirror.get(route) ?? { seq: 0, raw: "", state: undefined }) : undefined)
    )
    return Effect.catchAll(client.bounded("breaker", "modify", fromMirror), (e) => {
      if (!unreachable(e)) return Effect.fail(e)
      // Redis is unreachable: the breaker changes in this process only.
      return Effect.sync(() => {
        const current = local(route)
        const [a, next] = f(current?.state)
        mirror.set(route, {
          seq: current?.seq ?? 0,
          raw: next === undefined ? "" : JSON.stringify({ v: 0, s: next }),
          state: next
        })
        return a
      })
    })
  }
  return BreakerStore.BreakerStore.of({ get, modify })
}

// ---------------------------------------------------------------------------------------------
// Tool ledger store
// ---------------------------------------------------------------------------------------------

const decodeToolRecord = Schema.decodeUnknownOption(ToolLedgerStore.ToolRecord)

const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

/** A record from its stored fields `[m, s, c, r]`. */
const toRecord = (fields: unknown): ToolLedgerStore.ToolRecord | typeof bad => {
  if (!Array.isArray(fields) || fields.length !== 4) return bad
  const [m, s, c, r] = fields
  if (typeof m !== "string" || typeof s !== "string") return bad
  const meta = parseJson(m)
  if (Option.isNone(meta) || typeof meta.value !== "object" || meta.value === null) return bad
  const result = typeof r === "string" ? parseJson(r) : Option.none()
  if (typeof r === "string" && Option.isNone(result)) return bad
  const record = decodeToolRecord({
    ...meta.value,
    status: s,
    ...(typeof c === "string" ? { completedAt: Number(c) } : {}),
    ...(Option.isSome(result) ? { result: result.value } : {})
  })
  return Option.isSome(record) ? record.value : bad
}

const makeToolLedgerStore = (client: Client, prefix: string, retentionMillis: number): ToolLedgerStore.Service => {
  const recordPrefix = `${prefix}ledger:`
  const runKey = (runId: string) => `${prefix}ledger-run:${runId}`
  return ToolLedgerStore.ToolLedgerStore.of({
    claim: (record) =>
      client.script(
        "ledger",
        "claim",
        Scripts.ledgerClaim,
        [recordPrefix + record.key, runKey(record.runId), `${prefix}ledger-seq`],
        [
          JSON.stringify({
            key: record.key,
            runId: record.runId,
            step: record.step,
            index: record.index,
            tool: record.tool,
            startedAt: record.startedAt
          }),
          int(retentionMillis),
          record.key
        ],
        (reply): ToolLedgerStore.ClaimOutcome | typeof bad => {
          if (Array.isArray(reply) && reply.length === 0) return { _tag: "Claimed" }
          const existing = toRecord(reply)
          return existing === bad ? bad : { _tag: "Existing", record: existing }
        }
      ),
    complete: (key, result, completedAt) =>
      Effect.flatMap(
        Effect.try({
          try: () => (result === undefined ? "" : JSON.stringify(result)),
          catch: () => storeError("ledger", "complete", "result not JSON")
        }),
        (json) =>
          client.script(
            "ledger",
            "complete",
            Scripts.ledgerComplete,
            [recordPrefix + key],
            [json, String(completedAt)],
            (reply) => (typeof reply === "number" ? undefined : bad)
          )
      ),
    release: (key) =>
      Effect.flatMap(
        client.command(
          "ledger",
          "release",
          (r) => r.hget(recordPrefix + key, "m"),
          (reply) => (reply === null ? Option.none() : typeof reply === "string" ? parseJson(reply) : bad)
        ),
        (meta) => {
          const runId =
            Option.isSome(meta) && typeof meta.value === "object" && meta.value !== null && "runId" in meta.value
              ? meta.value.runId
              : undefined
          if (typeof runId !== "string") return Effect.void
          return client.script(
            "ledger",
            "release",
            Scripts.ledgerRelease,
            [recordPrefix + key, runKey(runId)],
            [key],
            (reply) => (typeof reply === "number" ? undefined : bad)
          )
        }
      ),
    get: (key) =>
      client.command(
        "ledger",
        "get",
        (r) => r.hmget(recordPrefix + key, "m", "s", "c", "r"),
        (reply): Option.Option<ToolLedgerStore.ToolRecord> | typeof bad => {
          if (Array.isArray(reply) && reply[0] === null) return Option.none()
          const record = toRecord(reply)
          return record === bad ? bad : Option.some(record)
        }
      ),
    list: (runId) =>
      client.script(
        "ledger",
        "list",
        Scripts.ledgerList,
        [runKey(runId)],
        [recordPrefix],
        (reply): ReadonlyArray<ToolLedgerStore.ToolRecord> | typeof bad => {
          if (!Array.isArray(reply)) return bad
          const records: Array<ToolLedgerStore.ToolRecord> = []
          for (const fields of reply) {
            const record = toRecord(fields)
            if (record === bad) return bad
            records.push(record)
          }
          return records
        }
      )
  })
}

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
  /** @since 0.5.0 */
  readonly permit: PermitStore.Service
  /** @since 0.5.0 */
  readonly rateLimit: RateLimits.Service
  /** The client's connection, for measurements and tests (command counts); the stores own it. @since 0.5.0 */
  readonly connection: IORedis
}

/**
 * The services of {@link layer}: every store seam.
 *
 * @since 0.5.0
 * @category Models
 */
export type Services =
  | BudgetStore.BudgetStore
  | BreakerStore.BreakerStore
  | ToolLedgerStore.ToolLedgerStore
  | PermitStore.PermitStore
  | RateLimits.RateLimitStore

const millisOf = (d: Duration.DurationInput) => Math.max(1, Math.ceil(Duration.toMillis(Duration.decode(d))))

/**
 * One Redis client (closed with the scope) and the stores over it. Connects in the background:
 * while Redis cannot be reached, operations fail with `StoreError`.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Stores, never, Scope.Scope> =>
  Effect.map(clientOf(options), (client) => {
    const prefix = prefixOf(options)
    return {
      budget: makeBudgetStore(client, prefix),
      breaker: makeBreakerStore(client, prefix),
      ledger: ledgerStoreOf(client, options),
      permit: permitStoreOf(client, options),
      rateLimit: makeRateLimitStore(client, prefix),
      connection: client.redis
    }
  })

const clientOf = (options: Options): Effect.Effect<Client, never, Scope.Scope> =>
  makeClient({
    url: options.url,
    password: options.password,
    connectTimeoutMs: millisOf(options.connectTimeout ?? defaultConnectTimeout),
    commandTimeoutMs: millisOf(options.commandTimeout ?? defaultCommandTimeout)
  })

const prefixOf = (options: Options) => options.keyPrefix ?? "modelgate:"

const ledgerStoreOf = (client: Client, options: Options) =>
  makeToolLedgerStore(client, prefixOf(options), millisOf(options.ledgerRetention ?? defaultLedgerRetention))

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

/**
 * `BudgetStore` on Redis (a client of its own).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerBudgetStore = (options: Options): Layer.Layer<BudgetStore.BudgetStore> =>
  layerOf(BudgetStore.BudgetStore, options, (client) => makeBudgetStore(client, prefixOf(options)))

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
  layerOf(ToolLedgerStore.ToolLedgerStore, options, ledgerStoreOf)

/**
 * `PermitStore` on Redis (a client of its own): give it to `Concurrency.layer`.
 *
 * @since 0.5.0
 * @category Layers
 */
export const layerPermitStore = (options: Options): Layer.Layer<PermitStore.PermitStore> =>
  layerOf(PermitStore.PermitStore, options, permitStoreOf)

/**
 * `RateLimitStore` on Redis (a client of its own): provider rate limits shared by every process.
 *
 * @since 0.5.0
 * @category Layers
 */
export const layerRateLimitStore = (options: Options): Layer.Layer<RateLimits.RateLimitStore> =>
  layerOf(RateLimits.RateLimitStore, options, (client) => makeRateLimitStore(client, prefixOf(options)))

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
        Context.add(RateLimits.RateLimitStore, s.rateLimit)
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
