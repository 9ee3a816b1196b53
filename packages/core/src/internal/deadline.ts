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
 * clock, `bounded` forks the step and arms one native timer (one fiber and one timer per wait),
 * which cuts the step one macrotask after it fires unless the step completed meanwhile;
 * under any other clock (`TestClock`), it races the step against that clock's `sleep`, with the
 * sleep registered first so that the completion wins a same-instant tie (`TestClock` wakes sleeps
 * due at the same instant latest-registered first). Both paths have the same outcomes; a test
 * runs the same scenarios through both.
 */
import { Clock, Duration, Effect, Exit, Fiber, Option } from "effect"

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

/** The live path: one forked fiber for `self` and one native timer. */
export const nativeTimer = <A, E, R>(self: Effect.Effect<A, E, R>, ms: number): Effect.Effect<Option.Option<A>, E, R> =>
  // The step's fiber ends with its `Exit` as a value, so a failed step is not an unhandled fiber error.
  Effect.flatMap(Effect.fork(Effect.exit(self)), (fiber) =>
    Effect.async<Option.Option<A>, E>((resume) => {
      let settled = false
      const onExit = (exit: Exit.Exit<Exit.Exit<A, E>>) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (Exit.isFailure(exit)) return resume(Exit.failCause(exit.cause))
        const inner = exit.value
        resume(Exit.isSuccess(inner) ? Exit.succeed(Option.some(inner.value)) : Exit.failCause(inner.cause))
      }
      // Tie rule: when the timer fires, a completion due at the same instant (its own timer fired
      // earlier in this turn, its fiber finishing in microtasks) still wins — the step is cut one
      // macrotask later only if it has not completed by then.
      const cut = () => {
        if (settled) return
        settled = true
        fiber.removeObserver(onExit)
        resume(Effect.as(Fiber.interrupt(fiber), Option.none<A>()))
      }
      const timer = setTimeout(() => {
        if (!settled) setImmediate(cut)
      }, ms)
      fiber.addObserver(onExit)
      // The caller was interrupted while waiting: stop the timer and the step.
      return Effect.suspend(() => {
        if (!settled) {
          settled = true
          clearTimeout(timer)
          fiber.removeObserver(onExit)
        }
        return Fiber.interrupt(fiber)
      })
    })
  )
