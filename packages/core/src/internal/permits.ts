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

/** A permit of one key, given back at most once. @internal */
export class HeldPermit {
  private held = true
  constructor(
    private readonly permits: Permits,
    private readonly key: string
  ) {}
  /** Gives the permit back; later calls do nothing. */
  readonly release = (): void => {
    if (this.held) {
      this.held = false
      this.permits.giveBack(this.key)
    }
  }
}

type Resume = (effect: Effect.Effect<HeldPermit | undefined>) => void

interface Waiter {
  readonly key: string
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

interface KeyState {
  held: number
  readonly waiters: Set<Waiter>
}

/** @internal */
export interface PermitsOptions {
  /** Permits that any key may use (after reserved shares). */
  readonly shared: number
  readonly reservedOf: (key: string) => number
  readonly maxOf: (key: string) => number
}

/** @internal */
export interface PermitsSnapshot {
  readonly inUse: number
  readonly sharedInUse: number
  readonly waiting: number
  /** Keys with state (holding or waiting). Idle keys have none. */
  readonly keys: number
  readonly byKey: ReadonlyMap<string, { readonly held: number; readonly waiting: number }>
}

const succeedNone: Effect.Effect<HeldPermit | undefined> = Effect.succeed(undefined)

const stopTimer = (timer: Fiber.RuntimeFiber<void> | undefined): void => {
  if (timer !== undefined) timer.unsafeInterruptAsFork(FiberId.none)
}

/** @internal */
export class Permits {
  private sharedInUse = 0
  private inUse = 0
  private readonly states = new Map<string, KeyState>()
  /** Every waiter in arrival order (a `Set` iterates in insertion order and deletes in O(1)). */
  private readonly queue = new Set<Waiter>()

  constructor(private readonly options: PermitsOptions) {
    // The pool answers without I/O: `Concurrency` takes free permits through this, without an Effect.
    FastPath.attach(this, { _tag: "Pool", take: (key) => this.tryTake(key) })
  }

  private state(key: string): KeyState {
    let s = this.states.get(key)
    if (s === undefined) {
      s = { held: 0, waiters: new Set() }
      this.states.set(key, s)
    }
    return s
  }

  private dropIfIdle(key: string, s: KeyState) {
    if (s.held === 0 && s.waiters.size === 0) this.states.delete(key)
  }

  /** Whether `key` may take one more permit now (its reserved share first, then the pool). */
  private canTake(key: string, held: number): boolean {
    if (held >= this.options.maxOf(key)) return false
    return held < this.options.reservedOf(key) || this.sharedInUse < this.options.shared
  }

  private take(key: string, s: KeyState) {
    if (s.held >= this.options.reservedOf(key)) this.sharedInUse++
    s.held++
    this.inUse++
  }

  private dequeue(w: Waiter, s: KeyState) {
    this.queue.delete(w)
    s.waiters.delete(w)
  }

  /** A bounded waiter whose `until` has come: it takes no permit any more, even one freed now. */
  private expired(w: Waiter): boolean {
    return w.clock !== undefined && w.clock.unsafeCurrentTimeMillis() >= w.until
  }

