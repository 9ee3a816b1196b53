/**
 * The joint admission of the Redis stores: a budget reservation and a permit of a pool on the same
 * client in one script (one awaited round trip), and their settlement in one script. Attached to the
 * Redis budget store under core's private capability slot (`Symbol.for("@modelgate/core/FastPath")`,
 * kind `BudgetStoreJoint`: the value here is core's `BudgetStore.Joint`, the one declaration of
 * the shape). Core's `Budgets` and engine find it there; the public store interfaces are
 * unchanged.
 *
 * - All or nothing: both taken, or neither (a refused budget takes no permit; no free permit, or
 *   waiters of the key queued in this process, reserves nothing and the caller takes the two steps).
 * - Bounded by the caller's deadline; an operation that fails (no answer in time, a lost reply) sends
 *   an `undo` that gives back whatever it may have taken (after it on the same connection).
 * - The permit's release rides the reservation's settle when the engine releases it first (as it
 *   does on every exit); otherwise it is sent on its own.
 *
 * @internal
 */
import type * as BudgetStore from "@modelgate/core/BudgetStore"
import type { StoreError } from "@modelgate/core/Errors"
import { Effect } from "effect"
import { bad, type Client, int } from "./client.js"
import { afterObserving, type Epoch } from "./epoch.js"
import * as JointScripts from "./jointScripts.js"
import {
  giveBack,
  type LinkedRelease,
  linkedPermit,
  newLease,
  type PoolState,
  type RedisPermitStore
} from "./permits.js"

/** Core's capability slot (`internal/fastPath.ts` there). @internal */
export const capabilitySlot: unique symbol = Symbol.for("@modelgate/core/FastPath")

/** A permit taken with reservation `id` (by id in {@link Links}) until the reservation settles. @internal */
export interface Linked {
  readonly state: PoolState
  readonly lease: string
  readonly link: LinkedRelease
  /** The settle's keys: the account's two, then the pool's. */
  readonly keys: ReadonlyArray<string>
}

/** @internal */
export type Links = Map<string, Linked>

/** A reply `{status, committed, reserved, epoch}` (the epoch a string or `null`). @internal */
export const reserveReply = (
  reply: unknown
):
  | { readonly status: number; readonly committed: number; readonly reserved: number; readonly epoch: string | null }
  | typeof bad => {
  if (!Array.isArray(reply) || reply.length !== 4) return bad
  const [status, committed, reserved, epoch]: Array<unknown> = reply
  if (typeof status !== "number" || typeof committed !== "number" || typeof reserved !== "number") return bad
  if (epoch !== null && typeof epoch !== "string") return bad
  return { status, committed, reserved, epoch }
}

/** When the account's keys expire (`"-1"`: never), an argument of a reservation. */
const accountExpiry = (r: BudgetStore.ReserveRequest) =>
  Number.isFinite(r.accountExpiresAt) ? int(r.accountExpiresAt) : "-1"

/** The arguments of a reservation (`reserve`; `admit` writes the same first). @internal */
export const reserveArgs = (r: BudgetStore.ReserveRequest): Array<string> => [
  r.id,
  int(r.amount),
  int(r.limit),
  int(r.now),
  int(r.expiresAt),
  accountExpiry(r)
]

/** What the budget store gives the joint admission. @internal */
export interface JointContext {
  readonly client: Client
  readonly keys: (account: string) => readonly [string, string]
  readonly permits: RedisPermitStore
  readonly epoch: Epoch | undefined
  readonly links: Links
  /** The budget store saw `committed` for `account`. */
  readonly saw: (account: string, committed: number) => void
}

const noPermit: BudgetStore.JointOutcome = { _tag: "NoPermit" }
const succeedNoPermit = Effect.succeed(noPermit)

/** The keys of one account's joint operations on one pool (built once, shared by its calls). */
interface AccountKeys {
  /** The account's two keys, then the pool's (the settle's and the undo's keys). */
  readonly settle: ReadonlyArray<string>
  /** The same, then the epoch key when there is one (the admission's keys). */
  readonly admit: ReadonlyArray<string>
}

/** Accounts whose keys are kept per pool (past it, the kept ones are dropped and built again). */
const keptAccounts = 1_024

