/**
 * The one private fast path of the in-memory services: a synchronous implementation attached to a
 * store or service value under {@link TypeId} (Effect's `TypeId` idiom), read back with a type
 * guard. Public interfaces carry only their Effect operations; the engine asks here whether a value
 * also answers at once ("sync accessor if present, else the Effect").
 *
 * Details
 *
 * - {@link attach} defines the slot as a non-enumerable own property: a wrapper made by spreading
 *   the value (`{ ...store, reserve: counted }`) or by `Object.assign` has no slot, so its Effect
 *   operations are always the ones that run. Only the code that built a value attaches to it.
 * - A synchronous implementation does exactly what the value's Effect operations do, on the same
 *   state, and never throws (except the defects its Effect would die with): a value whose
 *   operations can fail or wait (I/O) has none.
 * - One slot, one union ({@link FastPath}); each kind has its accessor below.
 */
import type { TenantId } from "../ModelCommand.js"
import type { ModelTarget, TargetRef } from "../ModelTarget.js"
import type * as Budgets from "./budgetTypes.js"
import type * as BudgetStore from "./budgetStoreTypes.js"
import type { Joint as BudgetStoreJoint, JointOutcome } from "./budgetStoreTypes.js"
import type { BudgetExceeded } from "../Errors.js"
import type * as PermitStore from "./permitTypes.js"
import type { Effect } from "effect"
import type { StoreError } from "../Errors.js"
import type { BreakerState } from "./breakerState.js"
import type { RouteHealth } from "./healthRecord.js"
import type { AttemptSignal } from "./healthTypes.js"

/** The slot's key (shared across copies of this module). */
export const TypeId: unique symbol = Symbol.for("@modelgate/core/FastPath")

export type TypeId = typeof TypeId

/** A budget store without I/O: `reserve`, `commit` and `release` answered at once. */
export interface BudgetStoreFast {
  readonly _tag: "BudgetStore"
  readonly reserve: (request: BudgetStore.ReserveRequest) => BudgetStore.ReserveOutcome
  readonly commit: (request: BudgetStore.CommitRequest) => BudgetStore.CommitOutcome
  readonly release: (request: BudgetStore.ReleaseRequest) => void
}

/**
 * `Budgets.reserve` at the epoch-ms instant `now`, answered at once: the reservation, or the
 * `BudgetExceeded` that `reserve` fails with (returned). A negative or NaN amount throws the defect
 * `reserve` dies with.
 */
export interface BudgetsFast {
  readonly _tag: "Budgets"
  readonly reserve: (tenant: TenantId, amount: number, now: number) => Budgets.Reservation | BudgetExceeded
}

/**
 * A reservation's `settle`, done at once: same rounding and idempotence (the first of the two
 * counts). It does the store part only: an `overspent` above 0 must still be reported
 * (`Budgets` reports it in `settle`; the engine calls its overspend report).
 */
export interface ReservationFast {
  readonly _tag: "Reservation"
  readonly settle: (actual: number) => Budgets.Settlement
}

/**
 * `Concurrency`'s synchronous step: a free permit now (never jumping a queued waiter), or
 * `undefined` when the caller must wait (then it calls `acquire`). An uncapped target gets the
 * shared no-op permit.
 */
export interface ConcurrencyFast {
  readonly _tag: "Concurrency"
  readonly acquire: (tenant: TenantId, workflow?: string | undefined) => PermitStore.Permit | undefined
  readonly acquireTarget: (target: TargetRef) => PermitStore.Permit | undefined
}

/**
 * A permit pool without I/O: a permit of `key` (and sub-key `sub`) if one is free now and no
 * waiter of them is before.
 */
export interface PoolFast {
  readonly _tag: "Pool"
  readonly take: (key: string, sub?: string | undefined) => PermitStore.Permit | undefined
}

/**
 * `Health` operations answered at once, each optional (absent: run the Effect). `isOpen` and
 * `tryAcquire` answer `undefined` for a route they cannot answer now (its breaker is in a store:
 * run the Effect).
 */
export interface HealthFast {
  readonly _tag: "Health"
  readonly isOpen?: ((target: ModelTarget) => boolean | undefined) | undefined
  readonly tryAcquire?: ((target: ModelTarget) => boolean | undefined) | undefined
  /** `record` of a service that records nothing (health off): nothing to run. */
  readonly record?: (() => void) | undefined
  /**
   * `record` at the caller's clock reading `now`: the sample is kept at once; returns what is left
   * to run (a breaker transition, a store to ask), or `undefined` when nothing is.
   */
  readonly recordAt?:
    | ((target: ModelTarget, signal: AttemptSignal, now: number) => Effect.Effect<void> | undefined)
    | undefined
  /** `snapshot` of a target's route at the caller's clock reading `now` (breakers read at once), answered at once. */
  readonly snapshotAt?: ((target: ModelTarget, now: number) => RouteHealth | undefined) | undefined
  /** Whether `snapshotAt` answers now (its breaker store's mirror is in sync); absent: always. */
  readonly snapshotReady?: (() => boolean) | undefined
  /** `onFirstAttempt` at the caller's clock reading `now`. */
  readonly onFirstAttempt?: ((now: number) => void) | undefined
  /** The service keeps no health record (health off): `snapshot` is none for every route, nothing to ask. */
  readonly noRecords?: boolean | undefined
}

