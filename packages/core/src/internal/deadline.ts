/**
 * The deadline scope of a call (DESIGN §4, §10): one deadline over everything the call waits for —
 * the permit queue, every attempt, every backoff sleep, a degrade handler — so that nothing the
 * call started still runs when it expires. It has the semantics of an `Effect.timeout` around the
 * whole call, paid for once per wait instead of by a fiber pair around the call:
 *
 * - every step that can wait runs through {@link bounded} with the earliest of the call's deadline
 *   and its own limit (an attempt: `min(deadline, start + perAttemptTimeout)`); when the instant
 *   comes first, the step is interrupted (an HTTP request is aborted) and `None` returned;
 * - backoff sleeps are taken only when they end before `deadline − minimumAttemptTime`;
 * - steps that cannot wait (in-memory stores, validation) run as they are.
 *
 * Tie rule: a completion at exactly the bounding instant counts as a completion. Under the live
 * clock, `bounded` runs the step in a fiber of its own, started at once, and arms one native timer
 * (one fiber and one timer per wait), which cuts the step one macrotask after it fires unless the
 * step completed meanwhile;
 * under any other clock (`TestClock`), it races the step against that clock's `sleep`, with the
 * sleep registered first so that the completion wins a same-instant tie (`TestClock` wakes sleeps
 * due at the same instant latest-registered first). Both paths have the same outcomes; a test
 * runs the same scenarios through both.
 */
import { Cause, Clock, Duration, Effect, Exit, Fiber, Option, Runtime, RuntimeFlags } from "effect"

/** The class of Effect's live clock: a step under it gets a native timer. */
const LiveClock = Clock.make().constructor

/** `setTimeout` takes at most 2^31 − 1 ms; longer bounds go through the clock's own sleep. */
const maxNativeDelay = 2 ** 31 - 1

/**
 * Runs `self` until the epoch-ms instant `until`: `Some` with its value when it completes first
 * (or at exactly `until`), `None` when `until` came first — `self` is then interrupted and its
 * finalizers have run when this returns. Failures of `self` pass through.
 */
export const bounded = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  until: number,
  clock?: Clock.Clock
): Effect.Effect<Option.Option<A>, E, R> =>
  // A step that is already its outcome (an `Exit`: an adapter answering with `Effect.succeed`) has
  // nothing to wait for: it completes at the instant it starts, which the tie rule counts as a
  // completion, so it needs no fiber and no timer.
  isOutcome(self)
    ? Exit.map(self, Option.some)
    : clock === undefined
      ? Effect.clockWith((clock) => boundedWait(self, until, clock))
      : boundedWait(self, until, clock)

/** An `Exit` made by a step of type `Effect<A, E, R>` is that step's outcome. */
const isOutcome = <A, E, R>(self: Effect.Effect<A, E, R>): self is Exit.Exit<A, E> => Exit.isExit(self)

/** `self` bounded on `clock` (the caller's, when it knows it: no step to read it). */
const boundedWait = <A, E, R>(
  self: Effect.Effect<A, E, R>,
  until: number,
  clock: Clock.Clock
): Effect.Effect<Option.Option<A>, E, R> => {
  const ms = Math.max(0, until - clock.unsafeCurrentTimeMillis())
  return clock.constructor === LiveClock && ms <= maxNativeDelay ? nativeTimer(self, ms) : clockTimer(self, ms)
}

/**
 * Like {@link bounded}, for a step that can bound itself: under the live clock, `owned()` (which
 * must keep the tie rule and abort its work when `until` comes first) instead of a forked fiber and
 * a timer here; under any other clock, `self()` raced against the clock's `sleep`.
 */
export const boundedOrOwned = <A, E, R>(
  self: () => Effect.Effect<A, E, R>,
  owned: () => Effect.Effect<Option.Option<A>, E, R>,
  until: number,
  clock?: Clock.Clock
): Effect.Effect<Option.Option<A>, E, R> => {
  if (clock === undefined) return Effect.clockWith((clock) => boundedOrOwned(self, owned, until, clock))
  const ms = Math.max(0, until - clock.unsafeCurrentTimeMillis())
  return clock.constructor === LiveClock && ms <= maxNativeDelay ? owned() : clockTimer(self(), ms)
}

/** The generic path: the clock's `sleep` raced against `self`, the sleep registered first. */
export const clockTimer = <A, E, R>(self: Effect.Effect<A, E, R>, ms: number): Effect.Effect<Option.Option<A>, E, R> =>
  // `raceWith` starts its left side first: the timer's sleep is registered before the step's. The
  // step's fiber ends with its `Exit` as a value, so a failed step is not an unhandled fiber error.
  Effect.raceWith(Effect.sleep(Duration.millis(ms)), Effect.exit(self), {
    onSelfDone: (_timer, step) => Effect.as(Fiber.interrupt(step), Option.none<A>()),
    onOtherDone: (exit, timer) =>
      Effect.zipRight(
        Fiber.interruptFork(timer),
        Effect.flatMap(exit, (inner) => Effect.map(inner, Option.some))
      )
  })

/**
 * The live path: one fiber for `self` and one native timer. The fiber is started in the step that
 * arms the timer and registers the wait (no scheduler turn before the step starts, nothing
 * between the fork and the wait that could leave it running), on the caller's runtime (context,
 * fiber refs, runtime flags), as `Effect.fork` would give it. The {@link Watch} is the wait's only
 * state: its `start` is the registration (no closure or holder of the step per wait besides it).
 */
