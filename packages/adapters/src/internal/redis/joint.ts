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

/** The arguments of a reservation (`reserve` and `admit`). @internal */
export const reserveArgs = (r: BudgetStore.ReserveRequest): Array<string> => [
  r.id,
  int(r.amount),
  int(r.limit),
  int(r.now),
  int(r.expiresAt),
  Number.isFinite(r.accountExpiresAt) ? int(r.accountExpiresAt) : "-1"
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

/** The capability of a budget store with context `ctx`. @internal */
export const jointOf = (ctx: JointContext): BudgetStore.Joint => ({
  _tag: "BudgetStoreJoint",
  jointWith: (pool) => {
    const state = ctx.permits.stateOf(pool)
    return state === undefined ? undefined : (request, key, until) => admit(ctx, state, request, key, until)
  }
})

const admit = (
  ctx: JointContext,
  state: PoolState,
  request: BudgetStore.ReserveRequest,
  key: string,
  until: number
): Effect.Effect<BudgetStore.JointOutcome, StoreError> => {
  // Waiters of `key` queued in this process go first (FIFO): the caller queues behind them.
  if (state.queues.has(key)) return succeedNoPermit
  const { client, epoch } = ctx
  const lease = newLease(state, Math.max(until, request.now + 1), request.now)
  const [h, z] = ctx.keys(request.account)
  const keys = [h, z, ...state.keys]
  const options = state.options
  const args = [
    ...reserveArgs(request),
    key,
    lease.id,
    String(lease.ms),
    String(options.reservedOf(key)),
    String(options.maxOf(key)),
    String(options.shared),
    state.channel,
    ...(epoch === undefined ? ["", "0"] : epoch.initArgs())
  ]
  const admitted = client.script(
    "budget",
    "reserve",
    JointScripts.admit,
    epoch === undefined ? keys : [...keys, epoch.key],
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
        return outcomeOf(ctx, state, request.id, key, lease.id, reply)
      })
  })
}

const outcomeOf = (
  ctx: JointContext,
  state: PoolState,
  id: string,
  key: string,
  lease: string,
  reply: { readonly status: number; readonly committed: number; readonly reserved: number }
): BudgetStore.JointOutcome => {
  if (reply.status === 0) return { _tag: "Rejected", committed: reply.committed, reserved: reply.reserved }
  if (reply.status !== 1) return noPermit
  const { permit, link } = linkedPermit(state, key, lease)
  ctx.links.set(id, { state, lease, link })
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
  run: (keys: ReadonlyArray<string>, extraArgs: ReadonlyArray<string>) => Effect.Effect<A, StoreError>
): Effect.Effect<A, StoreError> | undefined => {
  const linked = ctx.links.get(id)
  if (linked === undefined) return undefined
  ctx.links.delete(id)
  if (!linked.link.takeOver()) return undefined
  const { state, lease } = linked
  return Effect.onExit(run(state.keys, [lease, state.channel]), (exit) =>
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
