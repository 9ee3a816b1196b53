/**
 * `BudgetStore` on Redis: `reserve`, `commit`, `release` and `balance` are one Lua script each
 * (atomic, one round trip), on integer store units, with the memory store's semantics.
 *
 * @internal
 */
import * as BudgetStore from "@modelgate/core/BudgetStore"
import { Effect } from "effect"
import { bad, type Client, int, ints } from "./client.js"
import * as BudgetScripts from "./budgetScripts.js"
import type { Epoch } from "./epoch.js"

/** What a budget store had seen committed when Redis came back empty (store units). @internal */
export interface LostSpend {
  readonly account: string
  readonly committedUnits: number
}

/**
 * @internal
 *
 * With an `epoch`, the store keeps the last committed amount it saw per account and, when the epoch
 * reports a loss, hands them to `onLoss` (and logs them): the spend Redis forgot.
 */
export const makeBudgetStore = (
  client: Client,
  prefix: string,
  epoch?: Epoch,
  onLoss?: (lost: ReadonlyArray<LostSpend>) => void
): BudgetStore.Service => {
  const seen = new Map<string, number>()
  const saw = (account: string, committed: number) => {
    if (epoch !== undefined) seen.set(account, committed)
  }
  epoch?.onLoss(() => {
    const lost = [...seen].flatMap(([account, committedUnits]) =>
      committedUnits > 0 ? [{ account, committedUnits }] : []
    )
    seen.clear()
    onLoss?.(lost)
  })
  const keys = (account: string) => {
    const h = `${prefix}budget:{${account}}`
    return [h, `${h}:r`]
  }
  const settle = (
    operation: string,
    account: string,
    id: string,
    spend: number,
    limit: number,
    retry: boolean,
    maxWaitMs: number | undefined
  ) =>
    client.script(
      "budget",
      operation,
      BudgetScripts.settle,
      keys(account),
      [id, int(spend), int(limit), retry ? "1" : "0"],
      (reply): BudgetStore.CommitOutcome | typeof bad => {
        const v = ints(reply, 2)
        if (v === bad) return bad
        saw(account, v[0] ?? 0)
        return { committed: v[0] ?? 0, overspent: v[1] ?? 0 }
      },
      maxWaitMs
    )
  return BudgetStore.BudgetStore.of({
    reserve: (r) =>
      client.script(
        "budget",
        "reserve",
        BudgetScripts.reserve,
        keys(r.account),
        [
          r.id,
          int(r.amount),
          int(r.limit),
          int(r.now),
          int(r.expiresAt),
          Number.isFinite(r.accountExpiresAt) ? int(r.accountExpiresAt) : "-1"
        ],
        (reply): BudgetStore.ReserveOutcome | typeof bad => {
          const v = ints(reply, 3)
          if (v === bad) return bad
          const committed = v[1] ?? 0
          const reserved = v[2] ?? 0
          saw(r.account, committed)
          return v[0] === 1 ? { _tag: "Reserved", committed, reserved } : { _tag: "Rejected", committed, reserved }
        },
        // never waits past the caller's deadline (the caller releases the id if the answer is lost)
        r.deadline === undefined ? undefined : r.deadline - r.now
      ),
    commit: (r) =>
      settle(
        "commit",
        r.account,
        r.id,
        Math.max(0, Math.min(r.spend, r.amount)),
        r.limit,
        r.retry === true,
        r.maxWaitMs
      ),
    release: (r) => Effect.asVoid(settle("release", r.account, r.id, 0, 0, false, r.maxWaitMs)),
    balance: (account, now) =>
      client.script(
        "budget",
        "balance",
        BudgetScripts.balance,
        keys(account),
        [int(now)],
        (reply): BudgetStore.AccountBalance | typeof bad => {
          const v = ints(reply, 3)
          return v === bad ? bad : { committed: v[0] ?? 0, reserved: v[1] ?? 0, overspent: v[2] ?? 0 }
        }
      )
  })
}
