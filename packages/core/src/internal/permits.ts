/**
 * Keyed permits with a reserved share per key and a shared pool, FIFO waiting bounded by an
 * instant, and per-key state that exists only while the key holds or waits for a permit.
 *
 * Why not `PartitionedSemaphore` / `RcMap` of semaphores (effect 3.22): `PartitionedSemaphore`
 * shares one pool round-robin across keys, with no reserved share, no per-key maximum and no FIFO
 * order across keys; and a per-key semaphore held in an `RcMap` cannot wait for "my reserved
 * permit *or* a shared one", because two semaphores cannot be waited on as one. The decision
 * "who gets the permit just freed" needs every queue at once, so it is one synchronous state
 * machine here (each operation runs without yielding, hence atomically).
 *
 * A freed permit is handed to its waiter by the releasing fiber (ownership moves with the grant),
 * so FIFO order is strict: nobody can take a permit between its release and its waiter waking up.
 */
import type { Clock, Fiber } from "effect"
import { Duration, Effect, FiberId } from "effect"
import * as FastPath from "./fastPath.js"
import type { PermitLimit, PoolOptions, PoolSnapshot, Share } from "./permitTypes.js"

/** A permit of one key (and sub-key), given back at most once. */
export class HeldPermit {
  private held = true
  constructor(
    private readonly permits: Permits,
    private readonly key: string,
    private readonly sub: string | undefined
  ) {}
  /** Gives the permit back; later calls do nothing. */
  readonly release = (): void => {
    if (this.held) {
      this.held = false
      this.permits.giveBack(this.key, this.sub)
    }
  }
}

type Resume = (effect: Effect.Effect<HeldPermit | undefined>) => void

interface Waiter {
  readonly key: string
  /** The sub-key (workflow) it waits for, if any: FIFO holds per key and sub-key. */
  readonly sub: string | undefined
  /** Told the limit that kept it from a permit when its wait ends without one. */
  readonly onRefused: ((limit: PermitLimit) => void) | undefined
  /** Epoch ms at which the wait ends without a permit; `Infinity` for an unbounded wait. */
  readonly until: number
  /** The waiting fiber's clock (only for a bounded wait). */
  readonly clock: Clock.Clock | undefined
  /** The fiber that ends the wait at `until` (only for a bounded wait). */
  readonly timer: Fiber.RuntimeFiber<void> | undefined
  readonly resume: Resume
  /** `granted`: the permit was handed over; it is the waiter's until its fiber takes it. */
  state: "waiting" | "granted" | "done"
  permit: HeldPermit | undefined
}

/** Where the timer finds its waiter (the waiter is created after the timer is forked). */
interface TimerSlot {
  waiter: Waiter | undefined
}

/** How many keys' states are kept while idle (beyond it an idle key's state is dropped). */
const keptIdleStates = 1024

const isIdle = (s: KeyState): boolean => s.held === 0 && (s.waiters === undefined || s.waiters.size === 0)

interface KeyState {
  held: number
  /** Permits held beyond their sub-key's reservation (every permit of a sub-key without a share). */
  over: number
  /** Permits held per sub-key with a declared share (the map and its entries made on first use, entries dropped at 0). */
  bySub: Map<string, number> | undefined
  /** The key's queued waiters (made on first wait). */
  waiters: Set<Waiter> | undefined
}

/** A pool's options without its store name: the in-memory pool has no store. */
export type PermitsOptions = Omit<PoolOptions, "name">

/** What `snapshot` reports: the store-neutral pool snapshot. */
export type PermitsSnapshot = PoolSnapshot

const succeedNone: Effect.Effect<HeldPermit | undefined> = Effect.succeed(undefined)

const stopTimer = (timer: Fiber.RuntimeFiber<void> | undefined): void => {
  if (timer !== undefined) timer.unsafeInterruptAsFork(FiberId.none)
}

