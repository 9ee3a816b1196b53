/**
 * Tenant budgets: the worst case of a call is reserved before the first byte, and settled exactly
 * when the call ends (committed spend for what was used, the rest refunded).
 *
 * Details
 *
 * - Each tenant has a hard `limit` per `period` window (`daily` / `monthly` in UTC, computed from
 *   Effect's `Clock`, or `total` for no reset). A reservation is admitted only when `committed +
 *   reserved + amount ≤ limit`, under any concurrency, because the check and the increment are one
 *   atomic store operation.
 * - Amounts are kept in the store as integers of {@link unitsPerCurrency} (billionths), so the
 *   check is exact; reservations round up, spend rounds to the nearest unit.
 * - A settle commits the whole spend, also when it exceeds the reservation (a provider reported more
 *   tokens than were estimated): the budget records what was spent, never less. Spend that takes
 *   the account over its limit is **overspent** (below).
 * - {@link Service.reserve} is not scoped: the caller settles the {@link Reservation} it gets
 *   (`settle(actual)`, or `settle(0)` to release). One call is one store round trip to reserve and
 *   one to settle. A reservation that is never settled (a crashed holder) is freed by the store
 *   after `reservationTtl`. {@link reserveScoped} is the scoped convenience for user code.
 * - The store is the `BudgetStore` seam (module `BudgetStore`): the memory store now, a Redis store
 *   later with the same atomic operations.
 * - Over a store that answers without I/O (the memory store), and with {@link layerOff}, the engine
 *   reserves and settles without running an Effect (a private fast path: the same operations on
 *   the same state). Over any other store every call goes through the Effect methods, which fail
 *   closed.
 *
 * What a store error does to a call
 *
 * - `reserve` and `balance` fail closed: when the store cannot answer, they fail with `StoreError`
 *   (`store: "budget"`) and the call never reaches a provider. A failed reserve also sends a
 *   best-effort release of its reservation id (the store may have applied it and lost only the
 *   answer), so nothing stays reserved whenever the store can be reached; otherwise the TTL frees
 *   it. The store bounds its own round trip, so this is never an unbounded wait.
 * - `settle` never fails: the call's outcome is already decided when it settles. A failed release
 *   is logged (tenant and operation only) and counted in `modelgate.budget.settle_failures`; the
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
 *   again), its spend is committed all the same.
 *
 * Overspend
 *
 * - The part of a commit that does not fit under the limit (spend beyond the reservation, or a late
 *   commit, when the account has no room left for it) is **overspent**: counted in `committed` (the
 *   account is then over its limit and admits no reservation until its window resets or the limit
 *   is raised) and reported apart. It is returned by `settle` ({@link Settlement}`.overspent`),
 *   summed per window in {@link Balance}`.overspent`, shown in a call's `evidence.cost.overspent`,
 *   added to the counter `modelgate.budget.overspend_usd` and logged as a warning (tenant only).
 *
 * @since 0.1.0
 */
import { Config, Context, Duration, Effect, Layer, Random } from "effect"
import type { ConfigError, Scope } from "effect"
import * as Store from "./BudgetStore.js"
import { type BudgetExceeded, GatewayConfigError, type StoreError } from "./Errors.js"
import * as Service_ from "./internal/budgetService.js"
import * as Windows from "./internal/budgetWindow.js"
import type { TenantId } from "./ModelCommand.js"
import {
  type Balance,
  type Options,
  type Reservation,
  type Service,
  type Settlement,
  TenantBudget
} from "./internal/budgetTypes.js"
import { decodeSection } from "./internal/configSection.js"
import { BudgetsConfig, validate } from "./internal/budgetConfig.js"

export { TenantBudget }
export type { Balance, Options, Reservation, Service, Settlement }

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
 * Store units per currency unit (see `BudgetStore.unitsPerCurrency`).
 *
 * @since 0.1.0
 * @category Constants
 */
export const unitsPerCurrency: typeof Store.unitsPerCurrency = Store.unitsPerCurrency

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/**
 * Decodes a budget configuration from plain JSON (`reservationTtl` in milliseconds) and validates
 * it. A failure lists every problem with its path (`budgets.tenants.acme.limit`), never a value.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const decode: (input: unknown) => Effect.Effect<Options, GatewayConfigError> = decodeSection(
  BudgetsConfig,
  "budgets",
  validate
)

// ---------------------------------------------------------------------------------------------
// Windows
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/**
 * Budgets over the `BudgetStore` in the context. Fails with one `GatewayConfigError` listing every
 * problem of `options` (the checks {@link decode} applies).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Service, GatewayConfigError, Store.BudgetStore> =>
  Effect.gen(function* () {
    const problems = validate(options)
    if (problems.length > 0) return yield* new GatewayConfigError({ problems })
    const store = yield* Store.BudgetStore
    // Reservation ids must be unique across processes sharing one store.
    const instance = (yield* Random.nextIntBetween(0, 2 ** 31)).toString(36)
    const ttl = Duration.decode(options.reservationTtl ?? Windows.defaultReservationTtl)
    return Budgets.of(Service_.makeService(options, store, instance, ttl))
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
 * {@link layer} with options read from `Config` (each field may be a `Config`, e.g.
 * `Schema.Config("BUDGETS_TENANTS", …)`), over the `BudgetStore` in the context.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<Budgets, GatewayConfigError | ConfigError.ConfigError, Store.BudgetStore> =>
  Layer.effect(Budgets, Effect.flatMap(Config.unwrap(config), make))

/**
 * Budgets off: reservations always fit and nothing is tracked (`settle` does nothing).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerOff: Layer.Layer<Budgets> = Layer.sync(Budgets, Service_.off)
