/**
 * Tenant budgets: the worst case of a call is reserved before the first byte, and settled exactly
 * when the call ends (committed spend for what was used, the rest refunded).
 *
 * Details
 *
 * - Each tenant has a hard `limit` per `period` window (`daily` / `monthly` in UTC, computed from
 *   Effect's `Clock`, or `total` for no reset). The invariant `committed + reserved ≤ limit` holds
 *   under any concurrency because the check and the increment are one atomic store operation.
 * - Amounts are kept in the store as integers of {@link unitsPerCurrency} (billionths), so the
 *   invariant is exact; reservations round up, spend rounds to the nearest unit and is capped at
 *   the reservation.
 * - {@link Service.reserve} is not scoped: the caller settles the {@link Reservation} it gets
 *   (`settle(actual)`, or `settle(0)` to release). One call is one store round trip to reserve and
 *   one to settle. A reservation that is never settled (a crashed holder) is freed by the store
 *   after `reservationTtl`. {@link reserveScoped} is the scoped convenience for user code.
 * - The store is the `BudgetStore` seam (module `BudgetStore`): the memory store now, a Redis store
 *   later with the same atomic operations.
 * - **Synchronous fast path.** When the store answers without I/O (it has the synchronous twins
 *   `reserveSync` / `commitSync` / `releaseSync`: the memory store), or nothing is tracked
 *   ({@link layerUnlimited}), the service also has {@link Service.reserveNow} and its reservations
 *   {@link Reservation.settleNow}: the same operations as `reserve` / `settle` on the same state,
 *   run without an Effect. Only reporting an overspend (a warning log and a metric, which need the
 *   fiber) stays an Effect: {@link reportOverspend}. Over a store without the twins (a remote
 *   one) both are absent and every call goes through the Effect methods, which fail closed.
 *
 * What a store error does to a call
 *
 * - `reserve` and `balance` fail closed: when the store cannot answer, they fail with `StoreError`
 *   (`store: "budget"`) and the call never reaches a provider. A failed reserve also sends a
 *   best-effort release of its reservation id (the store may have applied it and lost only the
 *   answer), so nothing stays reserved whenever the store can be reached; otherwise the TTL frees
 *   it. The store bounds its own round trip, so this is never an unbounded wait.
 * - `settle` never fails: the call's outcome is already decided when it settles. A failed release
 *   is logged (tenant and operation only) and counted in {@link metrics}`.settleFailures`; the
 *   store's reservation TTL frees the held amount. A failed commit answers a `pending` settlement
 *   at once and is retried in the background until shortly before the reservation expires (as a
 *   `retry` commit, which counts nothing once the reservation is gone: a first attempt that landed
 *   is not counted twice); one still lost then is logged and counted.
 *
 * A holder that outlives its reservation
 *
 * - `reservationTtl` (default 15 minutes, at most 7 days) must exceed every workflow's timeout: the
 *   gateway refuses to start otherwise (`TIMEOUT_NOT_BELOW_RESERVATION_TTL`); it reads the TTL from
 *   {@link Service.reservationTtl}.
 * - Should a commit still arrive after its reservation expired (and the freed amount was reserved
 *   again), the store counts its spend only as far as the limit allows, so `committed + reserved ≤
 *   limit` holds even then. The rest is **overspent**: spent at the provider, not counted as
 *   committed. It is returned by `settle` ({@link Settlement}`.overspent`), summed per window in
 *   {@link Balance}`.overspent`, added to the counter `modelgate.budget.overspend_usd`
 *   ({@link metrics}`.overspend`) and logged as a warning (tenant only).
 *
 * @since 0.1.0
 */
import {
  Cause,
  Clock,
  Config,
  Context,
  Duration,
  Effect,
  FiberRef,
  Layer,
  Metric,
  Random,
  RuntimeFlags,
  Schema
} from "effect"
import type { ConfigError, Scope } from "effect"
import * as Store from "./BudgetStore.js"
import { BudgetExceeded, ConfigProblem, GatewayConfigError, type StoreError } from "./Errors.js"
import {
  configProblemsOf,
  isReservedKey,
  reservedKeyDetail,
  reservedKeysOf,
  safeRecord,
  segment
} from "./internal/issues.js"
import { TenantId } from "./ModelCommand.js"

