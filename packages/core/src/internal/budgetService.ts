/**
 * `Budgets` over a `BudgetStore`: which budget a tenant has, the store request of a reservation,
 * the one uninterruptible round trip that reserves, the balance of a window, and over a store
 * without I/O the same reserve done at once (the private fast path).
 */
import { Cause, Duration, Effect, FiberRef, RuntimeFlags } from "effect"
import type { Balance, Options, Reservation, Service, TenantBudget } from "./budgetTypes.js"
import type * as Store from "../BudgetStore.js"
import { BudgetExceeded, type StoreError } from "../Errors.js"
import type { TenantId } from "../ModelCommand.js"
import {
  fromUnits,
  limitUnits,
  makeReservation,
  negativeAmount,
  reserveUnits,
  settledReservation
} from "./budgetReservation.js"
import { windowCache } from "./budgetWindow.js"
import * as FastPath from "./fastPath.js"

/** The rejection of an undeclared tenant under the `"reject"` policy. */
const rejected = (tenant: TenantId, amount: number) =>
  new BudgetExceeded({ tenant, limit: 0, committed: 0, reserved: 0, requested: amount, reason: "undeclared_tenant" })

const exceeded = (tenant: TenantId, amount: number, budget: TenantBudget, outcome: Store.ReserveOutcome) =>
  new BudgetExceeded({
    tenant,
    limit: budget.limit,
    committed: fromUnits(outcome.committed),
    reserved: fromUnits(outcome.reserved),
    requested: amount
  })

export const unlimitedBalance = (tenant: TenantId, limit: number): Balance => ({
  tenant,
  limit,
  committed: 0,
  reserved: 0,
  overspent: 0,
  period: undefined,
  windowStart: -Infinity,
  windowEnd: Infinity
})

/**
 * The service over `store` (options already validated; `instance` makes reservation ids unique
 * across processes sharing the store).
 */
export const makeService = (options: Options, store: Store.Service, instance: string, ttl: Duration.Duration) => {
  const fast = FastPath.budgetStore(store)
  const ttlMs = Duration.toMillis(ttl)
  const budgets = new Map<string, TenantBudget>(Object.entries(options.tenants ?? {}))
  const undeclared = options.undeclaredTenants ?? "reject"
  const budgetOf = (tenant: TenantId) => budgets.get(tenant) ?? undeclared
  const windowAt = windowCache()
  let seq = 0

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
      expiresAt: now + ttlMs,
      accountExpiresAt: window.end + ttlMs,
      deadline
    }
  }

  const reservationOf = (tenant: TenantId, request: Store.ReserveRequest, deadline?: number): Reservation =>
    makeReservation(store, fast, {
      tenant,
      account: request.account,
      id: request.id,
      units: request.amount,
      limit: request.limit,
      expiresAt: request.expiresAt,
      deadline
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
            Effect.zipRight(Effect.forkDaemon(Effect.ignore(store.release({ account, id }))), Effect.failCause(cause)),
          onSuccess: (outcome): Effect.Effect<Reservation, BudgetExceeded> => {
            if (outcome._tag === "Rejected") return Effect.fail(exceeded(tenant, amount, budget, outcome))
            const reservation = reservationOf(tenant, request, deadline)
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

  const reserve: Service["reserve"] = (tenant, amount, deadline) => {
    if (!(amount >= 0)) return Effect.die(negativeAmount(amount))
    const budget = budgetOf(tenant)
    if (budget === "unlimited") return Effect.succeed(settledReservation(tenant, amount))
    if (budget === "reject") return Effect.fail(rejected(tenant, amount))
    return Effect.clockWith((clock) => reserveAt(tenant, amount, budget, clock.unsafeCurrentTimeMillis(), deadline))
  }

  const balance: Service["balance"] = (tenant) => {
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

  const service: Service = {
    reserve,
    balance,
    isLimited: (tenant) => budgetOf(tenant) !== "unlimited",
    reservationTtl: ttl
  }
  if (fast === undefined) {
    const joint = FastPath.budgetStoreJoint(store)
    return joint === undefined
      ? service
      : FastPath.attach(service, jointOf(joint, { budgetOf, requestAt, reservationOf }))
  }
  // A store without I/O: the same reserve, done at once (same account, window, TTL and ids).
  const reserveNow = (tenant: TenantId, amount: number, now: number): Reservation | BudgetExceeded => {
    if (!(amount >= 0)) throw negativeAmount(amount)
    const budget = budgetOf(tenant)
    if (budget === "unlimited") return settledReservation(tenant, amount)
    if (budget === "reject") return rejected(tenant, amount)
    const request = requestAt(tenant, amount, budget, now)
    const outcome = fast.reserve(request)
    if (outcome._tag === "Rejected") return exceeded(tenant, amount, budget, outcome)
    return reservationOf(tenant, request)
  }
  return FastPath.attach(service, { _tag: "Budgets", reserve: reserveNow })
}

/** What {@link jointOf} needs of the service. */
interface Parts {
  readonly budgetOf: (tenant: TenantId) => TenantBudget | "unlimited" | "reject"
  readonly requestAt: (
    tenant: TenantId,
    amount: number,
    budget: TenantBudget,
    now: number,
    deadline?: number
  ) => Store.ReserveRequest
  readonly reservationOf: (tenant: TenantId, request: Store.ReserveRequest, deadline?: number) => Reservation
}

/**
 * The reservation and the permit in one store operation (a shared store that can: the private
 * `BudgetsJoint`): same account, window, TTL and ids as `reserve`.
 */
const jointOf = (joint: FastPath.BudgetStoreJoint, parts: Parts): FastPath.BudgetsJoint => ({
  _tag: "BudgetsJoint",
  jointWith: (pool) => {
    const op = joint.jointWith(pool)
    if (op === undefined) return undefined
    return (tenant, amount, deadline) => {
      if (!(amount >= 0)) return Effect.die(negativeAmount(amount))
      const budget = parts.budgetOf(tenant)
      // Nothing to reserve in the store: the permit alone, taken the usual way.
      if (budget === "unlimited") return succeedUndefined
      if (budget === "reject") return Effect.succeed(rejected(tenant, amount))
      return Effect.clockWith((clock) => {
        const request = parts.requestAt(tenant, amount, budget, clock.unsafeCurrentTimeMillis(), deadline)
        return Effect.map(op(request, tenant, deadline), (outcome) => {
          if (outcome._tag === "Admitted") {
            return { reservation: parts.reservationOf(tenant, request, deadline), permit: outcome.permit }
          }
          return outcome._tag === "Rejected" ? exceeded(tenant, amount, budget, outcome) : undefined
        })
      })
    }
  }
})

const succeedUndefined = Effect.succeed(undefined)

const unlimitedReserve = (tenant: TenantId, amount: number) => Effect.succeed(settledReservation(tenant, amount))

/** No limits: reservations always fit and nothing is tracked (`Budgets.layerOff`). */
export const off = (): Service =>
  FastPath.attach<Service>(
    {
      reserve: unlimitedReserve,
      balance: (tenant) => Effect.succeed(unlimitedBalance(tenant, Infinity)),
      isLimited: () => false
    },
    { _tag: "Budgets", reserve: settledReservation }
  )
