/**
 * The data types of module `BudgetStore` (re-exported there): below both `BudgetStore` and the
 * private fast path (`internal/fastPath`) that the memory store attaches, so neither imports the
 * other back.
 */
import type { Effect } from "effect"
import type { StoreError } from "../Errors.js"
import type { Permit, Pool } from "./permitTypes.js"

/**
 * @since 0.2.0
 * @category Models
 */
export interface ReserveRequest {
  /** Tenant and window, e.g. `acme/m2026-11`. */
  readonly account: string
  /** Unique across processes sharing the store. */
  readonly id: string
  /** Store units. */
  readonly amount: number
  /** Store units. */
  readonly limit: number
  /** Epoch millis (the caller's `Clock`). */
  readonly now: number
  /** Epoch millis when an unsettled reservation is freed (its holder is presumed crashed). */
  readonly expiresAt: number
  /** Epoch millis when the account's window is over and it may be forgotten; `Infinity` for never. */
  readonly accountExpiresAt: number
  /**
   * Epoch millis (the caller's `Clock`) after which the caller no longer waits: a store with I/O
   * fails with `StoreError` ("timed out") by then at the latest, even within its command timeout.
   */
  readonly deadline?: number | undefined
}

/**
 * What `reserve` did, with the account as it stands after it (store units). `Rejected` reserved
 * nothing.
 *
 * @since 0.2.0
 * @category Models
 */
export type ReserveOutcome =
  | { readonly _tag: "Reserved"; readonly committed: number; readonly reserved: number }
  | { readonly _tag: "Rejected"; readonly committed: number; readonly reserved: number }

/**
 * @since 0.2.0
 * @category Models
 */
export interface CommitRequest {
  readonly account: string
  readonly id: string
  /** The reserved amount (store units). `spend` may exceed it: all of the spend is counted. */
  readonly amount: number
  /** Store units. */
  readonly spend: number
  /**
   * The account's limit (store units), as given to `reserve`: the spend a commit adds beyond it is
   * also counted as `overspent`.
   */
  readonly limit: number
  /**
   * A retry of a commit whose answer was lost (sent before the reservation expires): when the
   * reservation is gone, the first commit landed and this one counts nothing (instead of counting
   * as a late commit). This makes a retried commit idempotent without keeping settled ids.
   *
   * @since 0.2.0
   */
  readonly retry?: boolean | undefined
  /**
   * The most the caller waits for the answer (ms): a store with I/O fails with `StoreError`
   * ("timed out") by then, even within its command timeout. Absent: the store's own timeout.
   *
   * @since 0.2.0
   */
  readonly maxWaitMs?: number | undefined
}

/**
 * What `commit` did, in store units: spend added to `committed` (all of it), and the part of it
 * that did not fit under the limit (`overspent`, counted in `committed` too). A commit whose account
 * is gone (its window is over) counts nothing: `committed` 0, all of it `overspent`.
 *
 * @since 0.2.0
 * @category Models
 */
export interface CommitOutcome {
  readonly committed: number
  readonly overspent: number
}

/**
 * @since 0.2.0
 * @category Models
 */
export interface ReleaseRequest {
  readonly account: string
  readonly id: string
  /** As `CommitRequest.maxWaitMs`. */
  readonly maxWaitMs?: number | undefined
}

/**
 * Committed, live reserved and overspent store units of an account.
 *
 * @since 0.2.0
 * @category Models
 */
export interface AccountBalance {
  readonly committed: number
  readonly reserved: number
  /** Of `committed`, the spend that did not fit under the limit when it was committed. */
  readonly overspent: number
}

/**
 * The operations of a budget store. Each is atomic on one account and one round trip.
 *
 * - `reserve`: drop the account's expired reservations, then add the reservation only if
 *   `committed + reserved + amount ≤ limit`; report the account either way.
 * - `commit`: remove the reservation and add all of `spend` to committed, also beyond the
 *   reservation's amount and after the reservation expired (its holder outlived it; its amount may
 *   have been reserved again). The part that does not fit under the limit (room: `limit -
 *   committed - reserved` before the commit, plus the reservation's own amount while it is live) is
 *   also added to the account's `overspent`. Reports both.
 * - `release`: remove the reservation (no spend). Unknown ids are ignored by `commit` and `release`.
 * - A `commit` with `retry` (its first attempt's answer was lost) counts nothing when the
 *   reservation is gone: `Budgets` retries a commit only before the reservation expires, so a
 *   missing reservation then means the first attempt landed.
 * - `balance`: the account at `now` (expired reservations not counted).
 *
 * The memory store also answers without running an Effect (a private fast path `Budgets` reads);
 * a store that can fail or wait has none, so that a store error always reaches the caller as
 * `StoreError`.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  readonly reserve: (request: ReserveRequest) => Effect.Effect<ReserveOutcome, StoreError>
  readonly commit: (request: CommitRequest) => Effect.Effect<CommitOutcome, StoreError>
  readonly release: (request: ReleaseRequest) => Effect.Effect<void, StoreError>
  readonly balance: (account: string, now: number) => Effect.Effect<AccountBalance, StoreError>
}

/**
 * What a joint admission did, all or nothing: `Admitted` holds the reservation and the permit;
 * `Rejected` (the budget refused: its balance) and `NoPermit` (none free now) hold nothing.
 *
 * @since 0.2.0
 * @category SPI
 */
export type JointOutcome =
  | { readonly _tag: "Admitted"; readonly permit: Permit }
  | { readonly _tag: "Rejected"; readonly committed: number; readonly reserved: number }
  | { readonly _tag: "NoPermit" }

/**
 * For store implementers (SPI, not called by applications): a shared budget store (I/O) that
 * reserves and takes a permit of a pool on its own connection in one atomic store operation (one
 * round trip). `jointWith` answers the operation for `pool`, or `undefined` when `pool` is not on
 * that connection. The operation never waits past `request.deadline`; a failed one (a lost or late
 * answer) gives back whatever it may have taken, without waiting. A store attaches it under
 * `Symbol.for("@modelgate/core/FastPath")` (as `@modelgate/adapters`' Redis store does); `Budgets`
 * reads it there.
 *
 * @since 0.2.0
 * @category SPI
 */
export interface Joint {
  readonly _tag: "BudgetStoreJoint"
  readonly jointWith: (
    pool: Pool
  ) => ((request: ReserveRequest, key: string, until: number) => Effect.Effect<JointOutcome, StoreError>) | undefined
}