export class Permits {
  private sharedInUse = 0
  private inUse = 0
  private readonly states = new Map<string, KeyState>()
  /** Every waiter in arrival order (a `Set` iterates in insertion order and deletes in O(1)). */
  private readonly queue = new Set<Waiter>()

  constructor(private readonly options: PermitsOptions) {
    // The pool answers without I/O: `Concurrency` takes free permits through this, without an Effect.
    FastPath.attach(this, { _tag: "Pool", take: (key, sub) => this.tryTake(key, sub) })
  }

  private state(key: string): KeyState {
    let s = this.states.get(key)
    if (s === undefined) {
      s = { held: 0, over: 0, bySub: undefined, waiters: undefined }
      this.states.set(key, s)
    }
    return s
  }

  /**
   * Forgets an idle key's state once more than {@link keptIdleStates} keys are known: a key that
   * comes and goes on every call (one tenant's sequential calls) keeps its entry instead of
   * removing and re-adding it each time; memory stays bounded.
   */
  private dropIfIdle(key: string, s: KeyState) {
    if (isIdle(s) && this.states.size > keptIdleStates) this.states.delete(key)
  }

  private shareOf(sub: string | undefined): Share | undefined {
    return sub === undefined ? undefined : this.options.shareOf?.(sub)
  }

  /**
   * The limit that keeps `key` (for `sub`) from one more permit now, `undefined` when it may take
   * one: the sub-key's cap, the key's maximum, the key's permits kept for its other sub-keys, the
   * key's reserved share and then the shared part.
   */
  private blockedBy(key: string, s: KeyState, sub: string | undefined): PermitLimit | undefined {
    const share = this.shareOf(sub)
    const subHeld = share === undefined || sub === undefined ? 0 : (s.bySub?.get(sub) ?? 0)
    if (share !== undefined && subHeld >= share.max) return "workflow_max"
    const max = this.options.maxOf(key)
    if (s.held >= max) return "tenant_max"
    // Beyond its own reservation a sub-key takes only what the others' reservations leave.
    const kept = this.options.sharesReserved ?? 0
    if (kept > 0 && !(share !== undefined && subHeld < share.reserved) && s.over >= max - kept) {
      return "workflow_reservations"
    }
    if (s.held < this.options.reservedOf(key) || this.sharedInUse < this.options.shared) return undefined
    return "shared_pool"
  }

  private take(key: string, s: KeyState, sub: string | undefined) {
    if (s.held >= this.options.reservedOf(key)) this.sharedInUse++
    s.held++
    this.inUse++
    const share = this.shareOf(sub)
    if (share === undefined || sub === undefined) {
      s.over++
      return
    }
    if (s.bySub === undefined) s.bySub = new Map()
    const subHeld = s.bySub.get(sub) ?? 0
    if (subHeld >= share.reserved) s.over++
    s.bySub.set(sub, subHeld + 1)
  }

  /** Gives one permit of `key` (and `sub`) back; whether it was one of the shared part. */
  private untake(key: string, s: KeyState, sub: string | undefined): boolean {
    const freedShared = s.held > this.options.reservedOf(key)
    s.held--
    this.inUse--
    if (freedShared) this.sharedInUse--
    const share = this.shareOf(sub)
    if (share === undefined || sub === undefined) {
      s.over--
      return freedShared
    }
    const subHeld = s.bySub?.get(sub) ?? 0
    if (subHeld > share.reserved) s.over--
    if (subHeld <= 1) s.bySub?.delete(sub)
    else s.bySub?.set(sub, subHeld - 1)
    return freedShared
  }

  private dequeue(w: Waiter, s: KeyState) {
    this.queue.delete(w)
    s.waiters?.delete(w)
  }

  /** A bounded waiter whose `until` has come: it takes no permit any more, even one freed now. */
  private expired(w: Waiter): boolean {
    return w.clock !== undefined && w.clock.unsafeCurrentTimeMillis() >= w.until
  }

