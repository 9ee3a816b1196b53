/**
 * Tenant budgets: the worst case of a call is reserved before the first byte, and settled exactly
 * when the call ends (committed spend for what was used, the rest refunded).
 *
 * Details
 *
 * - Each tenant has a hard `limit` per `period` window (`daily` / `monthly` in UTC, computed from
 *   Effect's `Clock`, or `total` for no reset). The invariant `committed + reserved ≤ limit` holds
 *   under any concurrency because the check and the increment are one atomic store operation.
 * - Amounts are kept in the store as integers of {@link unitsPerCurrency} (nano-units), so the
 *   invariant is exact; reservations round up, spend rounds to the nearest unit and is capped at
 *   the reservation.
 * - The store ({@link BudgetStore}) is a seam: the memory store now, a Redis store later with the
 *   same three atomic operations (reserve, commit, release) and an expiry that frees the
 *   reservations of a crashed process.
 *
 * @since 0.1.0
 */
import { Clock, Config, Context, Duration, Effect, Layer, Random, Schema } from "effect"
import type { ConfigError, Scope } from "effect"
import { BudgetExceeded, ConfigProblem, GatewayConfigError } from "./Errors.js"
import { makeMemoryStore } from "./internal/budgetStore.js"
import { TenantId } from "./ModelCommand.js"

/**
 * A scoped reservation. `commit` turns (at most) the reserved amount into spend and refunds the
 * rest; leaving the scope without a commit releases everything.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Reservation {
  readonly tenant: TenantId
  /** What was reserved, in currency units (the request rounded up to a whole store unit). */
  readonly amount: number
  /** Settles the reservation. Spend above `amount` is capped at `amount`. Idempotent: only the first settlement counts. */
  readonly commit: (actual: number) => Effect.Effect<void>
}

/**
 * Where a tenant stands in its current window, in currency units.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Balance {
  readonly tenant: TenantId
  /** `Infinity` for an unlimited tenant. */
  readonly limit: number
  readonly committed: number
  readonly reserved: number
  readonly period: Period | undefined
  /** Epoch millis of the window's start (inclusive) and end (exclusive). */
  readonly windowStart: number
  readonly windowEnd: number
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /**
   * Reserves `amount` (currency units) of `tenant`'s current window, or fails with
   * `BudgetExceeded` (naming limit, committed, reserved, requested) without reserving anything.
   */
  readonly reserve: (tenant: TenantId, amount: number) => Effect.Effect<Reservation, BudgetExceeded, Scope.Scope>
  /** The tenant's current window. */
  readonly balance: (tenant: TenantId) => Effect.Effect<Balance>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Budgets extends Context.Tag("@modelgate/core/Budgets")<Budgets, Service>() {}

/**
 * Smallest output cap worth starting an attempt with: an attempt whose remaining reservation pays
 * for fewer output tokens fails with `BudgetExceeded` instead, and the router excludes a target
 * whose input plus this much output costs more than the call's `maxCost` (`BUDGET_DOES_NOT_FIT`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const minimumUsefulOutputTokens = 16

// ---------------------------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------------------------

/**
 * Store units per currency unit: amounts are integers of 10⁻⁹ (limits up to about 9 million).
 *
 * @since 0.1.0
 * @category Constants
 */
export const unitsPerCurrency = 1_000_000_000

/**
 * @since 0.1.0
 * @category Store
 */
export interface ReserveRequest {
  /** Tenant and window, e.g. `acme/m2026-11`. */
  readonly account: string
  /** Unique across processes. */
  readonly id: string
  /** Store units. */
  readonly amount: number
  /** Store units. */
  readonly limit: number
  /** Epoch millis (the caller's Clock). */
  readonly now: number
  /** When an unsettled reservation is freed (its holder is presumed crashed). */
  readonly expiresAt: number
  /** When the account's window is over and it may be forgotten; `Infinity` for never. */
  readonly accountExpiresAt: number
}

/**
 * @since 0.1.0
 * @category Store
 */
export type ReserveOutcome =
  | { readonly _tag: "Reserved"; readonly committed: number; readonly reserved: number }
  | { readonly _tag: "Rejected"; readonly committed: number; readonly reserved: number }

/**
 * @since 0.1.0
 * @category Store
 */
export interface CommitRequest {
  readonly account: string
  readonly id: string
  /** The reserved amount (store units): the cap of `spend`, also when the reservation has expired. */
  readonly amount: number
  /** Store units. */
  readonly spend: number
}

/**
 * @since 0.1.0
 * @category Store
 */
export interface ReleaseRequest {
  readonly account: string
  readonly id: string
}

