/**
 * The data types of module `Budgets` (re-exported there): below both `Budgets` and its internal
 * split (`budgetService`, `budgetReservation`, `budgetWindow`, `fastPath`), so none of them imports
 * `Budgets` back.
 */
import type { Duration, Effect } from "effect"
import { Schema } from "effect"
import type { BudgetExceeded, StoreError } from "../Errors.js"
import type { TenantId } from "../ModelCommand.js"

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
   * Of the spend, the part that did not fit under the tenant's limit (beyond the reservation, or
   * after it expired, with no room left): counted in `committed` all the same (0 normally).
   */
  readonly overspent: number
  /**
   * The commit could not be recorded yet (the store did not answer): it is retried in the
   * background until shortly before the reservation expires; `committed` is 0 meanwhile.
   * `undefined` otherwise.
   *
   * @since 0.2.0
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
   * Commits `actual` (all of it, also beyond `amount`; the rest of `amount` is refunded); `0` releases. Idempotent: only the
   * first settle counts. Never fails: a store failure is logged (tenant and operation only) and
   * counted, and the store's reservation TTL frees the money. Tells what was counted and what was
   * overspent (see the module doc).
   */
  readonly settle: (actual: number) => Effect.Effect<Settlement>
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
  /** Of `committed`, the spend that did not fit under the limit in this window. */
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
 * Options of `Budgets.make`: the decoded budget configuration (`internal/budgetConfig.ts`), with any `DurationInput` as TTL.
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