/**
 * What a settle did, in currency units.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Settlement {
  /** Spend counted as committed (0 for a release, a repeated settle, an unlimited tenant or a store failure). */
  readonly committed: number
  /**
   * Spend of a reservation that had expired before this settle and no longer fit the limit: spent
   * at the provider, not counted as committed (0 normally).
   */
  readonly overspent: number
  /**
   * The commit could not be recorded yet (the store did not answer): it is retried in the
   * background until shortly before the reservation expires; `committed` is 0 meanwhile.
   * `undefined` otherwise.
   *
   * @since 0.5.0
   */
  readonly pending?: boolean | undefined
}

/**
 * Money held for one call. Not scoped: whoever reserved it settles it exactly once.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Reservation {
  readonly tenant: TenantId
  /** Amount reserved, in currency units (after rounding up to whole store units). */
  readonly amount: number
  /**
   * Commits `actual` (capped at `amount`, the rest refunded); `0` releases. Idempotent: only the
   * first settle counts. Never fails: a store failure is logged (tenant and operation only) and
   * counted, and the store's reservation TTL frees the money. Tells what was counted and what was
   * overspent (see the module doc).
   */
  readonly settle: (actual: number) => Effect.Effect<Settlement>
  /**
   * `settle`, done at once, without an Effect: present when the store answers without I/O (see
   * {@link Service.reserveNow}). Same rounding, cap and idempotence (shared with `settle`: the
   * first of the two counts, later calls of either return nothing settled); never fails or throws.
   * It does the store part only: when the result's `overspent` is above 0 (a late commit, see the
   * module doc), the caller must still run {@link reportOverspend} with it, which logs the warning
   * and adds to the metric as `settle` would have.
   */
  readonly settleNow?: ((actual: number) => Settlement) | undefined
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
  /** Spend of expired reservations that no longer fit the limit in this window (not in `committed`). */
  readonly overspent: number
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
   * `BudgetExceeded` (naming limit, committed, reserved, requested) without reserving anything, or
   * with `StoreError` when the store cannot answer (nothing reserved).
   *
   * The store round trip is uninterruptible. If the fiber is interrupted while it is in flight,
   * the reservation is released before the interruption propagates. To own the reservation with
   * no gap between `reserve` returning and a finalizer being installed, call it in an
   * uninterruptible region (`Effect.uninterruptibleMask`, `Effect.acquireUseRelease`) and settle in
   * the exit handler.
   */
  readonly reserve: (
    tenant: TenantId,
    amount: number,
    /** Epoch ms (the `Clock`'s) by which a store with I/O must have answered (`StoreError` if not). */
    deadline?: number
  ) => Effect.Effect<Reservation, BudgetExceeded | StoreError>
  /**
   * `reserve` at the epoch-ms instant `now` (the caller reads its `Clock`), done at once without an
   * Effect: the `Reservation` (with `settleNow`), or the `BudgetExceeded` that `reserve` would fail
   * with (returned, not thrown), reserving the same amount in the same account and window with the
   * same TTL. Present only when no operation can fail or wait: unlimited budgets, and a store with
   * the synchronous twins (the memory store); absent over any other store (use `reserve`, which
   * fails closed with `StoreError`). Like `reserve`, a negative or NaN `amount` is a defect: it
   * throws the `RuntimeException` `reserve` dies with. It belongs to this service's `reserve`: a
   * wrapper that replaces `reserve` must replace or drop it too; the gateway uses it only through
   * {@link reserveNowOf}, which checks that it is `reserve`'s own twin.
   */
  readonly reserveNow?: ((tenant: TenantId, amount: number, now: number) => Reservation | BudgetExceeded) | undefined
  /** The tenant's current window. */
  readonly balance: (tenant: TenantId) => Effect.Effect<Balance, StoreError>
  /**
   * Whether `tenant`'s spending is limited (rejected tenants count as limited). The gateway counts
   * input tokens only when a limit needs the count.
   */
  readonly isLimited: (tenant: TenantId) => boolean
  /**
   * How long an unsettled reservation holds its amount; `undefined` when nothing is ever held
   * (unlimited budgets). The gateway checks at startup that every workflow timeout is shorter.
   */
  readonly reservationTtl?: Duration.Duration | undefined
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Budgets extends Context.Tag("@modelgate/core/Budgets")<Budgets, Service>() {}