/**
 * Persistence of budget accounts. Every operation must be atomic on one account (a Redis store
 * does each in one Lua script). Amounts are integer store units.
 *
 * - `reserve`: drop the account's expired reservations, then add the reservation only if
 *   `committed + reserved + amount ≤ limit`; report the account either way.
 * - `commit`: remove the reservation and add `min(spend, amount)` to committed. A reservation that
 *   already expired still adds its spend (the money was spent), which is the one way the invariant
 *   can be broken: a holder that outlives `reservationTtl`.
 * - `release`: remove the reservation (no spend). Unknown ids are ignored by both.
 *
 * @since 0.1.0
 * @category Store
 */
export interface BudgetStore {
  readonly reserve: (request: ReserveRequest) => Effect.Effect<ReserveOutcome>
  readonly commit: (request: CommitRequest) => Effect.Effect<void>
  readonly release: (request: ReleaseRequest) => Effect.Effect<void>
  /** Committed and live reserved units of an account at `now`. */
  readonly balance: (
    account: string,
    now: number
  ) => Effect.Effect<{ readonly committed: number; readonly reserved: number }>
}

/**
 * @since 0.1.0
 * @category Context
 */
export const BudgetStore: Context.Tag<BudgetStore, BudgetStore> = Context.GenericTag<BudgetStore>(
  "@modelgate/core/Budgets/BudgetStore"
)

/**
 * A store in this process's memory. Accounts of finished windows are forgotten once they hold no
 * reservation.
 *
 * @since 0.1.0
 * @category Store
 */
export const makeStoreMemory: Effect.Effect<BudgetStore & { readonly size: Effect.Effect<number> }> =
  Effect.sync(makeMemoryStore)

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerStoreMemory: Layer.Layer<BudgetStore> = Layer.effect(BudgetStore, makeStoreMemory)

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/**
 * Budget window: `daily` and `monthly` windows start at 00:00 UTC (of the day / of the 1st);
 * `total` never resets.
 *
 * @since 0.1.0
 * @category Models
 */
export const Period = Schema.Literal("daily", "monthly", "total")
/** @since 0.1.0 */
export type Period = typeof Period.Type

/**
 * @since 0.1.0
 * @category Models
 */
export const TenantBudget = Schema.Struct({
  /** Hard limit per window, in currency units (> 0). */
  limit: Schema.Number,
  /** Default `monthly`. */
  period: Schema.optional(Period)
})
/** @since 0.1.0 */
export type TenantBudget = typeof TenantBudget.Type

/**
 * Budget configuration (decodable from JSON: `reservationTtl` in milliseconds).
 *
 * Undeclared tenants (`undeclaredTenants`), the policy chosen here:
 * - `"reject"` (default): a tenant not listed in `tenants` has no budget; its calls fail with
 *   `BudgetExceeded` (limit 0) before any traffic. Tenants must be declared.
 * - `"unlimited"`: undeclared tenants are not limited (spend is not tracked).
 * - a {@link TenantBudget}: each undeclared tenant gets its own account with that limit.
 *
 * @since 0.1.0
 * @category Models
 */
export const BudgetsConfig = Schema.Struct({
  tenants: Schema.optional(Schema.Record({ key: Schema.String, value: TenantBudget })),
  undeclaredTenants: Schema.optional(Schema.Union(Schema.Literal("reject", "unlimited"), TenantBudget)),
  /** How long an unsettled reservation holds its amount (a crashed holder); default 15 minutes. */
  reservationTtl: Schema.optional(Schema.DurationFromMillis)
})

/**
 * Options of {@link make}: the decoded {@link BudgetsConfig}, with any `DurationInput` as TTL.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Options {
  readonly tenants?: Readonly<Record<string, TenantBudget>> | undefined
  readonly undeclaredTenants?: "reject" | "unlimited" | TenantBudget | undefined
  readonly reservationTtl?: Duration.DurationInput | undefined
}

/**
 * Default time an unsettled reservation lives. Must exceed the longest call deadline.
 *
 * @since 0.1.0
 * @category Constants
 */
export const defaultReservationTtl: Duration.Duration = Duration.minutes(15)

const maxLimit = Math.floor(Number.MAX_SAFE_INTEGER / unitsPerCurrency)
const periods: ReadonlyArray<string> = Period.literals
const isTenantId = Schema.is(TenantId)

/**
 * Every problem of a budget configuration (empty when valid): non-positive or non-finite limits,
 * limits above what the store can count exactly, unknown periods, malformed tenant ids, a
 * non-positive reservation TTL, and a configuration that would reject every call.
 *
 * @since 0.1.0
 * @category Validation
 */
