/**
 * Redis implementations of modelgate's store seams, so that several gateway processes share one
 * state: budgets (`BudgetStore`), circuit breakers (`BreakerStore`) and the tool ledger
 * (`ToolLedgerStore`). Over `ioredis` 5, one client per layer, against a single Redis node (not
 * Redis Cluster).
 *
 * Details
 *
 * - Budgets: `reserve`, `commit`, `release` and `balance` are one Lua script each (atomic, one round
 *   trip), on integer store units, with the memory store's semantics: reservations expire at the
 *   caller's `expiresAt`, a late commit is clamped to the limit and the rest recorded as
 *   overspent, and an account's keys expire once its window is over.
 * - Breakers: `get` is one `GET`; `modify` reads the state and writes `f(state)` with a Lua
 *   compare-and-set on the stored (versioned) value, retrying on a concurrent change (`f` may run
 *   more than once).
 * - Tool ledger: `claim` sets the record only if its key is free (one script); records are kept
 *   for `ledgerRetention`. A `started` claim is never freed by time: its key stays in doubt, as
 *   with the memory store.
 * - Failures: a Redis error, a lost connection or an operation that outlives `commandTimeout`
 *   fails with `StoreError` naming the store and the operation (never a key, value or URL); no
 *   operation waits longer than `commandTimeout`.
 *
 * @example
 * ```ts
 * import * as Redis from "@modelgate/adapters/redis"
 * import { Budgets } from "@modelgate/core"
 * import { Layer } from "effect"
 *
 * // MODELGATE_REDIS_URL=redis://redis:6379 MODELGATE_REDIS_PASSWORD=…
 * const BudgetsLive = Budgets.layer(options).pipe(Layer.provide(Redis.layerConfigBudgetStore()))
 * ```
 *
 * @since 0.2.0
 */
import * as BreakerStore from "@modelgate/core/BreakerStore"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import { StoreError } from "@modelgate/core/Errors"
import * as ToolLedgerStore from "@modelgate/core/ToolLedgerStore"
import type { ConfigError, Scope } from "effect"
import { Clock, Config, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { Redis as IORedis } from "ioredis"
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
}

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
 * and `MODELGATE_REDIS_KEY_PREFIX`. The URL is read redacted too.
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
    keyPrefix: Config.withDefault(Config.string("MODELGATE_REDIS_KEY_PREFIX"), "modelgate:")
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

type StoreName = StoreError["store"]

/** Marks a reply that is not what the script returns (never expected from a sound server). */
const bad: unique symbol = Symbol("bad")

const storeError = (store: StoreName, operation: string, detail: string) => new StoreError({ store, operation, detail })

/** Timeouts are real time, also under a `TestClock`: a network round trip does not wait for it. */
const realClock = Clock.make()

interface Client {
  /** One operation: `effect` bounded by the command timeout, failures mapped to `StoreError`. */
  readonly bounded: <A>(
    store: StoreName,
    operation: string,
    effect: Effect.Effect<A, StoreError>
  ) => Effect.Effect<A, StoreError>
  /** One command, its reply decoded (`bad` fails). */
  readonly command: <A>(
    store: StoreName,
    operation: string,
    run: (redis: IORedis) => Promise<unknown>,
    decode: (reply: unknown) => A | typeof bad
  ) => Effect.Effect<A, StoreError>
  /** One script (`EVALSHA`, then `EVAL` if the server does not know it yet). */
  readonly script: <A>(
    store: StoreName,
    operation: string,
    script: Scripts.Script,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string>,
    decode: (reply: unknown) => A | typeof bad
  ) => Effect.Effect<A, StoreError>
}

const isNoScript = (e: unknown) => e instanceof Error && e.message.startsWith("NOSCRIPT")
const isTimeout = (e: unknown) => e instanceof Error && e.message === "Command timed out"

