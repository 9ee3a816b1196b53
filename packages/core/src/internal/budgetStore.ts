/**
 * The in-memory `BudgetStore`: one process, every operation atomic because it runs synchronously.
 * Accounts are integers (see `Budgets.unitsPerCurrency`), so `committed + reserved ≤ limit` is
 * exact, never off by a float rounding.
 */
import { Effect } from "effect"
import type { BudgetStore, CommitRequest, ReleaseRequest, ReserveOutcome, ReserveRequest } from "../Budgets.js"

interface Held {
  readonly amount: number
  readonly expiresAt: number
}

interface Account {
  committed: number
  reserved: number
  readonly reservations: Map<string, Held>
  expiresAt: number
}

/** Frees the reservations of `account` whose holder never settled them (a crashed process). */
const purge = (account: Account, now: number) => {
  for (const [id, held] of account.reservations) {
    if (held.expiresAt <= now) {
      account.reservations.delete(id)
      account.reserved -= held.amount
    }
  }
}

/** @internal */
export const makeMemoryStore = (): BudgetStore & { readonly size: Effect.Effect<number> } => {
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
      account = { committed: 0, reserved: 0, reservations: new Map(), expiresAt: r.accountExpiresAt }
      accounts.set(r.account, account)
      nextSweep = Math.min(nextSweep, r.accountExpiresAt)
    }
    purge(account, r.now)
    if (account.committed + account.reserved + r.amount > r.limit) {
      return { _tag: "Rejected", committed: account.committed, reserved: account.reserved }
    }
    account.reserved += r.amount
    account.reservations.set(r.id, { amount: r.amount, expiresAt: r.expiresAt })
    account.expiresAt = Math.max(account.expiresAt, r.accountExpiresAt)
    return { _tag: "Reserved", committed: account.committed, reserved: account.reserved }
  }
  const settle = (account: string, id: string, spend: number) => {
    const acc = accounts.get(account)
    if (acc === undefined) return
    const held = acc.reservations.get(id)
    if (held !== undefined) {
      acc.reservations.delete(id)
      acc.reserved -= held.amount
      acc.committed += Math.min(Math.max(spend, 0), held.amount)
    } else {
      // The reservation expired before its holder settled: the money was still spent.
      acc.committed += Math.max(spend, 0)
    }
  }
  return {
    reserve: (r) => Effect.sync(() => reserve(r)),
    commit: (r: CommitRequest) => Effect.sync(() => settle(r.account, r.id, Math.min(r.spend, r.amount))),
    release: (r: ReleaseRequest) => Effect.sync(() => settle(r.account, r.id, 0)),
    balance: (account, now) =>
      Effect.sync(() => {
        const acc = accounts.get(account)
        if (acc === undefined) return { committed: 0, reserved: 0 }
        purge(acc, now)
        return { committed: acc.committed, reserved: acc.reserved }
      }),
    size: Effect.sync(() => accounts.size)
  }
}