export const validate = (options: Options): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const checkBudget = (path: string, budget: TenantBudget) => {
    if (!Number.isFinite(budget.limit) || budget.limit <= 0) {
      problems.push(
        new ConfigProblem({
          path: `${path}.limit`,
          reason: "NON_POSITIVE_LIMIT",
          detail: `must be a finite number > 0, got ${budget.limit}`
        })
      )
    } else if (budget.limit > maxLimit) {
      problems.push(
        new ConfigProblem({ path: `${path}.limit`, reason: "LIMIT_TOO_LARGE", detail: `at most ${maxLimit}` })
      )
    }
    if (budget.period !== undefined && !periods.includes(budget.period)) {
      problems.push(
        new ConfigProblem({
          path: `${path}.period`,
          reason: "UNKNOWN_PERIOD",
          detail: `one of ${periods.join(", ")}, got ${budget.period}`
        })
      )
    }
  }
  const tenants = Object.entries(options.tenants ?? {})
  for (const [tenant, budget] of tenants) {
    const path = `budgets.tenants.${tenant}`
    if (!isTenantId(tenant))
      problems.push(new ConfigProblem({ path, reason: "INVALID_TENANT", detail: "not a valid tenant id" }))
    checkBudget(path, budget)
  }
  const undeclared = options.undeclaredTenants ?? "reject"
  if (typeof undeclared === "object") checkBudget("budgets.undeclaredTenants", undeclared)
  else if (undeclared !== "reject" && undeclared !== "unlimited") {
    problems.push(
      new ConfigProblem({
        path: "budgets.undeclaredTenants",
        reason: "UNKNOWN_POLICY",
        detail: `"reject", "unlimited" or a budget, got ${String(undeclared)}`
      })
    )
  }
  if (tenants.length === 0 && undeclared === "reject") {
    problems.push(
      new ConfigProblem({
        path: "budgets.tenants",
        reason: "NO_TENANTS",
        detail: "no tenant is declared and undeclared tenants are rejected: every call would fail"
      })
    )
  }
  if (options.reservationTtl !== undefined) {
    const ttl = Duration.decodeUnknown(options.reservationTtl)
    if (ttl._tag === "None" || !Duration.isFinite(ttl.value) || Duration.toMillis(ttl.value) <= 0) {
      problems.push(
        new ConfigProblem({
          path: "budgets.reservationTtl",
          reason: "NON_POSITIVE_TIMEOUT",
          detail: "must be a finite duration > 0"
        })
      )
    }
  }
  return problems
}

// ---------------------------------------------------------------------------------------------
// Windows
// ---------------------------------------------------------------------------------------------

/**
 * A budget window: its store key and its bounds in epoch millis.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Window {
  readonly key: string
  readonly start: number
  readonly end: number
}

const day = 86_400_000
const pad = (n: number) => String(n).padStart(2, "0")

/**
 * The window of `period` that contains the instant `now` (epoch millis, UTC).
 *
 * @since 0.1.0
 * @category Utils
 */
