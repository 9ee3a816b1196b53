/**
 * The persistence seam of `Budgets`: accounts of integer store units, with atomic reserve, commit
 * and release. The memory store lives here; a Redis store implements the same four operations,
 * each one round trip (one Lua script).
 *
 * Details
 *
 * - Amounts are integers of {@link unitsPerCurrency} (billionths of a currency unit), so the
 *   invariant `committed + reserved ≤ limit` is exact, never off by a float rounding.
 * - An account is one tenant in one budget window, keyed `<tenant>/<window>` (e.g.
 *   `acme/m2026-11`, `acme/d2026-11-03`, `acme/total`).
 * - Every reservation carries an expiry: an unsettled reservation (its holder crashed) frees its
 *   amount at `expiresAt`. An account may be forgotten once its window is over
 *   (`accountExpiresAt`) and it holds no reservation.
 * - A commit that arrives after its reservation expired counts only as far as the limit allows
 *   (`committed + reserved ≤ limit` holds even then); the rest is kept apart as `overspent`.
 * - Every operation fails with `StoreError` (`store: "budget"`) when the store cannot answer, and
 *   must bound its own wait (a network store times out its round trip): `Budgets` fails closed on
 *   it.
 *
 * @since 0.2.0
 */
import { Context, Effect, Layer } from "effect"
import type {
  CommitOutcome,
  CommitRequest,
  ReleaseRequest,
  ReserveOutcome,
  ReserveRequest,
  Service
} from "./internal/budgetStoreTypes.js"
import * as FastPath from "./internal/fastPath.js"

export type {
  AccountBalance,
  CommitOutcome,
  CommitRequest,
  Joint,
  JointOutcome,
  ReleaseRequest,
  ReserveOutcome,
  ReserveRequest,
  Service
} from "./internal/budgetStoreTypes.js"

/**
 * Store units per currency unit: amounts are integers of 10⁻⁹ (limits up to about 9 million).
 *
 * @since 0.2.0
 * @category Constants
 */
export const unitsPerCurrency = 1_000_000_000

/**
 * @since 0.2.0
 * @category Context
 */
export class BudgetStore extends Context.Tag("@modelgate/core/BudgetStore")<BudgetStore, Service>() {}

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

/**
 * The memory store, plus the number of accounts it holds (to observe that finished windows are
 * forgotten).
 *
 * @since 0.2.0
 * @category Models
 */
export interface MemoryStore extends Service {
  readonly size: Effect.Effect<number>
}

interface Held {
  readonly amount: number
  readonly expiresAt: number
}

interface Account {
  committed: number
  reserved: number
  overspent: number
  readonly reservations: Map<string, Held>
  /** A lower bound of the earliest expiry among `reservations` (`Infinity` when none can expire). */
  nextExpiry: number
  expiresAt: number
}

/** Frees the reservations of `account` whose holder never settled them (a crashed process). */
const purge = (account: Account, now: number) => {
  if (now < account.nextExpiry) return
  let next = Infinity
  for (const [id, held] of account.reservations) {
    if (held.expiresAt <= now) {
      account.reservations.delete(id)
      account.reserved -= held.amount
    } else if (held.expiresAt < next) next = held.expiresAt
  }
  account.nextExpiry = next
}

const unsafeMakeMemory = (): MemoryStore => {
  const accounts = new Map<string, Account>()
  let nextSweep = Infinity
  /** Forgets accounts whose window is over and which hold nothing (bounded memory over time). */
  const sweep = (now: number) => {
    if (now < nextSweep) return
    nextSweep = Infinity
    for (const [key, account] of accounts) {
      purge(account, now)
      if (account.expiresAt <= now && account.reservations.size === 0) accounts.delete(key)
      else if (account.expiresAt > now) nextSweep = Math.min(nextSweep, account.expiresAt)
      else nextSweep = Math.min(nextSweep, now + 60_000)
    }
  }
  const reserve = (r: ReserveRequest): ReserveOutcome => {
    sweep(r.now)
    let account = accounts.get(r.account)
    if (account === undefined) {
      account = {
        committed: 0,
        reserved: 0,
        overspent: 0,
        reservations: new Map(),
        nextExpiry: Infinity,
        expiresAt: r.accountExpiresAt
      }
      accounts.set(r.account, account)
      nextSweep = Math.min(nextSweep, r.accountExpiresAt)
    }
    purge(account, r.now)
    if (account.committed + account.reserved + r.amount > r.limit) {
      return { _tag: "Rejected", committed: account.committed, reserved: account.reserved }
    }
    account.reserved += r.amount
    account.reservations.set(r.id, { amount: r.amount, expiresAt: r.expiresAt })
    if (r.expiresAt < account.nextExpiry) account.nextExpiry = r.expiresAt
    if (r.accountExpiresAt > account.expiresAt) account.expiresAt = r.accountExpiresAt
    return { _tag: "Reserved", committed: account.committed, reserved: account.reserved }
  }
  /** Settles `id` with `spend` (0 releases); `limit` bounds the spend of an expired reservation. */
  const settle = (account: string, id: string, spend: number, limit: number): CommitOutcome => {
    const acc = accounts.get(account)
    // The account was forgotten (its window is over): nothing can be counted any more.
    if (acc === undefined) return { committed: 0, overspent: spend }
    const held = acc.reservations.get(id)
    if (held !== undefined) {
      acc.reservations.delete(id)
      acc.reserved -= held.amount
      const committed = Math.min(spend, held.amount)
      acc.committed += committed
      return { committed, overspent: 0 }
    }
    // The reservation expired before its holder settled: the money was spent, but its amount may
    // have been reserved again. Count what still fits the limit; keep the rest apart. (Expired
    // reservations not purged yet still count as reserved here: the clamp errs on the safe side.)
    const committed = Math.min(spend, Math.max(0, limit - acc.committed - acc.reserved))
    acc.committed += committed
    acc.overspent += spend - committed
    return { committed, overspent: spend - committed }
  }
  const commit = (r: CommitRequest): CommitOutcome =>
    r.retry === true && accounts.get(r.account)?.reservations.has(r.id) !== true
      ? { committed: 0, overspent: 0 }
      : settle(r.account, r.id, Math.max(0, Math.min(r.spend, r.amount)), r.limit)
  const release = (r: ReleaseRequest): void => {
    settle(r.account, r.id, 0, 0)
  }
  const store: MemoryStore = {
    reserve: (r) => Effect.sync(() => reserve(r)),
    commit: (r) => Effect.sync(() => commit(r)),
    release: (r) => Effect.sync(() => release(r)),
    balance: (account, now) =>
      Effect.sync(() => {
        const acc = accounts.get(account)
        if (acc === undefined) return { committed: 0, reserved: 0, overspent: 0 }
        purge(acc, now)
        return { committed: acc.committed, reserved: acc.reserved, overspent: acc.overspent }
      }),
    size: Effect.sync(() => accounts.size)
  }
  return FastPath.attach(store, { _tag: "BudgetStore", reserve, commit, release })
}

/**
 * A store in this process's memory: every operation is synchronous, hence atomic, and never fails
 * (`Budgets` over it reserves and settles without running an Effect). Accounts of finished windows
 * are forgotten once they hold no reservation.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeMemory: Effect.Effect<MemoryStore> = Effect.sync(unsafeMakeMemory)

/**
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<BudgetStore> = Layer.effect(BudgetStore, makeMemory)
