/**
 * `PermitStore` on Redis: every permit is a lease in a pool shared by all processes (one Lua
 * script to take it, one to give it back).
 *
 * - Asking: a caller with no earlier waiter of its key in this process asks at once (concurrent
 *   callers' asks share round trips: a tick's commands leave in one write).
 * - Waiting: FIFO per key (and sub-key, in a pool with workflow shares) within a process (only the
 *   head of a local queue asks Redis), each
 *   ask bounded by the command timeout and the waiter's `until`. Between asks the head sleeps until
 *   a wake-up — a permit given back in this process, or a message on the pool's channel (pub/sub,
 *   published by every release and by every ask that freed ended leases) — or its poll interval,
 *   which doubles from `pollMinMs` to `pollMaxMs` (the fallback for a lost message and for leases
 *   that end without anyone asking).
 * - Across processes: no global order. A freed permit goes to whichever process's head asks first
 *   after the wake-up; every head is woken by the same message, so no process is starved while it
 *   has a waiter and permits are being freed, but a waiter may be overtaken by a later waiter of
 *   another process.
 * - Leases: a permit is leased until the holder's `until` plus `leaseMs` (`leaseMs` alone for an
 *   unbounded wait); a crashed holder's permit comes back when its lease ends. Release is sent
 *   without waiting (its loss is covered by the lease).
 *
 * @internal
 */
import type { StoreError } from "@modelgate/core/Errors"
import type * as PermitStore from "@modelgate/core/PermitStore"
import { Deferred, Effect, Exit, FiberId } from "effect"
import type { Client } from "./client.js"
import { bad, realClock } from "./client.js"
import * as Scripts from "./permitScripts.js"

/** The limit a refused ask hit (the type of `Pool.acquire`'s `onRefused` argument). */
type PermitLimit = Parameters<NonNullable<Parameters<PermitStore.Pool["acquire"]>[3]>>[0]

/** What a refusal code of the acquire script means. */
const limitOfReply = (reply: unknown): PermitLimit | undefined =>
  reply === 0
    ? "shared_pool"
    : reply === -1
      ? "workflow_max"
      : reply === -2
        ? "tenant_max"
        : reply === -3
          ? "workflow_reservations"
          : undefined

/** One caller's ask: its key, sub-key (in a pool with shares) and who to tell why it got none. */
interface Ask {
  readonly key: string
  readonly sub: string | undefined
  readonly onRefused: ((limit: PermitLimit) => void) | undefined
}

/** @internal */
export interface PermitSettings {
  readonly prefix: string
  /** Added to the time left to a holder's `until` (and the whole lease of an unbounded wait). */
  readonly leaseMs: number
  /** Wake waiters by pub/sub (default) or by polling alone. */
  readonly wakeup: "pubsub" | "polling"
  readonly pollMinMs: number
  readonly pollMaxMs: number
}

/** A one-shot broadcast: `fire` wakes everyone awaiting the current round. */
class Signal {
  /** Made for the first awaiter of a round: firing a signal nobody awaits costs nothing. */
  private d: Deferred.Deferred<void> | undefined
  get await(): Effect.Effect<void> {
    if (this.d === undefined) this.d = Deferred.unsafeMake<void>(FiberId.none)
    return Deferred.await(this.d)
  }
  fire(): void {
    const d = this.d
    if (d === undefined) return
    this.d = undefined
    Deferred.unsafeDone(d, Exit.void)
  }
}

interface Waiter {
  /** Arrival order in this process (taken before the first ask). */
  readonly ticket: number
  readonly turn: Signal
}

interface KeyQueue {
  /** This process's waiters of one key, in arrival order; the first one asks Redis. */
  readonly waiters: Array<Waiter>
}

/** One pool's state in this process. @internal */
export interface PoolState {
  readonly client: Client
  readonly settings: PermitSettings
  readonly options: PermitStore.PoolOptions
  readonly keys: ReadonlyArray<string>
  readonly channel: string
  readonly freed: Signal
  /** This process's waiters, by key (and sub-key: `<key>\n<sub>`). */
  readonly queues: Map<string, KeyQueue>
  /** Permits this process holds, by key (the snapshot when the store cannot answer). */
  readonly heldHere: Map<string, number>
  /** Makes lease ids unique across processes (and pools) sharing the store. */
  readonly instance: string
  leaseSeq: number
  tickets: number
}