/**
 * A breaker store that can answer `get` at once: in memory always, a mirrored shared store while its
 * mirror is in sync (`ready`); otherwise its `get` Effect is asked.
 */
export interface BreakerStoreFast {
  readonly _tag: "BreakerStore"
  /** Whether `get` answers now (a mirror out of sync does not). */
  readonly ready: () => boolean
  readonly get: (route: string) => BreakerState | undefined
}

/**
 * What a joint admission did and the store capability that does it: declared with the store's data
 * types (public as `BudgetStore.JointOutcome` / `BudgetStore.Joint`, so a store in another package
 * implements the same shape).
 */
export type { BudgetStoreJoint, JointOutcome }

/** A call admitted jointly: its reservation and its permit. */
export interface JointAdmitted {
  readonly reservation: Budgets.Reservation
  readonly permit: PermitStore.Permit
}

/**
 * `Budgets.reserve` of `amount` for `tenant` together with the tenant's permit (until `deadline`),
 * in one store operation: both held, the `BudgetExceeded` a refused reservation fails with
 * (returned; nothing held), or `undefined` when it cannot be done jointly (no permit free now, an
 * unlimited tenant): nothing held, the caller takes the two steps.
 */
export type JointAdmit = (
  tenant: TenantId,
  amount: number,
  deadline: number
) => Effect.Effect<JointAdmitted | BudgetExceeded | undefined, StoreError>

/** A `Budgets` service over a {@link BudgetStoreJoint} store. */
export interface BudgetsJoint {
  readonly _tag: "BudgetsJoint"
  readonly jointWith: (pool: PermitStore.Pool) => JointAdmit | undefined
}

/** A `Concurrency` service over a shared store: its tenants' pool (for a joint admission). */
export interface ConcurrencyPools {
  readonly _tag: "ConcurrencyPools"
  readonly tenants: PermitStore.Pool
}

/** Every kind of synchronous implementation (and of shared-store capability). */
export type FastPath =
  | BudgetStoreFast
  | BudgetsFast
  | ReservationFast
  | ConcurrencyFast
  | PoolFast
  | HealthFast
  | BreakerStoreFast
  | BudgetStoreJoint
  | BudgetsJoint
  | ConcurrencyPools

interface Carrier {
  readonly [TypeId]: FastPath
}

const carries = (self: object): self is Carrier => TypeId in self

/**
 * Attaches `fast` to `self` (not enumerable: a spread copy has none) and returns `self`.
 */
export const attach = <T extends object>(self: T, fast: FastPath): T =>
  Object.defineProperty(self, TypeId, { value: fast, enumerable: false, writable: false, configurable: false })

const of = (self: object): FastPath | undefined => (carries(self) ? self[TypeId] : undefined)

/** The budget store's synchronous operations, if it has them. */
export const budgetStore = (store: BudgetStore.Service): BudgetStoreFast | undefined => {
  const fast = of(store)
  return fast?._tag === "BudgetStore" ? fast : undefined
}

/** The budgets service's synchronous `reserve`, if it has one. */
export const budgets = (service: object): BudgetsFast | undefined => {
  const fast = of(service)
  return fast?._tag === "Budgets" ? fast : undefined
}

/** The reservation's synchronous `settle`, if it has one. */
export const reservation = (reservation: Budgets.Reservation): ReservationFast | undefined => {
  const fast = of(reservation)
  return fast?._tag === "Reservation" ? fast : undefined
}

/** The concurrency service's synchronous step, if it has one. */
export const concurrency = (service: object): ConcurrencyFast | undefined => {
  const fast = of(service)
  return fast?._tag === "Concurrency" ? fast : undefined
}

/** The pool's synchronous `take`, if it has one. */
export const pool = (pool: PermitStore.Pool): PoolFast | undefined => {
  const fast = of(pool)
  return fast?._tag === "Pool" ? fast : undefined
}

/** The health service's synchronous operations, if it has any. */
export const health = (service: object): HealthFast | undefined => {
  const fast = of(service)
  return fast?._tag === "Health" ? fast : undefined
}

/** The breaker store's synchronous `get`, if it has one. */
export const breakerStore = (store: object): BreakerStoreFast | undefined => {
  const fast = of(store)
  return fast?._tag === "BreakerStore" ? fast : undefined
}

/** The budget store's joint admission with a permit pool, if it has one. */
export const budgetStoreJoint = (store: BudgetStore.Service): BudgetStoreJoint | undefined => {
  const fast = of(store)
  return fast?._tag === "BudgetStoreJoint" ? fast : undefined
}

/** The budgets service's joint admission, if its store has one. */
export const budgetsJoint = (service: object): BudgetsJoint | undefined => {
  const fast = of(service)
  return fast?._tag === "BudgetsJoint" ? fast : undefined
}

/** The concurrency service's tenants pool, when it is over a shared store. */
export const concurrencyPools = (service: object): ConcurrencyPools | undefined => {
  const fast = of(service)
  return fast?._tag === "ConcurrencyPools" ? fast : undefined
}