const makeClient = (options: Options): Effect.Effect<Client, never, Scope.Scope> =>
  Effect.gen(function* () {
    const commandTimeout = Duration.decode(options.commandTimeout ?? defaultCommandTimeout)
    const commandMillis = Math.max(1, Math.ceil(Duration.toMillis(commandTimeout)))
    const redis = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const client = new IORedis(options.url, {
          ...(options.password === undefined ? {} : { password: Redacted.value(options.password) }),
          connectTimeout: Math.max(1, Math.ceil(Duration.toMillis(options.connectTimeout ?? defaultConnectTimeout))),
          commandTimeout: commandMillis,
          // Fail fast while disconnected, and never send a command twice (reserve and commit are
          // not idempotent across a resend).
          maxRetriesPerRequest: 0,
          autoResendUnfulfilledCommands: false,
          retryStrategy: (times) => Math.min(times * 50, 1000)
        })
        // Connection errors reach the callers as StoreError; the event itself carries the address.
        client.on("error", () => {})
        return client
      }),
      (client) => Effect.sync(() => client.disconnect())
    )
    const bounded = <A>(store: StoreName, operation: string, effect: Effect.Effect<A, StoreError>) =>
      effect.pipe(
        Effect.timeoutFail({ duration: commandTimeout, onTimeout: () => storeError(store, operation, "timed out") }),
        Effect.withClock(realClock)
      )
    const raw = <A>(
      store: StoreName,
      operation: string,
      run: (redis: IORedis) => Promise<unknown>,
      decode: (reply: unknown) => A | typeof bad
    ): Effect.Effect<A, StoreError> =>
      Effect.flatMap(
        Effect.tryPromise({
          try: () => run(redis),
          catch: (e) => storeError(store, operation, isTimeout(e) ? "timed out" : "unavailable")
        }),
        (reply) => {
          const a = decode(reply)
          return a === bad ? Effect.fail(storeError(store, operation, "unexpected reply")) : Effect.succeed(a)
        }
      )
    const command: Client["command"] = (store, operation, run, decode) =>
      bounded(store, operation, raw(store, operation, run, decode))
    const script: Client["script"] = (store, operation, s, keys, args, decode) =>
      command(
        store,
        operation,
        (r) =>
          r
            .evalsha(s.sha, keys.length, ...keys, ...args)
            .catch((e: unknown) => (isNoScript(e) ? r.eval(s.lua, keys.length, ...keys, ...args) : Promise.reject(e))),
        decode
      )
    return { bounded, command, script }
  })

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
  const settle = (operation: string, account: string, id: string, spend: number, limit: number) =>
    client.script(
      "budget",
      operation,
      Scripts.settle,
      keys(account),
      [id, int(spend), int(limit)],
      (reply): BudgetStore.CommitOutcome | typeof bad => {
        const v = ints(reply, 2)
        return v === bad ? bad : { committed: v[0] ?? 0, overspent: v[1] ?? 0 }
      }
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
        }
      ),
    commit: (r) => settle("commit", r.account, r.id, Math.max(0, Math.min(r.spend, r.amount)), r.limit),
    release: (r) => Effect.asVoid(settle("release", r.account, r.id, 0, 0)),
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