const now = Effect.clockWith((c) => Effect.succeed(c.unsafeCurrentTimeMillis()))

/** Sends the release of `lease` without waiting (a lost release is covered by the lease's end). @internal */
export const giveBack = (p: PoolState, lease: string) => p.client.send(Scripts.release, p.keys, [lease, p.channel])

const permitOf = (p: PoolState, key: string, lease: string): PermitStore.Permit => {
  p.heldHere.set(key, (p.heldHere.get(key) ?? 0) + 1)
  let held = true
  return {
    release: () => {
      if (!held) return
      held = false
      const n = (p.heldHere.get(key) ?? 1) - 1
      if (n <= 0) p.heldHere.delete(key)
      else p.heldHere.set(key, n)
      giveBack(p, lease)
      // Waiters here ask after the release (same connection, in order): wake them now.
      p.freed.fire()
    }
  }
}

/** A fresh lease id of `p`, and its length for a holder waiting until `until` (epoch ms, at `at`). @internal */
export const newLease = (p: PoolState, until: number, at: number): { readonly id: string; readonly ms: number } => ({
  id: `${p.instance}.${(++p.leaseSeq).toString(36)}`,
  ms: Math.ceil(Number.isFinite(until) ? Math.max(0, until - at) + p.settings.leaseMs : p.settings.leaseMs)
})

/**
 * The release of a permit taken with a budget reservation (`joint.ts`): `release` marks it released
 * and sends it at the end of the current microtask run, unless the reservation's settle took it
 * over first (`takeOver`: then it rides the settle's script; the caller sends and calls `sent`).
 *
 * @internal
 */
export interface LinkedRelease {
  /** `true` once: the permit is released and not sent yet; the caller now sends it. */
  readonly takeOver: () => boolean
  /** Wakes this process's waiters (after the caller sent the release). */
  readonly sent: () => void
}

/** A permit of `key` under `lease`, already taken in Redis, whose release a settle may carry. @internal */
export const linkedPermit = (
  p: PoolState,
  key: string,
  lease: string
): { readonly permit: PermitStore.Permit; readonly link: LinkedRelease } => {
  p.heldHere.set(key, (p.heldHere.get(key) ?? 0) + 1)
  let state: "held" | "released" | "sent" = "held"
  const send = () => {
    if (state !== "released") return
    state = "sent"
    giveBack(p, lease)
    p.freed.fire()
  }
  const permit: PermitStore.Permit = {
    release: () => {
      if (state !== "held") return
      state = "released"
      const n = (p.heldHere.get(key) ?? 1) - 1
      if (n <= 0) p.heldHere.delete(key)
      else p.heldHere.set(key, n)
      queueMicrotask(send)
    }
  }
  const link: LinkedRelease = {
    takeOver: () => {
      if (state !== "released") return false
      state = "sent"
      return true
    },
    sent: () => p.freed.fire()
  }
  return { permit, link }
}

/** An ask that failed (a lost answer, a timeout) may still have been granted: give that lease back. */
const giveBackOnFailure = (
  p: PoolState,
  ask: Effect.Effect<string | undefined, StoreError>,
  lease: string
): Effect.Effect<string | undefined, StoreError> =>
  Effect.onExit(ask, (exit) => (Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => giveBack(p, lease))))

/** The script's arguments after the channel: the sub-key, its cap and reservation, the shares' sum. */
const shareArgs = (p: PoolState, sub: string | undefined): ReadonlyArray<string> => {
  if (sub === undefined) return []
  const share = p.options.shareOf?.(sub)
  const max = share === undefined || !Number.isFinite(share.max) ? -1 : share.max
  return [sub, String(max), String(share?.reserved ?? -1), String(p.options.sharesReserved ?? 0)]
}

