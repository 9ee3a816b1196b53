/**
 * `BudgetStore` on Redis: `reserve`, `commit`, `release` and `balance` are one Lua script each
 * (atomic, one round trip), on integer store units, with the memory store's semantics. A reserve
 * reads the data-loss epoch in its script. With the permit store of the same client, the store
 * also takes a reservation and a permit in one script (`joint.ts`).
 *
 * @internal
 */
import * as BudgetStore from "@modelgate/core/BudgetStore"
import { Effect } from "effect"
import { bad, type Client, int, ints } from "./client.js"
import * as BudgetScripts from "./budgetScripts.js"
import { afterObserving, type Epoch } from "./epoch.js"
import {
  capabilitySlot,
  type JointContext,
  jointOf,
  type Links,
  reserveArgs,
  reserveReply,
  settleLinked
} from "./joint.js"
import * as JointScripts from "./jointScripts.js"
import type { RedisPermitStore } from "./permits.js"

/** Accounts whose keys a store keeps built. */
const keptAccounts = 1_024

/** What a budget store had seen committed when Redis came back empty (store units). @internal */
export interface LostSpend {
  readonly account: string
  readonly committedUnits: number
}

/**
 * @internal
 *
 * With an `epoch`, the store keeps the last committed amount it saw per account and, when the epoch
 * reports a loss, hands them to `onLoss` (and logs them): the spend Redis forgot. With `permits` (on
 * the same client), it carries the joint admission (`joint.ts`).
 */
export const makeBudgetStore = (
  client: Client,
  prefix: string,
  epoch?: Epoch,
  onLoss?: (lost: ReadonlyArray<LostSpend>) => void,
  permits?: RedisPermitStore
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
  // An account's keys, built once (up to `keptAccounts` accounts; past it, built again).
  const kept = new Map<string, readonly [string, string]>()
  const keys = (account: string): readonly [string, string] => {
    let k = kept.get(account)
    if (k === undefined) {
      const h = `${prefix}budget:{${account}}`
      k = [h, `${h}:r`]
      if (kept.size >= keptAccounts) kept.clear()
      kept.set(account, k)
    }
    return k
  }
  const links: Links = new Map()
  const joint: JointContext | undefined =
    permits === undefined ? undefined : { client, keys, permits, epoch, links, saw }
  const settle = (
    operation: string,
    account: string,
    id: string,
    spend: number,
    limit: number,
    retry: boolean,
    maxWaitMs: number | undefined
  ) => {
    const spent = int(spend)
    const capped = int(limit)
    const retried = retry ? "1" : "0"
    const decode = (reply: unknown): BudgetStore.CommitOutcome | typeof bad => {
      const v = ints(reply, 2)
      if (v === bad) return bad
      saw(account, v[0] ?? 0)
      return { committed: v[0] ?? 0, overspent: v[1] ?? 0 }
    }
    const withRelease =
      joint === undefined
        ? undefined
        : settleLinked(joint, id, (allKeys, lease, channel) =>
            client.script(
              "budget",
              operation,
              JointScripts.settleAndRelease,
              allKeys,
              [id, spent, capped, retried, lease, channel],
              decode,
              maxWaitMs
            )
          )
    return (
      withRelease ??
      client.script(
        "budget",
        operation,
        BudgetScripts.settle,
        keys(account),
        [id, spent, capped, retried],
        decode,
        maxWaitMs
      )
    )
  }
  // A reservation's keys (the account's two, then the epoch key), built once per account like `keys`.
  const keptWithEpoch = new Map<string, ReadonlyArray<string>>()
  const reserveKeys = (account: string): ReadonlyArray<string> => {
    if (epoch === undefined) return keys(account)
    let k = keptWithEpoch.get(account)
    if (k === undefined) {
      k = [...keys(account), epoch.key]
      if (keptWithEpoch.size >= keptAccounts) keptWithEpoch.clear()
      keptWithEpoch.set(account, k)
    }
    return k
  }
  const reserve: BudgetStore.Service["reserve"] = (r) => {
    return Effect.flatMap(
      client.script(
        "budget",
        "reserve",
        BudgetScripts.reserve,
        reserveKeys(r.account),
        [...reserveArgs(r), ...(epoch === undefined ? ["", "0"] : epoch.initArgs())],
        reserveReply,
        // never waits past the caller's deadline (the caller releases the id if the answer is lost)
        r.deadline === undefined ? undefined : r.deadline - r.now
      ),
      (v) =>
        afterObserving(epoch, v.epoch, (): BudgetStore.ReserveOutcome => {
          const { committed, reserved } = v
          saw(r.account, committed)
          return v.status === 1 ? { _tag: "Reserved", committed, reserved } : { _tag: "Rejected", committed, reserved }
        })
    )
  }
  const store = BudgetStore.BudgetStore.of({
    reserve,
    commit: (r) => settle("commit", r.account, r.id, Math.max(0, r.spend), r.limit, r.retry === true, r.maxWaitMs),
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
  if (joint === undefined) return store
  // Core's private capability slot (not enumerable: a spread copy of the store has none).
  return Object.defineProperty(store, capabilitySlot, { value: jointOf(joint), enumerable: false })
}
