/**
 * Budget scenarios every `BudgetStore` is tested with through `Budgets` (the memory store, Redis):
 * the same steps under `TestClock`, the same expected figures.
 *
 * @since 0.2.0
 */
import * as Budgets from "@modelgate/core/Budgets"
import type { BudgetExceeded, StoreError } from "@modelgate/core/Errors"
import { TenantId } from "@modelgate/core/ModelCommand"
import { Effect, TestClock } from "effect"

/**
 * The tenant of every scenario.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const tenant: TenantId = TenantId.make("acme")

/**
 * What {@link lateCommitAfterExpiry} saw, in store units (`Budgets.unitsPerCurrency`).
 *
 * @since 0.2.0
 * @category Scenarios
 */
export interface LateCommit {
  /** The balance right after the late settle: committed, reserved, overspent. */
  readonly overLimit: readonly [number, number, number]
  /** The late holder's settlement: committed, overspent. */
  readonly late: readonly [number, number]
  /** The on-time holder's settlement: committed, overspent. */
  readonly onTime: readonly [number, number]
  /** The balance at the end: committed, reserved. */
  readonly after: readonly [number, number]
}

/**
 * The budgets {@link lateCommitAfterExpiry} runs under: a limit of 10 in total, a 1 minute TTL.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const lateCommitOptions: Budgets.Options = {
  tenants: { [tenant]: { limit: 10, period: "total" } },
  reservationTtl: "1 minute"
}

const units = (x: number) => Math.round(x * Budgets.unitsPerCurrency)

/**
 * A holder reserves 8 and outlives its reservation (1 minute of `TestClock`); the expired amount is
 * reserved again by another call (8), then the late holder settles all 8: it is committed in full,
 * 6 of it beyond the limit. `whileOver` runs while the tenant is over its limit; then the on-time
 * holder settles 1 within its reservation.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const lateCommitAfterExpiry = <E, R>(
  budgets: Budgets.Service,
  whileOver: Effect.Effect<void, E, R>
): Effect.Effect<LateCommit, E | BudgetExceeded | StoreError, R> =>
  Effect.gen(function* () {
    const late = yield* budgets.reserve(tenant, 8)
    yield* TestClock.adjust("1 minute")
    const next = yield* budgets.reserve(tenant, 8)
    const settlement = yield* late.settle(8)
    const balance = yield* budgets.balance(tenant)
    yield* whileOver
    const onTime = yield* next.settle(1)
    const after = yield* budgets.balance(tenant)
    return {
      overLimit: [units(balance.committed), units(balance.reserved), units(balance.overspent)],
      late: [units(settlement.committed), units(settlement.overspent)],
      onTime: [units(onTime.committed), units(onTime.overspent)],
      after: [units(after.committed), units(after.reserved)]
    }
  })

/**
 * What {@link lateCommitAfterExpiry} must see: all 8 counted with 6 beyond the limit, no overspend
 * for the on-time settle, 9 committed and nothing reserved at the end.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const lateCommitExpected: LateCommit = {
  overLimit: [units(8), units(8), units(6)],
  late: [units(8), units(6)],
  onTime: [units(1), 0],
  after: [units(9), 0]
}