/** One ask: the lease of a permit, or `undefined` when none is free (or `until` came first). */
const take = (p: PoolState, ask: Ask, until: number, at: number): Effect.Effect<string | undefined, StoreError> => {
  const { client, options } = p
  const { key, sub } = ask
  const { id: lease, ms: leaseMs } = newLease(p, until, at)
  const asked = client.script(
    "permit",
    "acquire",
    Scripts.acquire,
    p.keys,
    [
      key,
      lease,
      String(leaseMs),
      String(options.reservedOf(key)),
      String(options.maxOf(key)),
      String(options.shared),
      p.channel,
      ...shareArgs(p, sub)
    ],
    (reply) => {
      if (reply === 1) return lease
      const limit = limitOfReply(reply)
      if (limit === undefined) return bad
      ask.onRefused?.(limit)
      return undefined
    }
  )
  // Never past the waiter's `until`: the deadline answers `undefined`, not a store error. The ask
  // runs uninterruptibly (its callers mask it), so the deadline must be able to cut it: it is made
  // interruptible for the timer alone; an answer that lands after the cut is given back.
  const left = until - at
  if (!(left < client.commandTimeoutMs)) return giveBackOnFailure(p, asked, lease)
  const cut = Effect.timeoutOption(Effect.interruptible(asked), Math.max(1, left))
  return giveBackOnFailure(
    p,
    Effect.map(cut.pipe(Effect.withClock(realClock)), (o) => {
      if (o._tag === "Some") return o.value
      // Cut by `until`: its answer may still grant the lease.
      giveBack(p, lease)
      return undefined
    }),
    lease
  )
}

/** The local queue's name of an ask: its key, and its sub-key when it has one. */
const queueOf = (ask: Ask): string => (ask.sub === undefined ? ask.key : `${ask.key}\n${ask.sub}`)

/** `me`'s queue, joined in arrival order (a caller whose first ask was answered later joins ahead). */
const join = (p: PoolState, name: string, me: Waiter): KeyQueue => {
  let queue = p.queues.get(name)
  if (queue === undefined) {
    queue = { waiters: [] }
    p.queues.set(name, queue)
  }
  let at = queue.waiters.length
  while (at > 0 && (queue.waiters[at - 1]?.ticket ?? 0) > me.ticket) at--
  queue.waiters.splice(at, 0, me)
  return queue
}

/**
 * Queued behind this process's earlier waiters of the ask's key and sub-key (FIFO): only the head
 * asks Redis; a waiter leaving hands the turn to the next one (its own signal: one wake-up per
 * hand-over).
 */
const wait = (
  p: PoolState,
  ask: Ask,
  until: number,
  ticket: number
): Effect.Effect<PermitStore.Permit | undefined, StoreError> =>
  Effect.suspend(() => {
    const { client, settings } = p
    const { key } = ask
    const name = queueOf(ask)
    const me: Waiter = { ticket, turn: new Signal() }
    const queue = join(p, name, me)
    // Counted as waiting in Redis (releases publish only while someone waits), once.
    let registered = false
    const leave = Effect.sync(() => {
      if (registered) client.send(Scripts.waiting, p.keys, ["-1"])
      const i = queue.waiters.indexOf(me)
      if (i >= 0) queue.waiters.splice(i, 1)
      if (queue.waiters.length === 0) p.queues.delete(name)
      else if (i === 0) queue.waiters[0]?.turn.fire()
    })
    // Asks are uninterruptible (a granted lease is never dropped); only the sleeps between them
    // can be interrupted, and then nothing is held.
    const loop = Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        let pollMs = settings.pollMinMs
        while (true) {
          const at = yield* now
          if (at >= until) return undefined
          if (queue.waiters[0] === me) {
            if (!registered && settings.wakeup === "pubsub") {
              registered = true
              client.send(Scripts.waiting, p.keys, ["1"])
            }
            // Taken before the ask: a release published while it is in flight still wakes us.
            const wake = p.freed.await
            const lease = yield* take(p, ask, until, at)
            if (lease !== undefined) return permitOf(p, key, lease)
            const after = yield* now
            if (after >= until) return undefined
            yield* restore(Effect.raceFirst(wake, Effect.sleep(Math.min(pollMs, until - after))))
            pollMs = Math.min(settings.pollMaxMs, pollMs * 2)
          } else {
            const turn = me.turn.await
            yield* restore(Number.isFinite(until) ? Effect.raceFirst(turn, Effect.sleep(until - at)) : turn)
          }
        }
      })
    )
    return Effect.ensuring(loop, leave)
  })

/**
 * With no waiter of `key` queued in this process, one ask at once (concurrent callers ask
 * concurrently: their asks share round trips); a permit free on arrival is taken whatever `until`
 * says (as in memory). Otherwise, or when none was free, the caller waits in the queue.
 */
