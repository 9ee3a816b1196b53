/**
 * `PermitStore` on Redis: every permit is a lease in a pool shared by all processes (one Lua
 * script to take it, one to give it back).
 *
 * - Asking: a caller with no earlier waiter of its key in this process asks at once (concurrent
 *   callers' asks share round trips on the auto-pipelined connection).
 * - Waiting: FIFO per key within a process (only the head of a key's local queue asks Redis), each
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

let leaseSeq = 0
const instance = Math.floor(Math.random() * 2 ** 31).toString(36)

const makePool = (client: Client, settings: PermitSettings, options: PermitStore.PoolOptions): PermitStore.Pool => {
  const base = `${settings.prefix}permits:{${options.name}}`
  const keys = [base, `${base}:l`, `${base}:i`]
  const channel = `${base}:freed`
  const freed = new Signal()
  const queues = new Map<string, KeyQueue>()
  let tickets = 0
  /** Permits this process holds, by key (the snapshot when the store cannot answer). */
  const heldHere = new Map<string, number>()
  if (settings.wakeup === "pubsub") client.subscribe(channel, () => freed.fire())

  const permitOf = (key: string, lease: string): PermitStore.Permit => {
    heldHere.set(key, (heldHere.get(key) ?? 0) + 1)
    let held = true
    return {
      release: () => {
        if (!held) return
        held = false
        const n = (heldHere.get(key) ?? 1) - 1
        if (n <= 0) heldHere.delete(key)
        else heldHere.set(key, n)
        client.send(Scripts.release, keys, [lease, channel])
        // Waiters here ask after the release (same connection, in order): wake them now.
        freed.fire()
      }
    }
  }

  /** One ask: the lease of a permit, or `undefined` when none is free (or `until` came first). */
  const take = (key: string, until: number, now: number): Effect.Effect<string | undefined, StoreError> => {
    const lease = `${instance}.${(++leaseSeq).toString(36)}`
    const leaseMs = Number.isFinite(until) ? Math.max(0, until - now) + settings.leaseMs : settings.leaseMs
    const ask = client.script(
      "permit",
      "acquire",
      Scripts.acquire,
      keys,
      [
        key,
        lease,
        String(Math.ceil(leaseMs)),
        String(options.reservedOf(key)),
        String(options.maxOf(key)),
        String(options.shared),
        channel
      ],
      (reply) => (reply === 1 ? lease : reply === 0 ? undefined : bad)
    )
    // Never past the waiter's `until`: the deadline answers `undefined`, not a store error.
    const left = until - now
    if (!(left < client.commandTimeoutMs)) return giveBackOnFailure(ask, lease)
    return giveBackOnFailure(
      Effect.map(Effect.timeoutOption(ask, Math.max(1, left)).pipe(Effect.withClock(realClock)), (o) => {
        if (o._tag === "Some") return o.value
        // Cut by `until`: its answer may still grant the lease.
        client.send(Scripts.release, keys, [lease, channel])
        return undefined
      }),
      lease
    )
  }
  /** An ask that failed (a lost answer, a timeout) may still have been granted: give that lease back. */
  const giveBackOnFailure = (
    ask: Effect.Effect<string | undefined, StoreError>,
    lease: string
  ): Effect.Effect<string | undefined, StoreError> =>
    Effect.onExit(ask, (exit) =>
      Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => client.send(Scripts.release, keys, [lease, channel]))
    )

  const now = Effect.clockWith((c) => Effect.succeed(c.unsafeCurrentTimeMillis()))

  /**
   * Queued behind this process's earlier waiters of `key` (FIFO): only the head asks Redis; a
   * waiter leaving hands the turn to the next one (its own signal: one wake-up per hand-over).
   */
  const wait = (
    key: string,
    until: number,
    ticket: number
  ): Effect.Effect<PermitStore.Permit | undefined, StoreError> =>
    Effect.suspend(() => {
      let q = queues.get(key)
      if (q === undefined) {
        q = { waiters: [] }
        queues.set(key, q)
      }
      const queue = q
      const me: Waiter = { ticket, turn: new Signal() }
      // In arrival order: a caller whose first ask was answered later than a later caller's joins
      // ahead of it.
      let at = queue.waiters.length
      while (at > 0 && (queue.waiters[at - 1]?.ticket ?? 0) > ticket) at--
      queue.waiters.splice(at, 0, me)
      const leave = Effect.sync(() => {
        if (registered) client.send(Scripts.waiting, keys, ["-1"])
        const i = queue.waiters.indexOf(me)
        if (i >= 0) queue.waiters.splice(i, 1)
        if (queue.waiters.length === 0) queues.delete(key)
        else if (i === 0) queue.waiters[0]?.turn.fire()
      })
      // Asks are uninterruptible (a granted lease is never dropped); only the sleeps between them
      // can be interrupted, and then nothing is held.
      let registered = false
      const loop = Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          let pollMs = settings.pollMinMs
          while (true) {
            const at = yield* now
            if (at >= until) return undefined
            if (queue.waiters[0] === me) {
              // Counted as waiting in Redis (releases publish only while someone waits), once.
              if (!registered && settings.wakeup === "pubsub") {
                registered = true
                client.send(Scripts.waiting, keys, ["1"])
              }
              // Taken before the ask: a release published while it is in flight still wakes us.
              const wake = freed.await
              const lease = yield* take(key, until, at)
              if (lease !== undefined) return permitOf(key, lease)
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
  const acquire = (key: string, until: number): Effect.Effect<PermitStore.Permit | undefined, StoreError> =>
    Effect.suspend(() => {
      const ticket = ++tickets
      if (queues.has(key)) return wait(key, until, ticket)
      return Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(now, (at) =>
          Effect.flatMap(take(key, Math.max(until, at + 1), at), (lease) =>
            lease !== undefined ? Effect.succeed(permitOf(key, lease)) : restore(wait(key, until, ticket))
          )
        )
      )
    })

  /** A snapshot of holders `byKey` (`waiting` 0) with this process's waiters added. */
  const withWaiters = (
    byKey: Map<string, { held: number; waiting: number }>,
    inUse: number,
    sharedInUse: number
  ): PermitStore.PoolSnapshot => {
    let waiting = 0
    for (const [key, q] of queues) {
      waiting += q.waiters.length
      byKey.set(key, { held: byKey.get(key)?.held ?? 0, waiting: q.waiters.length })
    }
    return { inUse, sharedInUse, waiting, keys: byKey.size, byKey }
  }

  const localSnapshot = (): PermitStore.PoolSnapshot => {
    const byKey = new Map<string, { held: number; waiting: number }>()
    let inUse = 0
    for (const [key, held] of heldHere) {
      byKey.set(key, { held, waiting: 0 })
      inUse += held
    }
    return withWaiters(byKey, inUse, 0)
  }

  const snapshot: Effect.Effect<PermitStore.PoolSnapshot> = Effect.orElseSucceed(
    client.script("permit", "snapshot", Scripts.snapshot, keys, [], (reply): PermitStore.PoolSnapshot | typeof bad => {
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
      return withWaiters(byKey, inUse, sharedInUse)
    }),
    localSnapshot
  )

  return { acquire, snapshot, heldHere: (key) => heldHere.get(key) ?? 0 }
}

/**
 * The Redis permit store over `client`.
 *
 * @internal
 */
export const makePermitStore = (client: Client, settings: PermitSettings): PermitStore.Service => ({
  pool: (options) => makePool(client, settings, options)
})
