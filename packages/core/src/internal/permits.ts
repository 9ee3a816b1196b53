/**
 * Keyed permits with a reserved share per key and a shared pool, FIFO waiting, and per-key state
 * that exists only while the key holds or waits for a permit.
 *
 * Why not `PartitionedSemaphore` / `RcMap` of semaphores (effect 3.22): `PartitionedSemaphore`
 * shares one pool round-robin across keys, with no reserved share, no per-key maximum and no FIFO
 * order across keys; and a per-key semaphore held in an `RcMap` cannot wait for "my reserved
 * permit *or* a shared one", because two semaphores cannot be waited on as one. The decision
 * "who gets the permit just freed" needs every queue at once, so it is one synchronous state
 * machine here (each operation runs without yielding, hence atomically).
 */
import { Effect } from "effect"

interface Waiter {
  readonly key: string
  granted: boolean
  resume: (effect: Effect.Effect<void>) => void
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

/** @internal */
export class Permits {
  private sharedInUse = 0
  private inUse = 0
  private readonly states = new Map<string, KeyState>()
  /** Every waiter in arrival order (a `Set` iterates in insertion order and deletes in O(1)). */
  private readonly queue = new Set<Waiter>()

  constructor(private readonly options: PermitsOptions) {}

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

  private grant(w: Waiter, s: KeyState) {
    this.queue.delete(w)
    s.waiters.delete(w)
    this.take(w.key, s)
    w.granted = true
    w.resume(Effect.void)
  }

  /** Takes a permit now if one is free for `key` (and nobody of `key` waits before). */
  tryAcquire(key: string): boolean {
    const s = this.state(key)
    if (s.waiters.size === 0 && this.canTake(key, s.held)) {
      this.take(key, s)
      return true
    }
    this.dropIfIdle(key, s)
    return false
  }

  /** Waits (FIFO) for a permit of `key`. Interrupting the wait leaves no trace. */
  acquire(key: string): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.tryAcquire(key)) return Effect.void
      return Effect.async<void>((resume) => {
        // Nothing ran since `tryAcquire` (no yield in between), so the key still cannot take.
        const s = this.state(key)
        const w: Waiter = { key, granted: false, resume }
        this.queue.add(w)
        s.waiters.add(w)
        return Effect.sync(() => {
          if (w.granted) {
            // Granted and interrupted before the holder could see it: give it back.
            this.release(key)
            return
          }
          this.queue.delete(w)
          s.waiters.delete(w)
          this.dropIfIdle(key, s)
        })
      })
    })
  }

  /** Returns one permit of `key` and hands the freed slot to the next eligible waiter. */
  release(key: string): void {
    const s = this.states.get(key)
    if (s === undefined || s.held === 0) return
    const freedShared = s.held > this.options.reservedOf(key)
    s.held--
    this.inUse--
    if (freedShared) {
      this.sharedInUse--
      // One shared permit is free: the longest-waiting key that may use it gets it.
      for (const w of this.queue) {
        const ws = this.states.get(w.key)!
        if (this.canTake(w.key, ws.held)) {
          this.grant(w, ws)
          break
        }
      }
    } else {
      // One of `key`'s reserved permits is free: only `key` may use it.
      const first = s.waiters.values().next()
      if (!first.done && this.canTake(key, s.held)) this.grant(first.value, s)
    }
    this.dropIfIdle(key, s)
  }

  snapshot(): PermitsSnapshot {
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