const acquire = (p: PoolState, ask: Ask, until: number): Effect.Effect<PermitStore.Permit | undefined, StoreError> =>
  Effect.suspend(() => {
    const ticket = ++p.tickets
    if (p.queues.has(queueOf(ask))) return wait(p, ask, until, ticket)
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(now, (at) =>
        Effect.flatMap(take(p, ask, Math.max(until, at + 1), at), (lease) =>
          lease !== undefined ? Effect.succeed(permitOf(p, ask.key, lease)) : restore(wait(p, ask, until, ticket))
        )
      )
    )
  })

/** A snapshot of holders `byKey` (`waiting` 0) with this process's waiters added. */
const withWaiters = (
  p: PoolState,
  byKey: Map<string, { held: number; waiting: number }>,
  inUse: number,
  sharedInUse: number
): PermitStore.PoolSnapshot => {
  let waiting = 0
  for (const [name, q] of p.queues) {
    waiting += q.waiters.length
    const key = name.split("\n", 1)[0] ?? name
    const at = byKey.get(key)
    byKey.set(key, { held: at?.held ?? 0, waiting: (at?.waiting ?? 0) + q.waiters.length })
  }
  return { inUse, sharedInUse, waiting, keys: byKey.size, byKey }
}

/** What this process holds (when the store cannot answer). */
const localSnapshot = (p: PoolState): PermitStore.PoolSnapshot => {
  const byKey = new Map<string, { held: number; waiting: number }>()
  let inUse = 0
  for (const [key, held] of p.heldHere) {
    byKey.set(key, { held, waiting: 0 })
    inUse += held
  }
  return withWaiters(p, byKey, inUse, 0)
}

const snapshotOf = (p: PoolState): Effect.Effect<PermitStore.PoolSnapshot> =>
  Effect.orElseSucceed(
    p.client.script(
      "permit",
      "snapshot",
      Scripts.snapshot,
      p.keys,
      [],
      (reply): PermitStore.PoolSnapshot | typeof bad => {
        if (!Array.isArray(reply) || reply.length % 2 !== 0) return bad
        const byKey = new Map<string, { held: number; waiting: number }>()
        let inUse = 0
        let sharedInUse = 0
        for (let i = 0; i < reply.length; i += 2) {
          const field: unknown = reply[i]
          const value = Number(reply[i + 1])
          if (typeof field !== "string" || !Number.isFinite(value)) return bad
          if (field === "s") sharedInUse = value
          else if (field.startsWith("k:") && value > 0) {
            byKey.set(field.slice(2), { held: value, waiting: 0 })
            inUse += value
          }
        }
        return withWaiters(p, byKey, inUse, sharedInUse)
      }
    ),
    () => localSnapshot(p)
  )

const makePool = (
  client: Client,
  settings: PermitSettings,
  options: PermitStore.PoolOptions
): { readonly pool: PermitStore.Pool; readonly state: PoolState } => {
  const base = `${settings.prefix}permits:{${options.name}}`
  const p: PoolState = {
    client,
    settings,
    options,
    keys: [base, `${base}:l`, `${base}:i`],
    channel: `${base}:freed`,
    freed: new Signal(),
    queues: new Map(),
    heldHere: new Map(),
    instance: Math.floor(Math.random() * 2 ** 31).toString(36),
    leaseSeq: 0,
    tickets: 0
  }
  if (settings.wakeup === "pubsub") client.subscribe(p.channel, () => p.freed.fire())
  const pool: PermitStore.Pool = {
    acquire: (key, until, sub, onRefused) => acquire(p, { key, sub, onRefused }, until),
    snapshot: snapshotOf(p),
    heldHere: (key) => p.heldHere.get(key) ?? 0
  }
  return { pool, state: p }
}

/**
 * The Redis permit store over `client`, and the state of each pool it made (`stateOf`: for an
 * admission that takes a permit with a budget reservation on the same client).
 *
 * @internal
 */
export interface RedisPermitStore extends PermitStore.Service {
  readonly stateOf: (pool: PermitStore.Pool) => PoolState | undefined
}

/**
 * The Redis permit store over `client`.
 *
 * @internal
 */
export const makePermitStore = (client: Client, settings: PermitSettings): RedisPermitStore => {
  const states = new Map<PermitStore.Pool, PoolState>()
  return {
    pool: (options) => {
      const { pool, state } = makePool(client, settings, options)
      states.set(pool, state)
      return pool
    },
    stateOf: (pool) => states.get(pool)
  }
}