/**
 * Reserves through the {@link Budgets} in the context and releases the reservation when the scope
 * closes, unless it was settled before.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const reserveScoped = (
  tenant: TenantId,
  amount: number
): Effect.Effect<Reservation, BudgetExceeded | StoreError, Budgets | Scope.Scope> =>
  Effect.acquireRelease(
    Effect.flatMap(Budgets, (budgets) => budgets.reserve(tenant, amount)),
    (reservation) => reservation.settle(0)
  )

/**
 * Smallest output cap worth starting an attempt with: an attempt whose remaining reservation pays
 * for fewer output tokens fails with `BudgetExceeded` instead, and the router excludes a target
 * whose input plus this much output costs more than the call's `maxCost` (`BUDGET_DOES_NOT_FIT`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const minimumUsefulOutputTokens = 16

/**
 * Store units per currency unit (see `BudgetStore.unitsPerCurrency`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const unitsPerCurrency: typeof Store.unitsPerCurrency = Store.unitsPerCurrency

/**
 * Metrics of budgets (names follow the scheme of module `Telemetry`). `settleFailures`
 * (`modelgate.budget.settle_failures`, tagged `operation`: `commit` or `release`) counts
 * settlements the store could not record. `overspend` (`modelgate.budget.overspend_usd`, no label)
 * sums the spend of commits that arrived after their reservation expired and no longer fit the
 * limit (see the module doc).
 *
 * @since 0.2.0
 * @category Metrics
 */
export const metrics = {
  settleFailures: Metric.counter("modelgate.budget.settle_failures", {
    description: "Budget settlements (commit or release) the store could not record",
    incremental: true
  }),
  overspend: Metric.counter("modelgate.budget.overspend_usd", {
    description: "Spend of expired reservations that no longer fit the limit: spent, not counted as committed",
    incremental: true
  })
} as const

// ---------------------------------------------------------------------------------------------
// Deprecated store aliases (module BudgetStore)
// ---------------------------------------------------------------------------------------------

/**
 * @deprecated Use `BudgetStore.BudgetStore` (module `BudgetStore`). Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export const BudgetStore: typeof Store.BudgetStore = Store.BudgetStore
/**
 * @deprecated Use `BudgetStore.Service` (module `BudgetStore`). Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type BudgetStore = Store.Service

/**
 * @deprecated Use `BudgetStore.makeMemory`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export const makeStoreMemory: Effect.Effect<Store.MemoryStore> = Store.makeMemory

/**
 * @deprecated Use `BudgetStore.layerMemory`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export const layerStoreMemory: Layer.Layer<Store.BudgetStore> = Store.layerMemory

/**
 * @deprecated Use `BudgetStore.ReserveRequest`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type ReserveRequest = Store.ReserveRequest

/**
 * @deprecated Use `BudgetStore.ReserveOutcome`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type ReserveOutcome = Store.ReserveOutcome

/**
 * @deprecated Use `BudgetStore.CommitRequest`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type CommitRequest = Store.CommitRequest

/**
 * @deprecated Use `BudgetStore.ReleaseRequest`. Kept for one release.
 * @since 0.1.0
 * @category Store
 */
export type ReleaseRequest = Store.ReleaseRequest

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
  /** By tenant id; `__proto__`, `constructor` and `prototype` are refused as keys, never dropped. */
  tenants: Schema.optional(safeRecord(TenantBudget)),
  undeclaredTenants: Schema.optional(Schema.Union(Schema.Literal("reject", "unlimited"), TenantBudget)),
  /**
   * How long an unsettled reservation holds its amount (a crashed holder); default 15 minutes, at
   * most 7 days, and longer than every workflow timeout.
   */
  reservationTtl: Schema.optional(
    Schema.transform(
      Schema.Number.pipe(
        Schema.finite(),
        Schema.between(0, 604_800_000, { description: "milliseconds between 0 and 604800000 (7 days)" })
      ),
      Schema.DurationFromSelf,
      { strict: true, decode: (ms) => Duration.millis(ms), encode: (d) => Duration.toMillis(d) }
    )
  )
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

