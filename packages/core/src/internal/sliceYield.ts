/**
 * The yield between slices of long synchronous work (counting caller text, decoding or hashing a
 * large configuration), so that work never holds the event loop for more than one slice.
 */
import { Effect, Option, Scheduler, TestClock } from "effect"

/** Gives the event loop a turn (timers, I/O): the yield between slices outside `TestClock`. */
const yieldToEventLoop: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Resumes a yielded fiber in a microtask. Effect's default scheduler resumes in microtasks too, but
 * after 2,048 consecutive yields of one fiber it waits for a `setTimeout` — which a `TestClock`
 * adjustment (it waits for timer turns before moving time) could overtake. Stateless.
 */
const microtasks = Scheduler.make((task) => queueMicrotask(task))

/**
 * Runs sliced work with the yield between its slices chosen by the clock the fiber runs under:
 *
 * - a `TestClock` (the fiber's clock is the `TestClock` of its context, as under `it.effect`): a
 *   turn of Effect's scheduler that resumes in a microtask. Other fibers still run between slices,
 *   but no timer and no I/O: the work ends before anything waiting for a timer turn — such as
 *   `TestClock.adjust`, which lets fibers settle through `setTimeout` turns before it moves virtual
 *   time. So a test sees the work finished at the virtual instant it started, the same way every
 *   run, whatever the input size.
 * - any other clock (Effect's live clock, or an application's own): a real event-loop turn
 *   (`setImmediate`), so timers and I/O run between slices and the loop is held for one slice at
 *   most.
 *
 * The slices (and so the result) are the same under both.
 */
export const withSliceYield = <A, E, R>(
  work: (yieldBetween: Effect.Effect<void>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.clockWith((clock) =>
    Effect.flatMap(Effect.serviceOption(TestClock.TestClock), (test) =>
      Option.exists(test, (t) => t === clock)
        ? Effect.withScheduler(work(Effect.yieldNow()), microtasks)
        : work(yieldToEventLoop)
    )
  )

/**
 * `f` folded over every item of `items`, in order, `perSlice` items per slice, with `yieldBetween`
 * between slices (none before the first: a short list costs one synchronous pass).
 */
export const foldSliced = <A, S>(
  items: ReadonlyArray<A>,
  perSlice: number,
  yieldBetween: Effect.Effect<void>,
  initial: S,
  f: (state: S, item: A, index: number) => S
): Effect.Effect<S> => {
  const slice = (from: number, state: S): Effect.Effect<S> => {
    const to = Math.min(items.length, from + perSlice)
    const next = items.slice(from, to).reduce((s, item, k) => f(s, item, from + k), state)
    return to === items.length
      ? Effect.succeed(next)
      : Effect.zipRight(
          yieldBetween,
          Effect.suspend(() => slice(to, next))
        )
  }
  return Effect.suspend(() => slice(0, initial))
}

/** `f` applied to every item of `items`, in order, a slice at a time (see {@link foldSliced}). */
export const mapSliced = <A, B>(
  items: ReadonlyArray<A>,
  perSlice: number,
  yieldBetween: Effect.Effect<void>,
  f: (item: A, index: number) => B
): Effect.Effect<Array<B>> =>
  foldSliced(items, perSlice, yieldBetween, [] as B[], (out, item, i) => {
    out.push(f(item, i))
    return out
  })
