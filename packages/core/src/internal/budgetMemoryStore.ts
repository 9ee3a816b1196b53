/**
 * The budget store in this process's memory (module `BudgetStore`, `layerMemory`): synchronous,
 * hence atomic; its synchronous operations are attached for the fast path.
 */
import { Effect } from "effect"
import type {
  CommitOutcome,
  CommitRequest,
  ReleaseRequest,
  ReserveOutcome,
  ReserveRequest,
  Service
} from "./budgetStoreTypes.js"
import * as FastPath from "./fastPath.js"

/**
 * The memory store, plus the number of accounts it holds (to observe that finished windows are
 * forgotten).
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
  /**
   * Settles `id` with `spend` (0 releases): all of it is counted as committed; the part that did
   * not fit under `limit` is also added to `overspent` (see `CommitOutcome`).
   */
  const settle = (account: string, id: string, spend: number, limit: number): CommitOutcome => {
    const acc = accounts.get(account)
    // The account was forgotten (its window is over): nothing can be counted any more.
    if (acc === undefined) return { committed: 0, overspent: spend }
    // Room under the limit beside what is committed and reserved (expired reservations not purged
    // yet still count as reserved here: the overspend errs on the safe side).
    const room = Math.max(0, limit - acc.committed - acc.reserved)
    const held = acc.reservations.get(id)
    let overspent: number
    if (held !== undefined) {
      acc.reservations.delete(id)
      acc.reserved -= held.amount
      // Within its reservation a spend always fits; what the provider reported beyond it may not.
      overspent = Math.max(0, spend - held.amount - room)
    } else {
      // The reservation expired before its holder settled: the money was spent, but its amount may
      // have been reserved again.
      overspent = Math.max(0, spend - room)
    }
    acc.committed += spend
    acc.overspent += overspent
    return { committed: spend, overspent }
  }
  const commit = (r: CommitRequest): CommitOutcome =>
    r.retry === true && accounts.get(r.account)?.reservations.has(r.id) !== true
      ? { committed: 0, overspent: 0 }
      : settle(r.account, r.id, Math.max(0, r.spend), r.limit)
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
 */
export const makeMemory: Effect.Effect<MemoryStore> = Effect.sync(unsafeMakeMemory)