/**
 * Longest reservation TTL accepted: 7 days.
 *
 * @since 0.2.0
 * @category Constants
 */
export const maxReservationTtl: Duration.Duration = Duration.days(7)

const maxLimit = Math.floor(Number.MAX_SAFE_INTEGER / unitsPerCurrency)
const periods: ReadonlyArray<string> = Period.literals
const isTenantId = Schema.is(TenantId)

/**
 * Every problem of a budget configuration (empty when valid): non-positive or non-finite limits,
 * limits above what the store can count exactly, unknown periods, malformed tenant ids, reserved
 * keys (`__proto__`, `constructor`, `prototype`), a reservation TTL that is not finite, positive
 * and at most 7 days, and a configuration that would reject every call. Problems name paths, never
 * values.
 *
 * @since 0.1.0
 * @category Validation
 */
export const validate = (options: Options): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const checkBudget = (path: string, budget: TenantBudget) => {
    if (typeof budget !== "object" || budget === null) {
      problems.push(new ConfigProblem({ path, reason: "INVALID_VALUE", detail: "must be an object with a limit" }))
      return
    }
    if (typeof budget.limit !== "number" || !Number.isFinite(budget.limit) || budget.limit <= 0) {
      problems.push(
        new ConfigProblem({
          path: `${path}.limit`,
          reason: "NON_POSITIVE_LIMIT",
          detail: "must be a finite number > 0"
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
          detail: `must be one of ${periods.join(", ")}`
        })
      )
    }
  }
  for (const key of reservedKeysOf(options.tenants)) {
    problems.push(
      new ConfigProblem({ path: `budgets.tenants.${key}`, reason: "RESERVED_KEY", detail: reservedKeyDetail })
    )
  }
  const tenants = Object.entries(options.tenants ?? {}).filter(([tenant]) => !isReservedKey(tenant))
  for (const [tenant, budget] of tenants) {
    const path = `budgets.tenants.${segment(tenant)}`
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
        detail: 'must be "reject", "unlimited" or a budget'
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
    } else if (Duration.greaterThan(ttl.value, maxReservationTtl)) {
      problems.push(
        new ConfigProblem({
          path: "budgets.reservationTtl",
          reason: "DURATION_TOO_LONG",
          detail: "must be at most 7 days"
        })
      )
    }
  }
  return problems
}

const decodeConfig = Schema.decodeUnknownEither(BudgetsConfig, { errors: "all", onExcessProperty: "error" })

/**
 * Decodes a budget configuration from plain JSON (`reservationTtl` in milliseconds) and validates
 * it. A failure lists every problem with its path (`budgets.tenants.acme.limit`), never a value.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const decode = (input: unknown): Effect.Effect<Options, GatewayConfigError> =>
  Effect.suspend(() => {
    const decoded = decodeConfig(input)
    if (decoded._tag === "Left") {
      const problems = configProblemsOf(decoded.left, (path) => ["budgets", ...path.map(segment)].join("."))
      return Effect.fail(new GatewayConfigError({ problems: problems.map((p) => new ConfigProblem(p)) }))
    }
    const problems = validate(decoded.right)
    return problems.length > 0 ? Effect.fail(new GatewayConfigError({ problems })) : Effect.succeed(decoded.right)
  })

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

/**
 * Which synchronous twin belongs to which Effect operation. A fast path is used only next to the
 * operation it was made with: a wrapper that replaces `reserve` (or a reservation's `settle`) by
 * spreading the service keeps the old `reserveNow` (`settleNow`), which would bypass it.
 */
const twins = new WeakMap<object, object>()
const paired = <A extends object, B extends object>(effectful: A, sync: B): B => {
  twins.set(effectful, sync)
  return sync
}