export const windowOf = (period: Period, now: number): Window => {
  switch (period) {
    case "total":
      return { key: "total", start: -Infinity, end: Infinity }
    case "daily": {
      const start = Math.floor(now / day) * day
      const d = new Date(start)
      return {
        key: `d${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`,
        start,
        end: start + day
      }
    }
    case "monthly": {
      const d = new Date(now)
      const y = d.getUTCFullYear()
      const m = d.getUTCMonth()
      return { key: `m${y}-${pad(m + 1)}`, start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/** Currency → store units for what is reserved: rounded up, ignoring float noise below 10⁻⁶ unit. */
const reserveUnits = (amount: number) => Math.max(0, Math.ceil(amount * unitsPerCurrency - 1e-6))
/** Currency → store units for a limit: rounded down. */
const limitUnits = (amount: number) => Math.floor(amount * unitsPerCurrency + 1e-6)
const fromUnits = (units: number) => units / unitsPerCurrency

const unlimitedReservation = (tenant: TenantId, amount: number): Reservation => ({
  tenant,
  amount,
  commit: () => Effect.void
})

/**
 * Budgets over the {@link BudgetStore} in the context. Fails with one `GatewayConfigError` listing
 * every problem of `options` (see {@link validate}).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Service, GatewayConfigError, BudgetStore> =>
  Effect.gen(function* () {
    const problems = validate(options)
    if (problems.length > 0) return yield* new GatewayConfigError({ problems })
    const store = yield* BudgetStore
    const ttl = Duration.toMillis(options.reservationTtl ?? defaultReservationTtl)
    const budgets = new Map<string, TenantBudget>(Object.entries(options.tenants ?? {}))
    const undeclared = options.undeclaredTenants ?? "reject"
    const budgetOf = (tenant: TenantId) => budgets.get(tenant) ?? undeclared
    // Reservation ids must be unique across processes sharing one store.
    const instance = (yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)
    let seq = 0

    const reserve = (tenant: TenantId, amount: number) =>
      Effect.gen(function* () {
        if (!(amount >= 0)) return yield* Effect.dieMessage(`Budgets.reserve: amount must be ≥ 0, got ${amount}`)
        const budget = budgetOf(tenant)
        if (budget === "unlimited") return unlimitedReservation(tenant, amount)
        if (budget === "reject") {
          return yield* new BudgetExceeded({ tenant, limit: 0, committed: 0, reserved: 0, requested: amount })
        }
        const now = yield* Clock.currentTimeMillis
        const window = windowOf(budget.period ?? "monthly", now)
        const account = `${tenant}/${window.key}`
        const id = `${instance}-${(++seq).toString(36)}`
        const units = reserveUnits(amount)
        let settled = false
        yield* Effect.acquireRelease(
          Effect.flatMap(
            store.reserve({
              account,
              id,
              amount: units,
              limit: limitUnits(budget.limit),
              now,
              expiresAt: now + ttl,
              accountExpiresAt: window.end + ttl
            }),
            (outcome) =>
              outcome._tag === "Reserved"
                ? Effect.void
                : Effect.fail(
                    new BudgetExceeded({
                      tenant,
                      limit: budget.limit,
                      committed: fromUnits(outcome.committed),
                      reserved: fromUnits(outcome.reserved),
                      requested: amount
                    })
                  )
          ),
          () =>
            Effect.suspend(() => {
              if (settled) return Effect.void
              settled = true
              return store.release({ account, id })
            })
        )
        const commit = (actual: number) =>
          Effect.uninterruptible(
            Effect.suspend(() => {
              if (settled) return Effect.void
              settled = true
              // A non-finite actual is a bug upstream: charge the whole reservation rather than nothing.
              const spend = Number.isFinite(actual) ? Math.max(0, Math.round(actual * unitsPerCurrency)) : units
              return store.commit({ account, id, amount: units, spend })
            })
          )
        return { tenant, amount: fromUnits(units), commit } satisfies Reservation
      })

    const balance = (tenant: TenantId) =>
      Effect.gen(function* () {
        const budget = budgetOf(tenant)
        const now = yield* Clock.currentTimeMillis
        if (typeof budget === "string") {
          return {
            tenant,
            limit: budget === "unlimited" ? Infinity : 0,
            committed: 0,
            reserved: 0,
            period: undefined,
            windowStart: -Infinity,
            windowEnd: Infinity
          } satisfies Balance
        }
        const period = budget.period ?? "monthly"
        const window = windowOf(period, now)
        const b = yield* store.balance(`${tenant}/${window.key}`, now)
        return {
          tenant,
          limit: budget.limit,
          committed: fromUnits(b.committed),
          reserved: fromUnits(b.reserved),
          period,
          windowStart: window.start,
          windowEnd: window.end
        } satisfies Balance
      })

    return Budgets.of({ reserve, balance })
  })

/**
 * Budgets over the {@link BudgetStore} in the context (the memory store: {@link layerMemory}).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<Budgets, GatewayConfigError, BudgetStore> =>
  Layer.effect(Budgets, make(options))

/**
 * Budgets in this process's memory.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory = (options: Options): Layer.Layer<Budgets, GatewayConfigError> =>
  Layer.provide(layer(options), layerStoreMemory)

/**
 * Budgets with options read from `Config` (each field may be a `Config`, e.g.
 * `Schema.Config("BUDGETS_TENANTS", …)`), over the {@link BudgetStore} in the context.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<Budgets, GatewayConfigError | ConfigError.ConfigError, BudgetStore> =>
  Layer.effect(Budgets, Effect.flatMap(Config.unwrap(config), make))

/**
 * No limits: reservations always fit (nothing is tracked).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerUnlimited: Layer.Layer<Budgets> = Layer.succeed(
  Budgets,
  Budgets.of({
    reserve: (tenant, amount) => Effect.succeed(unlimitedReservation(tenant, amount)),
    balance: (tenant) =>
      Effect.succeed({
        tenant,
        limit: Infinity,
        committed: 0,
        reserved: 0,
        period: undefined,
        windowStart: -Infinity,
        windowEnd: Infinity
      })
  })
)