  private grant(w: Waiter, s: KeyState) {
    this.dequeue(w, s)
    this.take(w.key, s)
    const permit = new HeldPermit(this, w.key)
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
   * Takes a permit now if one is free for `key` and nobody of `key` waits before; synchronous (the
   * fast path of `acquire`, and of `Concurrency` without an Effect). It never jumps ahead of a waiter of
   * another key either: a freed permit is handed to its waiter in `giveBack`, so a permit is free
   * here only when no queued waiter may use it.
   */
  tryTake(key: string): HeldPermit | undefined {
    const s = this.state(key)
    if (s.waiters.size === 0 && this.canTake(key, s.held)) {
      this.take(key, s)
      return new HeldPermit(this, key)
    }
    this.dropIfIdle(key, s)
    return undefined
  }

  /**
   * Waits (FIFO) for a permit of `key` until the epoch-ms instant `until` (by the fiber's `Clock`;
   * `Infinity` waits without a bound): `undefined` when none came before `until`. Interrupting the
   * wait leaves no trace (no waiter, no permit, no timer). Call it after `tryTake` failed.
   */
  wait(key: string, until: number): Effect.Effect<HeldPermit | undefined> {
    if (until === Number.POSITIVE_INFINITY) return this.park(key, until, undefined, undefined, undefined)
    return Effect.clockWith((clock) => {
      const now = clock.unsafeCurrentTimeMillis()
      if (!(until > now)) return succeedNone
      const slot: TimerSlot = { waiter: undefined }
      const expireAtUntil = Effect.interruptible(
        Effect.zipRight(
          clock.sleep(Duration.millis(until - now)),
          Effect.sync(() => {
            if (slot.waiter !== undefined) this.expire(slot.waiter, true)
          })
        )
      )
      return Effect.flatMap(Effect.fork(expireAtUntil), (timer) => this.park(key, until, clock, timer, slot))
    })
  }

  private park(
    key: string,
    until: number,
    clock: Clock.Clock | undefined,
    timer: Fiber.RuntimeFiber<void> | undefined,
    slot: TimerSlot | undefined
  ): Effect.Effect<HeldPermit | undefined> {
    return Effect.async<HeldPermit | undefined>((resume) => {
      // Other fibers may have run since the caller's `tryTake` (forking the timer can yield).
      const now = this.tryTake(key)
      if (now !== undefined) {
        stopTimer(timer)
        resume(Effect.succeed(now))
        return
      }
      if (clock !== undefined && clock.unsafeCurrentTimeMillis() >= until) {
        stopTimer(timer)
        resume(succeedNone)
        return
      }
      const w: Waiter = { key, until, clock, timer, resume, state: "waiting", permit: undefined }
      this.queue.add(w)
      this.state(key).waiters.add(w)
      if (slot !== undefined) slot.waiter = w
      return Effect.sync(() => this.cancel(w))
    })
  }

  /** Returns one permit of `key` and hands the freed slot to the next eligible waiter. */
  giveBack(key: string): void {
    const s = this.states.get(key)
    if (s === undefined || s.held === 0) return
    const freedShared = s.held > this.options.reservedOf(key)
    s.held--
    this.inUse--
    if (freedShared) {
      this.sharedInUse--
      // One shared permit is free: the longest-waiting key that may use it gets it (waiters whose
      // `until` has come are let go on the way).
      for (const w of this.queue) {
        const ws = this.states.get(w.key)!
        if (!this.canTake(w.key, ws.held)) continue
        if (this.expired(w)) {
          this.expire(w, false)
          continue
        }
        this.grant(w, ws)
        break
      }
    } else {
      // One of `key`'s reserved permits is free: only `key` may use it.
      for (const w of s.waiters) {
        if (!this.canTake(key, s.held)) break
        if (this.expired(w)) {
          this.expire(w, false)
          continue
        }
        this.grant(w, s)
        break
      }
    }
    this.dropIfIdle(key, s)
  }

  /**
   * A permit of `key` now if one is free (one synchronous step, no fiber, no timer), else waits
   * FIFO until `until` (see {@link Permits.wait}).
   */
  acquire(key: string, until: number): Effect.Effect<HeldPermit | undefined> {
    return Effect.suspend(() => {
      const permit = this.tryTake(key)
      return permit !== undefined ? Effect.succeed(permit) : this.wait(key, until)
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
    for (const [key, s] of this.states) byKey.set(key, { held: s.held, waiting: s.waiters.size })
    return {
      inUse: this.inUse,
      sharedInUse: this.sharedInUse,
      waiting: this.queue.size,
      keys: this.states.size,
      byKey
    }
  }
}