  private grant(w: Waiter, s: KeyState) {
    this.dequeue(w, s)
    this.take(w.key, s, w.sub)
    const permit = new HeldPermit(this, w.key, w.sub)
    w.state = "granted"
    w.permit = permit
    stopTimer(w.timer)
    w.resume(Effect.succeed(permit))
  }

  /** Ends a wait without a permit. `byTimer`: called by the waiter's own timer (nothing to stop). */
  private expire(w: Waiter, byTimer: boolean) {
    if (w.state !== "waiting") return
    const s = this.states.get(w.key)!
    this.dequeue(w, s)
    const limit = this.blockedBy(w.key, s, w.sub)
    if (limit !== undefined) w.onRefused?.(limit)
    this.dropIfIdle(w.key, s)
    w.state = "done"
    if (!byTimer) stopTimer(w.timer)
    w.resume(succeedNone)
  }

  /** The waiting fiber was interrupted: forget the waiter, or give back what it was handed. */
  private cancel(w: Waiter) {
    stopTimer(w.timer)
    if (w.state === "waiting") {
      const s = this.states.get(w.key)!
      this.dequeue(w, s)
      this.dropIfIdle(w.key, s)
    } else if (w.state === "granted") {
      // Granted and interrupted before the fiber could take it: give it back.
      w.permit?.release()
    }
    w.state = "done"
  }

  /**
   * Takes a permit now if one is free for `key` (and `sub`) and nobody of `key` and `sub` waits
   * before; synchronous (the fast path of `acquire`, and of `Concurrency` without an Effect). It
   * never jumps ahead of another waiter either: a freed permit is handed to every waiter that may
   * use it in `giveBack`, so a permit is free here only when no queued waiter may use it.
   */
  tryTake(key: string, sub?: string | undefined): HeldPermit | undefined {
    const s = this.state(key)
    if (!this.queuedOf(s, sub) && this.blockedBy(key, s, sub) === undefined) {
      this.take(key, s, sub)
      return new HeldPermit(this, key, sub)
    }
    this.dropIfIdle(key, s)
    return undefined
  }

  /** Whether a waiter of `sub` is queued in `s`. */
  private queuedOf(s: KeyState, sub: string | undefined): boolean {
    if (s.waiters === undefined) return false
    for (const w of s.waiters) if (w.sub === sub) return true
    return false
  }

  /**
   * Waits (FIFO) for a permit of `key` until the epoch-ms instant `until` (by the fiber's `Clock`;
   * `Infinity` waits without a bound): `undefined` when none came before `until`. Interrupting the
   * wait leaves no trace (no waiter, no permit, no timer). Call it after `tryTake` failed.
   */
  wait(
    key: string,
    until: number,
    sub?: string | undefined,
    onRefused?: ((limit: PermitLimit) => void) | undefined
  ): Effect.Effect<HeldPermit | undefined> {
    if (until === Number.POSITIVE_INFINITY) return this.park({ key, sub, until, onRefused }, undefined, undefined)
    return Effect.clockWith((clock) => {
      const now = clock.unsafeCurrentTimeMillis()
      if (!(until > now)) return this.refuseNow(key, sub, onRefused)
      const slot: TimerSlot = { waiter: undefined }
      const expireAtUntil = Effect.interruptible(
        Effect.zipRight(
          clock.sleep(Duration.millis(until - now)),
          Effect.sync(() => {
            if (slot.waiter !== undefined) this.expire(slot.waiter, true)
          })
        )
      )
      return Effect.flatMap(Effect.fork(expireAtUntil), (timer) =>
        this.park({ key, sub, until, onRefused }, { clock, timer }, slot)
      )
    })
  }

  /** No permit without waiting: tells `onRefused` why (when something keeps `key` from one). */
  private refuseNow(
    key: string,
    sub: string | undefined,
    onRefused: ((limit: PermitLimit) => void) | undefined
  ): Effect.Effect<HeldPermit | undefined> {
    if (onRefused === undefined) return succeedNone
    return Effect.sync(() => {
      const s = this.state(key)
      const limit = this.blockedBy(key, s, sub)
      this.dropIfIdle(key, s)
      if (limit !== undefined) onRefused(limit)
      return undefined
    })
  }

