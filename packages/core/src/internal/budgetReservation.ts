/**
 * The reservation of `Budgets`: store units, how a reservation settles (commit or release, once),
 * what a store failure does to a settle (a release is logged and counted; a commit is retried in the
 * background, `pending` meanwhile), and the overspend report of a late commit.
 */
import { Cause, Clock, Duration, Effect, Metric } from "effect"
import type { Reservation, Settlement } from "./budgetTypes.js"
import * as Store from "../BudgetStore.js"
import type { TenantId } from "../ModelCommand.js"
import * as FastPath from "./fastPath.js"
import { counter } from "./counter.js"

/** Metrics of budgets (documented at `Budgets.metrics`). */
export const metrics = {
  settleFailures: counter(
    "modelgate.budget.settle_failures",
    "Budget settlements (commit or release) the store could not record"
  ),
  overspend: counter(
    "modelgate.budget.overspend_usd",
    "Spend committed beyond a tenant's budget limit (more than reserved, or after the reservation expired)"
  )
} as const

/**
 * `amount` in store units when it is a whole number of them up to float noise, else `undefined`.
 * Amounts the gateway computes (costs, reservations) are whole units divided by 10⁹; read back, they
 * are off the whole unit by float noise that grows with the amount (past ~10¹⁰ units it exceeds any
 * fixed tolerance), so the tolerance is relative: a few ulps of the product, 10⁻⁶ unit at least.
 */
const wholeUnits = (amount: number): number | undefined => {
  const x = amount * Store.unitsPerCurrency
  const whole = Math.round(x)
  return Math.abs(x - whole) <= Math.max(1e-6, Math.abs(x) * 8 * Number.EPSILON) ? whole : undefined
}
/** Currency → store units for what is reserved: rounded up, a whole number of units read back exactly. */
export const reserveUnits = (amount: number) =>
  Math.max(0, wholeUnits(amount) ?? Math.ceil(amount * Store.unitsPerCurrency))
/** Currency → store units for a limit: rounded down, a whole number of units read back exactly. */
export const limitUnits = (amount: number) => wholeUnits(amount) ?? Math.floor(amount * Store.unitsPerCurrency)
export const fromUnits = (units: number) => units / Store.unitsPerCurrency

/** Store units of spend for `actual` (all of it, also beyond the reservation's `units`). */
const spendUnits = (actual: number, units: number) =>
  // A non-finite actual is a bug upstream: charge the whole reservation rather than nothing.
  Number.isFinite(actual) ? Math.max(0, Math.round(actual * Store.unitsPerCurrency)) : units

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
const settleNothingFast: FastPath.ReservationFast = { _tag: "Reservation", settle: () => nothingSettled }

/** A reservation that tracks nothing (an unlimited tenant): both settles do nothing. */
export const settledReservation = (tenant: TenantId, amount: number): Reservation =>
  FastPath.attach({ tenant, amount, settle: settleNothing }, settleNothingFast)

/** The defect of a negative or NaN amount (thrown by the fast path, died with by `reserve`). */
export const negativeAmount = (amount: number) =>
  new Cause.RuntimeException(`Budgets.reserve: amount must be ≥ 0, got ${amount}`)

/**
 * Reports an overspend found by a settle: adds `settlement.overspent` to `metrics.overspend` and
 * logs a warning (tenant only), then succeeds with `settlement`; with 0 it does nothing. The engine
 * runs it after a synchronous settle.
 */
export const reportOverspend = (tenant: TenantId, settlement: Settlement): Effect.Effect<Settlement> =>
  settlement.overspent > 0 ? overspent(tenant, settlement) : Effect.succeed(settlement)

/** A commit beyond the limit: counted in the metric and logged (tenant only). */
const overspent = (tenant: TenantId, settlement: Settlement) =>
  Effect.as(
    Effect.zipRight(
      Metric.incrementBy(metrics.overspend, settlement.overspent),
      Effect.annotateLogs(Effect.logWarning("budget overspent: a commit exceeded the tenant's limit"), { tenant })
    ),
    settlement
  )

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

const settlementOf = (outcome: Store.CommitOutcome): Settlement => ({
  committed: fromUnits(outcome.committed),
  overspent: fromUnits(outcome.overspent)
})

/**
 * A commit the store did not answer: retried in the background (a daemon fiber, backing off from
 * 100 ms to 5 s) until a second before the reservation expires, as `retry` commits: one whose first
 * attempt did land finds its reservation gone and counts nothing twice. The call's settlement says
 * `pending` meanwhile; a commit still lost at the end is logged and counted in `settleFailures`
 * (the store frees the reservation at its expiry).
 */