/** The capability of a budget store with context `ctx`. @internal */
export const jointOf = (ctx: JointContext): BudgetStore.Joint => ({
  _tag: "BudgetStoreJoint",
  jointWith: (pool) => {
    const state = ctx.permits.stateOf(pool)
    if (state === undefined) return undefined
    const kept = new Map<string, AccountKeys>()
    const keysOf = (account: string): AccountKeys => {
      let k = kept.get(account)
      if (k === undefined) {
        const settle = [...ctx.keys(account), ...state.keys]
        k = { settle, admit: ctx.epoch === undefined ? settle : [...settle, ctx.epoch.key] }
        if (kept.size >= keptAccounts) kept.clear()
        kept.set(account, k)
      }
      return k
    }
    return (request, key, until) => admit(ctx, state, keysOf(request.account), request, key, until)
  }
})

const noEpoch = ["", "0"] as const

const admit = (
  ctx: JointContext,
  state: PoolState,
  accountKeys: AccountKeys,
  request: BudgetStore.ReserveRequest,
  key: string,
  until: number
): Effect.Effect<BudgetStore.JointOutcome, StoreError> => {
  // Waiters of `key` queued in this process go first (FIFO): the caller queues behind them.
  if (state.queues.has(key)) return succeedNoPermit
  const { client, epoch } = ctx
  const lease = newLease(state, Math.max(until, request.now + 1), request.now)
  const keys = accountKeys.settle
  const options = state.options
  const init = epoch === undefined ? noEpoch : epoch.initArgs()
  const args = [
    request.id,
    int(request.amount),
    int(request.limit),
    int(request.now),
    int(request.expiresAt),
    accountExpiry(request),
    key,
    lease.id,
    String(lease.ms),
    String(options.reservedOf(key)),
    String(options.maxOf(key)),
    String(options.shared),
    state.channel,
    init[0],
    init[1]
  ]
  const admitted = client.script(
    "budget",
    "reserve",
    JointScripts.admit,
    accountKeys.admit,
    args,
    reserveReply,
    // never waits past the caller's deadline (a late answer is undone below)
    request.deadline === undefined ? undefined : request.deadline - request.now
  )
  return Effect.matchCauseEffect(admitted, {
    onFailure: (cause) => {
      client.send(JointScripts.undo, keys, [request.id, lease.id, state.channel])
      return Effect.failCause(cause)
    },
    onSuccess: (reply) =>
      afterObserving(epoch, reply.epoch, () => {
        ctx.saw(request.account, reply.committed)
        return outcomeOf(ctx, state, keys, request.id, key, lease.id, reply)
      })
  })
}

const outcomeOf = (
  ctx: JointContext,
  state: PoolState,
  keys: ReadonlyArray<string>,
  id: string,
  key: string,
  lease: string,
  reply: { readonly status: number; readonly committed: number; readonly reserved: number }
): BudgetStore.JointOutcome => {
  if (reply.status === 0) return { _tag: "Rejected", committed: reply.committed, reserved: reply.reserved }
  if (reply.status !== 1) return noPermit
  const { permit, link } = linkedPermit(state, key, lease)
  ctx.links.set(id, { state, lease, link, keys })
  return { _tag: "Admitted", permit }
}

/**
 * The settle of reservation `id` carrying its permit's release, when that permit was released and
 * not sent yet; `undefined` otherwise (the plain settle runs; the permit goes on its own).
 *
 * @internal
 */
export const settleLinked = <A>(
  ctx: JointContext,
  id: string,
  run: (keys: ReadonlyArray<string>, lease: string, channel: string) => Effect.Effect<A, StoreError>
): Effect.Effect<A, StoreError> | undefined => {
  const linked = ctx.links.get(id)
  if (linked === undefined) return undefined
  ctx.links.delete(id)
  if (!linked.link.takeOver()) return undefined
  const { state, lease } = linked
  return Effect.onExit(run(linked.keys, lease, state.channel), (exit) =>
    Effect.sync(() => {
      // Not answered: the release may not have landed; send it on its own (a second one is ignored).
      if (exit._tag === "Failure") giveBack(state, lease)
      linked.link.sent()
    })
  )
}

const isJoint = (u: unknown): u is BudgetStore.Joint =>
  typeof u === "object" && u !== null && "_tag" in u && u._tag === "BudgetStoreJoint" && "jointWith" in u

/** The joint admission a budget store carries, if any (for tests and measurements). @internal */
export const jointCapabilityOf = (store: object): BudgetStore.Joint | undefined => {
  const value: unknown = Reflect.get(store, capabilitySlot)
  return isJoint(value) ? value : undefined
}