  private park(
    ask: Pick<Waiter, "key" | "sub" | "until" | "onRefused">,
    bound: { readonly clock: Clock.Clock; readonly timer: Fiber.RuntimeFiber<void> } | undefined,
    slot: TimerSlot | undefined
  ): Effect.Effect<HeldPermit | undefined> {
    const { key, sub, until } = ask
    const timer = bound?.timer
    return Effect.async<HeldPermit | undefined>((resume) => {
      // Other fibers may have run since the caller's `tryTake` (forking the timer can yield).
      const now = this.tryTake(key, sub)
      if (now !== undefined) {
        stopTimer(timer)
        resume(Effect.succeed(now))
        return
      }
      if (bound !== undefined && bound.clock.unsafeCurrentTimeMillis() >= until) {
        stopTimer(timer)
        resume(this.refuseNow(key, sub, ask.onRefused))
        return
      }
      const w: Waiter = { ...ask, clock: bound?.clock, timer, resume, state: "waiting", permit: undefined }
      this.queue.add(w)
      const ks = this.state(key)
      if (ks.waiters === undefined) ks.waiters = new Set()
      ks.waiters.add(w)
      if (slot !== undefined) slot.waiter = w
      return Effect.sync(() => this.cancel(w))
    })
  }

  /**
   * Returns one permit of `key` (and `sub`) and hands what it frees to the waiters that may use it,
   * longest-waiting first (waiters whose `until` has come are let go on the way). One release can
   * unblock waiters for different limits (a workflow's cap and the shared part): every eligible
   * waiter is served, so none is left queued behind a free permit.
   */
  giveBack(key: string, sub?: string | undefined): void {
    const s = this.states.get(key)
    if (s === undefined || s.held === 0) return
    const freedShared = this.untake(key, s, sub)
    // A reserved permit of `key` is only `key`'s to use; a shared one is anyone's.
    const candidates = freedShared ? this.queue : s.waiters
    if (candidates !== undefined)
      for (const w of candidates) {
        if (w.state !== "waiting") continue
        const ws = this.states.get(w.key)!
        if (this.blockedBy(w.key, ws, w.sub) !== undefined) continue
        if (this.expired(w)) {
          this.expire(w, false)
          continue
        }
        this.grant(w, ws)
      }
    this.dropIfIdle(key, s)
  }

  /**
   * A permit of `key` now if one is free (one synchronous step, no fiber, no timer), else waits
   * FIFO until `until` (see {@link Permits.wait}).
   */
  acquire(
    key: string,
    until: number,
    sub?: string | undefined,
    onRefused?: ((limit: PermitLimit) => void) | undefined
  ): Effect.Effect<HeldPermit | undefined> {
    return Effect.suspend(() => {
      const permit = this.tryTake(key, sub)
      return permit !== undefined ? Effect.succeed(permit) : this.wait(key, until, sub, onRefused)
    })
  }

  /** Permits of `key` held now (all in this process). */
  heldHere(key: string): number {
    return this.states.get(key)?.held ?? 0
  }

  /** The state now, as an Effect (the `PermitStore.Pool` view). */
  readonly snapshot: Effect.Effect<PermitsSnapshot> = Effect.sync(() => this.snapshotNow())

  snapshotNow(): PermitsSnapshot {
    const byKey = new Map<string, { held: number; waiting: number }>()
    // Idle keys kept for reuse are not part of the state.
    for (const [key, s] of this.states) if (!isIdle(s)) byKey.set(key, { held: s.held, waiting: s.waiters?.size ?? 0 })
    return {
      inUse: this.inUse,
      sharedInUse: this.sharedInUse,
      waiting: this.queue.size,
      keys: byKey.size,
      byKey
    }
  }
}