const commitPending = (
  store: Store.Service,
  tenant: TenantId,
  request: Store.CommitRequest,
  expiresAt: number
): Effect.Effect<Settlement> => {
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
    outcome === undefined ? settleFailed(tenant, "commit") : reportOverspend(tenant, settlementOf(outcome))
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

/** What a reservation holds in the store. */
export interface Held {
  readonly tenant: TenantId
  readonly account: string
  readonly id: string
  /** Store units reserved. */
  readonly units: number
  /** The account's limit, store units. */
  readonly limit: number
  readonly expiresAt: number
  /** Epoch ms by which the caller waits for the store at most (`settleGraceMs` at least). */
  readonly deadline?: number | undefined
}

/** One settle through the store's Effect operations, waiting at most `maxWaitMs` (the store's own bound otherwise). */
const settleWithin = (store: Store.Service, held: Held, spend: number, maxWaitMs: number | undefined) => {
  const { account, id, limit, tenant, units } = held
  if (spend === 0) {
    return Effect.catchAll(
      Effect.as(store.release(maxWaitMs === undefined ? { account, id } : { account, id, maxWaitMs }), nothingSettled),
      () => settleFailed(tenant, "release")
    )
  }
  const request: Store.CommitRequest = { account, id, amount: units, spend, limit }
  return Effect.matchEffect(store.commit(maxWaitMs === undefined ? request : { ...request, maxWaitMs }), {
    onFailure: () => commitPending(store, tenant, request, held.expiresAt),
    onSuccess: (outcome) => {
      const settlement = settlementOf(outcome)
      return outcome.overspent > 0 ? overspent(tenant, settlement) : Effect.succeed(settlement)
    }
  })
}

/**
 * The reservation of `held` over `store`: `settle` (once; later settles return nothing settled),
 * and, over a store without I/O (`fast`), the same settle done at once (sharing the idempotence).
 */
export const makeReservation = (
  store: Store.Service,
  fast: FastPath.BudgetStoreFast | undefined,
  held: Held
): Reservation => new HeldReservation(store, held, fast)

/**
 * A reservation: settled through the store's Effect operations, or at once over a store without
 * I/O (its fast path, made when first read, so that a reservation in flight holds only its state).
 * Its state is private: a reservation shows its tenant and amount.
 */
class HeldReservation implements Reservation {
  readonly tenant: TenantId
  readonly amount: number
  readonly #store: Store.Service
  readonly #held: Held
  readonly #fast: FastPath.BudgetStoreFast | undefined
  /** Settled (by either settle): later settles settle nothing. */
  #settled = false
  #fastSettle: FastPath.ReservationFast | undefined = undefined

  constructor(store: Store.Service, held: Held, fast: FastPath.BudgetStoreFast | undefined) {
    this.tenant = held.tenant
    this.amount = fromUnits(held.units)
    this.#store = store
    this.#held = held
    this.#fast = fast
  }

  get [FastPath.TypeId](): FastPath.ReservationFast | undefined {
    const fast = this.#fast
    if (fast === undefined) return undefined
    if (this.#fastSettle === undefined) {
      this.#fastSettle = { _tag: "Reservation", settle: (actual) => this.#settleNow(fast, actual) }
    }
    return this.#fastSettle
  }

  settle(actual: number): Effect.Effect<Settlement> {
    return Effect.suspend(() => {
      if (this.#settled) return succeedNothingSettled
      this.#settled = true
      const store = this.#store
      const held = this.#held
      const spend = spendUnits(actual, held.units)
      // The caller waits for the store at most until its deadline (and `settleGraceMs` at least): a
      // commit not answered by then is pending and retried in the background.
      const deadline = held.deadline
      if (deadline === undefined) return Effect.uninterruptible(settleWithin(store, held, spend, undefined))
      return Effect.clockWith((clock) =>
        Effect.uninterruptible(
          settleWithin(store, held, spend, Math.max(settleGraceMs, deadline - clock.unsafeCurrentTimeMillis()))
        )
      )
    })
  }

  #settleNow(fast: FastPath.BudgetStoreFast, actual: number): Settlement {
    if (this.#settled) return nothingSettled
    this.#settled = true
    const held = this.#held
    const spend = spendUnits(actual, held.units)
    if (spend === 0) {
      fast.release({ account: held.account, id: held.id })
      return nothingSettled
    }
    return settlementOf(
      fast.commit({ account: held.account, id: held.id, amount: held.units, spend, limit: held.limit })
    )
  }
}