const makeBreakerStore = (client: Client, prefix: string): BreakerStore.Service => {
  const key = (route: string) => `${prefix}breaker:${route}`
  /** The raw value (`""` for none) and its decoded state. */
  const read = (operation: string, k: string) =>
    client.command(
      "breaker",
      operation,
      (r) => r.get(k),
      (reply): unknown => reply
    )
  interface Read {
    readonly raw: string
    readonly version: number
    readonly state: BreakerStore.BreakerState | undefined
  }
  const decode = (operation: string, raw: unknown): Effect.Effect<Read, StoreError> => {
    if (raw === null) return Effect.succeed({ raw: "", version: 0, state: undefined })
    const stored = decodeStoredBreaker(raw)
    return typeof raw === "string" && Option.isSome(stored)
      ? Effect.succeed({ raw, version: stored.value.v, state: stored.value.s })
      : Effect.fail(storeError("breaker", operation, "unexpected reply"))
  }
  const get = (route: string) =>
    client.bounded(
      "breaker",
      "get",
      Effect.map(
        Effect.flatMap(read("get", key(route)), (raw) => decode("get", raw)),
        (s) => s.state
      )
    )
  const modify = <A>(
    route: string,
    f: (current: BreakerStore.BreakerState | undefined) => readonly [A, BreakerStore.BreakerState | undefined]
  ): Effect.Effect<A, StoreError> => {
    const k = key(route)
    const attempt = (n: number): Effect.Effect<A, StoreError> =>
      Effect.flatMap(
        Effect.flatMap(read("modify", k), (raw) => decode("modify", raw)),
        ({ raw, version, state }) => {
          const [a, next] = f(state)
          // Unchanged: nothing to write (the read is the linearization point).
          if (next === state) return Effect.succeed(a)
          const value = next === undefined ? "" : JSON.stringify({ v: version + 1, s: next })
          return Effect.flatMap(
            client.script("breaker", "modify", Scripts.breakerCas, [k], [raw, value], (reply) =>
              reply === 1 ? true : reply === 0 ? false : bad
            ),
            (set) =>
              set
                ? Effect.succeed(a)
                : n + 1 >= maxCasAttempts
                  ? Effect.fail(storeError("breaker", "modify", "contention"))
                  : attempt(n + 1)
          )
        }
      )
    return client.bounded("breaker", "modify", attempt(0))
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
      client.bounded(
        "ledger",
        "complete",
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
 * The three stores over one client.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Stores {
  readonly budget: BudgetStore.Service
  readonly breaker: BreakerStore.Service
  readonly ledger: ToolLedgerStore.Service
}

/**
 * One Redis client (closed with the scope) and the three stores over it. Connects in the
 * background: while Redis cannot be reached, operations fail with `StoreError`.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Stores, never, Scope.Scope> =>
  Effect.map(makeClient(options), (client) => {
    const prefix = options.keyPrefix ?? "modelgate:"
    return {
      budget: makeBudgetStore(client, prefix),
      breaker: makeBreakerStore(client, prefix),
      ledger: makeToolLedgerStore(
        client,
        prefix,
        Math.max(1, Math.ceil(Duration.toMillis(options.ledgerRetention ?? defaultLedgerRetention)))
      )
    }
  })

/**
 * `BudgetStore` on Redis (a client of its own).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerBudgetStore = (options: Options): Layer.Layer<BudgetStore.BudgetStore> =>
  Layer.scoped(
    BudgetStore.BudgetStore,
    Effect.map(make(options), (s) => s.budget)
  )

/**
 * `BreakerStore` on Redis (a client of its own).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerBreakerStore = (options: Options): Layer.Layer<BreakerStore.BreakerStore> =>
  Layer.scoped(
    BreakerStore.BreakerStore,
    Effect.map(make(options), (s) => s.breaker)
  )

/**
 * `ToolLedgerStore` on Redis (a client of its own).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerToolLedgerStore = (options: Options): Layer.Layer<ToolLedgerStore.ToolLedgerStore> =>
  Layer.scoped(
    ToolLedgerStore.ToolLedgerStore,
    Effect.map(make(options), (s) => s.ledger)
  )

/**
 * The three stores on Redis over one client.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layer = (
  options: Options
): Layer.Layer<BudgetStore.BudgetStore | BreakerStore.BreakerStore | ToolLedgerStore.ToolLedgerStore> =>
  Layer.scopedContext(
    Effect.map(make(options), (s) =>
      Context.make(BudgetStore.BudgetStore, s.budget).pipe(
        Context.add(BreakerStore.BreakerStore, s.breaker),
        Context.add(ToolLedgerStore.ToolLedgerStore, s.ledger)
      )
    )
  )

/**
 * {@link layer} with its options read from `Config` (default {@link config}: `MODELGATE_REDIS_URL`…).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerConfig = (
  options: Config.Config<Options> = config
): Layer.Layer<
  BudgetStore.BudgetStore | BreakerStore.BreakerStore | ToolLedgerStore.ToolLedgerStore,
  ConfigError.ConfigError
> => Layer.unwrapEffect(Effect.map(options, layer))

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