/**
 * The service's `reserveNow`, if it is the twin of the service's own `reserve` (see
 * {@link Service.reserveNow}); `undefined` otherwise, e.g. when a wrapper replaced `reserve`.
 *
 * @since 0.2.0
 * @category Utils
 */
export const reserveNowOf = (service: Service): Service["reserveNow"] =>
  service.reserveNow !== undefined && twins.get(service.reserve) === service.reserveNow ? service.reserveNow : undefined

/**
 * The reservation's `settleNow`, if it is the twin of its own `settle`; `undefined` otherwise.
 *
 * @since 0.2.0
 * @category Utils
 */
export const settleNowOf = (reservation: Reservation): Reservation["settleNow"] =>
  reservation.settleNow !== undefined && twins.get(reservation.settle) === reservation.settleNow
    ? reservation.settleNow
    : undefined

/** The settlement of a release, a repeated settle, an untracked tenant or a failed store operation. */
const nothingSettled: Settlement = { committed: 0, overspent: 0 }

/**
 * The least time a settlement waits for a store with I/O even when the call's deadline is (nearly)
 * reached (ms): a healthy store answers well within it, so a call answered at its deadline is not
 * marked pending for want of a few milliseconds.
 */
const settleGraceMs = 25
/** The settlement of a commit the store did not answer yet (retried in the background). */
const pendingSettlement: Settlement = { committed: 0, overspent: 0, pending: true }
const succeedNothingSettled: Effect.Effect<Settlement> = Effect.succeed(nothingSettled)

const settleNothing = () => succeedNothingSettled
const settleNothingNow = paired(settleNothing, () => nothingSettled)
const settledReservation = (tenant: TenantId, amount: number): Reservation => ({
  tenant,
  amount,
  settle: settleNothing,
  settleNow: settleNothingNow
})

const negativeAmount = (amount: number) =>
  new Cause.RuntimeException(`Budgets.reserve: amount must be ≥ 0, got ${amount}`)

/** Store units of spend for `actual`, capped at the reservation's `units`. */
const spendUnits = (actual: number, units: number) =>
  // A non-finite actual is a bug upstream: charge the whole reservation rather than nothing.
  Number.isFinite(actual) ? Math.min(units, Math.max(0, Math.round(actual * unitsPerCurrency))) : units

const unlimitedBalance = (tenant: TenantId, limit: number): Balance => ({
  tenant,
  limit,
  committed: 0,
  reserved: 0,
  overspent: 0,
  period: undefined,
  windowStart: -Infinity,
  windowEnd: Infinity
})

const settleFailed = (tenant: TenantId, operation: "commit" | "release") =>
  Effect.as(
    Effect.zipRight(
      Metric.increment(Metric.tagged(metrics.settleFailures, "operation", operation)),
      Effect.annotateLogs(
        Effect.logWarning("budget settle failed; the store frees the reservation when its TTL expires"),
        { tenant, operation }
      )
    ),
    nothingSettled
  )

/**
 * Reports an overspend found by a settle: adds `settlement.overspent` to {@link metrics}`.overspend`
 * and logs a warning (tenant only), then succeeds with `settlement`. `settle` does this itself;
 * a caller of {@link Reservation.settleNow} runs it when the settlement's `overspent` is above 0
 * (with 0 it does nothing).
 *
 * @since 0.2.0
 * @category Utils
 */
export const reportOverspend = (tenant: TenantId, settlement: Settlement): Effect.Effect<Settlement> =>
  settlement.overspent > 0 ? overspent(tenant, settlement) : Effect.succeed(settlement)

/** A late commit that no longer fit the limit: counted in the metric and logged (tenant only). */
const overspent = (tenant: TenantId, settlement: Settlement) =>
  Effect.as(
    Effect.zipRight(
      Metric.incrementBy(metrics.overspend, settlement.overspent),
      Effect.annotateLogs(
        Effect.logWarning("budget overspent: a commit arrived after its reservation expired and exceeded the limit"),
        { tenant }
      )
    ),
    settlement
  )

