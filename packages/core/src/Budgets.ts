/**
 * Tenant budgets: the worst case of a call is reserved before the first byte, and settled exactly
 * when the call ends (committed spend for what was used, the rest refunded).
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Ref } from "effect"
import type { Scope } from "effect"
import { BudgetExceeded } from "./Errors.js"
import type { TenantId } from "./ModelCommand.js"

/**
 * A scoped reservation. `commit` turns (at most) the reserved amount into spend and refunds the
 * rest; leaving the scope without a commit releases everything.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Reservation {
  readonly tenant: TenantId
  readonly amount: number
  /** Settles the reservation. Spend above `amount` is capped at `amount`. Idempotent. */
  readonly commit: (actual: number) => Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly reserve: (tenant: TenantId, amount: number) => Effect.Effect<Reservation, BudgetExceeded, Scope.Scope>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Budgets extends Context.Tag("@modelgate/core/Budgets")<Budgets, Service>() {}

/**
 * No limits: reservations always fit (spend is still settled per call).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerUnlimited: Layer.Layer<Budgets> = Layer.succeed(
  Budgets,
  Budgets.of({
    reserve: (tenant, amount) => Effect.succeed({ tenant, amount, commit: () => Effect.void })
  })
)

interface Account {
  committed: number
  reserved: number
}

/**
 * In-memory hard limits per tenant (no period windows). Tenants without a limit are unlimited.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const makeMemory = (limits: Readonly<Record<string, number>>) =>
  Effect.gen(function* () {
    const accounts = yield* Ref.make(new Map<string, Account>())
    const reserve = (tenant: TenantId, amount: number) =>
      Effect.gen(function* () {
        const limit = limits[tenant]
        if (limit === undefined) return { tenant, amount, commit: () => Effect.void } satisfies Reservation
        const ok = yield* Ref.modify(accounts, (map) => {
          const acc = map.get(tenant) ?? { committed: 0, reserved: 0 }
          if (acc.committed + acc.reserved + amount > limit) return [{ ...acc }, map] as const
          map.set(tenant, { committed: acc.committed, reserved: acc.reserved + amount })
          return [undefined, map] as const
        })
        if (ok !== undefined) {
          return yield* new BudgetExceeded({
            tenant,
            limit,
            committed: ok.committed,
            reserved: ok.reserved,
            requested: amount
          })
        }
        const settled = yield* Ref.make(false)
        const settle = (spend: number) =>
          Effect.flatMap(Ref.getAndSet(settled, true), (done) =>
            done
              ? Effect.void
              : Ref.update(accounts, (map) => {
                  const acc = map.get(tenant) ?? { committed: 0, reserved: 0 }
                  map.set(tenant, {
                    committed: acc.committed + Math.min(Math.max(spend, 0), amount),
                    reserved: acc.reserved - amount
                  })
                  return map
                })
          )
        yield* Effect.addFinalizer(() => settle(0))
        return { tenant, amount, commit: settle } satisfies Reservation
      })
    return Budgets.of({ reserve })
  })

/**
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory = (limits: Readonly<Record<string, number>>): Layer.Layer<Budgets> =>
  Layer.effect(Budgets, makeMemory(limits))