export const nativeTimer = <A, E, R>(self: Effect.Effect<A, E, R>, ms: number): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.flatMap(Effect.runtime<R>(), (runtime) => {
    const watch = new Watch(self, runtime, ms)
    const wait = Effect.async<Option.Option<A>, E>(watch.start)
    // The wait's interruption handler in one frame (what `Effect.async`'s canceller costs: an
    // `onInterrupt` with its mask, closures and exit handler per wait). An uninterruptible caller
    // cannot be interrupted while it waits: nothing to handle.
    return RuntimeFlags.interruption(runtime.runtimeFlags)
      ? Effect.uninterruptible(Effect.catchAllCause(Effect.interruptible(wait), watch.stopped))
      : wait
  })

/** `Effect.exit` without its per-call closures: the step's outcome as its fiber's value. */
const failedAsValue = <A, E>(cause: Cause.Cause<E>): Exit.Exit<Exit.Exit<A, E>> => Exit.succeed(Exit.failCause(cause))
const succeededAsValue = <A, E>(value: A): Exit.Exit<Exit.Exit<A, E>> => Exit.succeed(Exit.succeed(value))

/**
 * The wait of {@link nativeTimer} on its step's fiber: settled once, by the step's exit, by the
 * timer (the step is then interrupted), or by the caller's interruption. Holds the step and the
 * caller's runtime until the step starts only.
 */
class Watch<A, E, R> {
  private settled = false
  private fiber: Fiber.RuntimeFiber<Exit.Exit<A, E>> | undefined = undefined
  private timer: ReturnType<typeof setTimeout> | undefined = undefined
  private resume: ((effect: Effect.Effect<Option.Option<A>, E>) => void) | undefined = undefined
  private self: Effect.Effect<A, E, R> | undefined
  private runtime: Runtime.Runtime<R> | undefined

  constructor(
    self: Effect.Effect<A, E, R>,
    runtime: Runtime.Runtime<R>,
    private readonly ms: number
  ) {
    this.self = self
    this.runtime = runtime
  }

  /**
   * The registration of the wait (`Effect.async`'s): arms the timer before the step starts (a step
   * that runs long before its first wait does not push its own deadline back), then runs the step
   * at once, up to its first wait; a step that completes there settles the watch in its observer,
   * before this returns. The caller's interruption is handled by {@link stopped}.
   */
  readonly start = (resume: (effect: Effect.Effect<Option.Option<A>, E>) => void): void => {
    this.resume = resume
    this.timer = setTimeout(fire, this.ms, this)
    const { self, runtime } = this
    this.self = undefined
    this.runtime = undefined
    if (self === undefined || runtime === undefined) return
    // The step's fiber ends with its `Exit` as a value, so a failed step is not an unhandled fiber error.
    const fiber = Runtime.runFork(
      runtime,
      Effect.matchCauseEffect(self, { onFailure: failedAsValue<A, E>, onSuccess: succeededAsValue<A, E> })
    )
    this.fiber = fiber
    fiber.addObserver(this.onExit)
  }

  readonly onExit = (exit: Exit.Exit<Exit.Exit<A, E>>): void => {
    if (this.settled) return
    this.settled = true
    clearTimeout(this.timer)
    const resume = this.resume
    if (resume === undefined) return
    if (Exit.isFailure(exit)) {
      resume(Exit.failCause(exit.cause))
      return
    }
    const inner = exit.value
    resume(Exit.isSuccess(inner) ? Exit.succeed(Option.some(inner.value)) : Exit.failCause(inner.cause))
  }

  /** The bound came first: the step is cut and `None` returned once it has stopped. */
  cut(): void {
    const fiber = this.fiber
    const resume = this.resume
    if (this.settled || fiber === undefined || resume === undefined) return
    this.settled = true
    fiber.removeObserver(this.onExit)
    resume(Effect.as(Fiber.interrupt(fiber), Option.none<A>()))
  }

  /**
   * The wait failed: when the caller was interrupted (as `Effect.onInterrupt` tells it), the timer
   * and the step are stopped before the interruption goes on; any other failure passes through.
   */
  readonly stopped = (cause: Cause.Cause<E>): Effect.Effect<never, E> =>
    Cause.isInterruptedOnly(cause) ? Effect.zipRight(this.cancel(), Effect.failCause(cause)) : Effect.failCause(cause)

  /** The caller was interrupted while waiting: stop the timer and the step. */
  private cancel(): Effect.Effect<void> {
    const fiber = this.fiber
    if (!this.settled) {
      this.settled = true
      clearTimeout(this.timer)
      if (fiber !== undefined) fiber.removeObserver(this.onExit)
    }
    return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
  }
}

/**
 * The timer of a {@link Watch}. Tie rule: a completion due at the same instant (its own timer fired
 * earlier in this turn, its fiber finishing in microtasks) still wins — the step is cut one
 * macrotask later only if it has not completed by then.
 */
const fire = <A, E, R>(watch: Watch<A, E, R>): void => {
  setImmediate(cutLater, watch)
}

const cutLater = <A, E, R>(watch: Watch<A, E, R>): void => watch.cut()