/** The rejection of an undeclared tenant under the `"reject"` policy. */
const rejected = (tenant: TenantId, amount: number) =>
  new BudgetExceeded({ tenant, limit: 0, committed: 0, reserved: 0, requested: amount })

/**
 * Budgets over the `BudgetStore` in the context. Fails with one `GatewayConfigError` listing every
 * problem of `options` (see {@link validate}).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Service, GatewayConfigError, Store.BudgetStore> =>
  Effect.gen(function* () {
    const problems = validate(options)
    if (problems.length > 0) return yield* new GatewayConfigError({ problems })
    const store = yield* Store.BudgetStore
    // The store's synchronous twins, when it has all three and they are its own (a store without I/O).
    const sync = Store.syncOf(store)
    const reservationTtl = Duration.decode(options.reservationTtl ?? defaultReservationTtl)
    const ttl = Duration.toMillis(reservationTtl)
    const budgets = new Map<string, TenantBudget>(Object.entries(options.tenants ?? {}))
    const undeclared = options.undeclaredTenants ?? "reject"
    const budgetOf = (tenant: TenantId) => budgets.get(tenant) ?? undeclared
    // Reservation ids must be unique across processes sharing one store.
    const instance = (yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)
    let seq = 0
    // The last window of each period: recomputed only when the clock leaves it.
    const windows: Record<Period, Window | undefined> = { daily: undefined, monthly: undefined, total: undefined }
    const windowAt = (period: Period, now: number): Window => {
      const cached = windows[period]
      if (cached !== undefined && now >= cached.start && now < cached.end) return cached
      const window = windowOf(period, now)
      windows[period] = window
      return window
    }

    /**
     * A commit the store did not answer: retried in the background (a daemon fiber, backing off
     * from 100 ms to 5 s) until a second before the reservation expires, as `retry` commits: one
     * whose first attempt did land finds its reservation gone and counts nothing twice.
     * The call's settlement says `pending` meanwhile; a commit still lost at the end is logged and
     * counted in `settleFailures` (the store frees the reservation at its expiry).
     */
    const commitPending = (tenant: TenantId, request: Store.CommitRequest, expiresAt: number) => {
      const last = expiresAt - 1_000
      const retry = { ...request, retry: true }
      /** The next retry after `delayMs`, unless it would come after `last`. */
      const retried = (delayMs: number): Effect.Effect<Store.CommitOutcome | undefined> =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          now + delayMs > last
            ? Effect.succeed(undefined)
            : Effect.zipRight(
                Effect.sleep(Duration.millis(delayMs)),
                Effect.catchAll(store.commit(retry), () => retried(Math.min(delayMs * 2, 5_000)))
              )
        )
      const settled = Effect.flatMap(retried(100), (outcome) =>
        outcome === undefined
          ? settleFailed(tenant, "commit")
          : reportOverspend(tenant, {
              committed: fromUnits(outcome.committed),
              overspent: fromUnits(outcome.overspent)
            })
      )
      return Effect.as(
        Effect.zipRight(
          Effect.annotateLogs(
            Effect.logWarning("budget commit pending: the store did not answer; retried until the reservation expires"),
            { tenant }
          ),
          Effect.forkDaemon(settled)
        ),
        pendingSettlement
      )
    }

    const makeReservation = (
      tenant: TenantId,
      account: string,
      id: string,
      units: number,
      limit: number,
      expiresAt: number,
      deadline?: number
    ): Reservation => {
      let settled = false
      const settleWithin = (spend: number, maxWaitMs: number | undefined): Effect.Effect<Settlement> =>
        Effect.uninterruptible(
          spend === 0
            ? Effect.catchAll(
                Effect.as(
                  store.release(maxWaitMs === undefined ? { account, id } : { account, id, maxWaitMs }),
                  nothingSettled
                ),
                () => settleFailed(tenant, "release")
              )
            : Effect.matchEffect(
                store.commit(
                  maxWaitMs === undefined
                    ? { account, id, amount: units, spend, limit }
                    : { account, id, amount: units, spend, limit, maxWaitMs }
                ),
                {
                  onFailure: () => commitPending(tenant, { account, id, amount: units, spend, limit }, expiresAt),
                  onSuccess: (outcome) => {
                    const settlement: Settlement = {
                      committed: fromUnits(outcome.committed),
                      overspent: fromUnits(outcome.overspent)
                    }
                    return outcome.overspent > 0 ? overspent(tenant, settlement) : Effect.succeed(settlement)
                  }
                }
              )
        )
      const settle = (actual: number): Effect.Effect<Settlement> =>
        Effect.suspend(() => {
          if (settled) return succeedNothingSettled
          settled = true
          const spend = spendUnits(actual, units)
          // The caller waits for the store at most until its deadline (and `settleGraceMs` at
          // least): a commit not answered by then is pending and retried in the background.
          if (deadline === undefined) return settleWithin(spend, undefined)
          return Effect.clockWith((clock) =>
            settleWithin(spend, Math.max(settleGraceMs, deadline - clock.unsafeCurrentTimeMillis()))
          )
        })
      const settleNow =
        sync === undefined
          ? undefined
          : (actual: number): Settlement => {
              if (settled) return nothingSettled
              settled = true
              const spend = spendUnits(actual, units)
              if (spend === 0) {
                sync.release({ account, id })
                return nothingSettled
              }
              const outcome = sync.commit({ account, id, amount: units, spend, limit })
              return { committed: fromUnits(outcome.committed), overspent: fromUnits(outcome.overspent) }
            }
      return {
        tenant,
        amount: fromUnits(units),
        settle,
        settleNow: settleNow === undefined ? undefined : paired(settle, settleNow)
      }
    }

    /** The store request of a reservation of `amount` at `now` (a fresh id). */
    const requestAt = (
      tenant: TenantId,
      amount: number,
      budget: TenantBudget,
      now: number,
      deadline?: number
    ): Store.ReserveRequest => {
      const window = windowAt(budget.period ?? "monthly", now)
      return {
        account: `${tenant}/${window.key}`,
        id: `${instance}-${(++seq).toString(36)}`,
        amount: reserveUnits(amount),
        limit: limitUnits(budget.limit),
        now,
        expiresAt: now + ttl,
        accountExpiresAt: window.end + ttl,
        deadline
      }
    }

    const exceeded = (tenant: TenantId, amount: number, budget: TenantBudget, outcome: Store.ReserveOutcome) =>
      new BudgetExceeded({
        tenant,
        limit: budget.limit,
        committed: fromUnits(outcome.committed),
        reserved: fromUnits(outcome.reserved),
        requested: amount
      })

    const reserveAt = (tenant: TenantId, amount: number, budget: TenantBudget, now: number, deadline?: number) => {
      const request = requestAt(tenant, amount, budget, now, deadline)
      const { account, id } = request
      // One store round trip, uninterruptible so that its outcome is never lost halfway.
      return Effect.withFiberRuntime<Reservation, BudgetExceeded | StoreError>((fiber, status) => {
        const interruptible = RuntimeFlags.interruptible(status.runtimeFlags)
        return Effect.uninterruptible(
          Effect.matchCauseEffect(store.reserve(request), {
            // A store that failed may still have applied the reservation (its answer was lost):
            // release the id, best effort and without waiting (a store that is not answering would
            // hold the caller for another command timeout), so that nothing stays reserved whenever
            // the store can; on one connection the release follows the reserve.
            onFailure: (cause) =>
              Effect.zipRight(
                Effect.forkDaemon(Effect.ignore(store.release({ account, id }))),
                Effect.failCause(cause)
              ),
            onSuccess: (outcome): Effect.Effect<Reservation, BudgetExceeded> => {
              if (outcome._tag === "Rejected") return Effect.fail(exceeded(tenant, amount, budget, outcome))
              const reservation = makeReservation(
                tenant,
                account,
                id,
                request.amount,
                request.limit,
                request.expiresAt,
                deadline
              )
              // An interruptible caller was interrupted while the store answered: the interruption
              // is delivered when this region ends and the reservation would be lost, so give the
              // amount back first.
              if (interruptible && !Cause.isEmpty(fiber.getFiberRef(FiberRef.interruptedCause))) {
                return Effect.as(reservation.settle(0), reservation)
              }
              return Effect.succeed(reservation)
            }
          })
        )
      })
    }

    const reserve = (
      tenant: TenantId,
      amount: number,
      deadline?: number
    ): Effect.Effect<Reservation, BudgetExceeded | StoreError> => {
      if (!(amount >= 0)) return Effect.die(negativeAmount(amount))
      const budget = budgetOf(tenant)
      if (budget === "unlimited") return Effect.succeed(settledReservation(tenant, amount))
      if (budget === "reject") return Effect.fail(rejected(tenant, amount))
      return Effect.clockWith((clock) => reserveAt(tenant, amount, budget, clock.unsafeCurrentTimeMillis(), deadline))
    }

    const reserveNow =
      sync === undefined
        ? undefined
        : (tenant: TenantId, amount: number, now: number): Reservation | BudgetExceeded => {
            if (!(amount >= 0)) throw negativeAmount(amount)
            const budget = budgetOf(tenant)
            if (budget === "unlimited") return settledReservation(tenant, amount)
            if (budget === "reject") return rejected(tenant, amount)
            const request = requestAt(tenant, amount, budget, now)
            const outcome = sync.reserve(request)
            if (outcome._tag === "Rejected") return exceeded(tenant, amount, budget, outcome)
            return makeReservation(
              tenant,
              request.account,
              request.id,
              request.amount,
              request.limit,
              request.expiresAt
            )
          }

    const balance = (tenant: TenantId): Effect.Effect<Balance, StoreError> => {
      const budget = budgetOf(tenant)
      if (typeof budget === "string")
        return Effect.succeed(unlimitedBalance(tenant, budget === "unlimited" ? Infinity : 0))
      const period = budget.period ?? "monthly"
      return Effect.clockWith((clock) => {
        const now = clock.unsafeCurrentTimeMillis()
        const window = windowAt(period, now)
        return Effect.map(
          store.balance(`${tenant}/${window.key}`, now),
          (b): Balance => ({
            tenant,
            limit: budget.limit,
            committed: fromUnits(b.committed),
            reserved: fromUnits(b.reserved),
            overspent: fromUnits(b.overspent),
            period,
            windowStart: window.start,
            windowEnd: window.end
          })
        )
      })
    }

    return Budgets.of({
      reserve,
      reserveNow: reserveNow === undefined ? undefined : paired(reserve, reserveNow),
      balance,
      isLimited: (tenant) => budgetOf(tenant) !== "unlimited",
      reservationTtl
    })
  })

/**
 * Budgets over the `BudgetStore` in the context (in memory: {@link layerMemory}).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<Budgets, GatewayConfigError, Store.BudgetStore> =>
  Layer.effect(Budgets, make(options))

/**
 * Budgets in this process's memory (over `BudgetStore.layerMemory`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory = (options: Options): Layer.Layer<Budgets, GatewayConfigError> =>
  Layer.provide(layer(options), Store.layerMemory)

/**
 * Budgets with options read from `Config` (each field may be a `Config`, e.g.
 * `Schema.Config("BUDGETS_TENANTS", …)`), over the `BudgetStore` in the context.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<Budgets, GatewayConfigError | ConfigError.ConfigError, Store.BudgetStore> =>
  Layer.effect(Budgets, Effect.flatMap(Config.unwrap(config), make))

const unlimitedReserve = (tenant: TenantId, amount: number) => Effect.succeed(settledReservation(tenant, amount))

/**
 * No limits: reservations always fit and nothing is tracked (`settle` does nothing). Has the
 * synchronous `reserveNow`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerUnlimited: Layer.Layer<Budgets> = Layer.succeed(
  Budgets,
  Budgets.of({
    reserve: unlimitedReserve,
    reserveNow: paired(unlimitedReserve, (tenant: TenantId, amount: number) => settledReservation(tenant, amount)),
    balance: (tenant) => Effect.succeed(unlimitedBalance(tenant, Infinity)),
    isLimited: () => false
  })
)
