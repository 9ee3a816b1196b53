/**
 * The scenarios every deadline implementation is tested with (core's `bounded`, an adapter's own
 * timer): a step that settles before, exactly at or after a 100 ms bound, fails, or never settles.
 * Under the tie rule a completion at exactly the bound wins; otherwise the step is cut at the bound.
 *
 * @since 0.2.0
 */

/**
 * The bound of every scenario, in ms.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const bound = 100

/**
 * The fake timers the live-clock deadline tests run under (`vi.useFakeTimers(fakeTimers)`): timers,
 * immediates and the clock, so no real time passes. With a real `setImmediate`, the fake clock
 * yields to the event loop between two timers due at the same instant, which a real timers phase
 * does not do, so the tie rule's deferral would run too early.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const fakeTimers: {
  readonly toFake: Array<"setTimeout" | "clearTimeout" | "setImmediate" | "clearImmediate" | "Date">
} = {
  toFake: ["setTimeout", "clearTimeout", "setImmediate", "clearImmediate", "Date"]
}

/**
 * A step: when it settles and how.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export interface Scenario {
  readonly name: string
  /** Ms until the step settles; `undefined`: never. */
  readonly after: number | undefined
  readonly fails: boolean
}

/**
 * The scenarios, in the order the tests run them.
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const scenarios: ReadonlyArray<Scenario> = [
  { name: "completes before the bound", after: 50, fails: false },
  { name: "completes exactly at the bound", after: bound, fails: false },
  { name: "completes after the bound", after: 150, fails: false },
  { name: "fails before the bound", after: 40, fails: true },
  { name: "fails exactly at the bound", after: bound, fails: true },
  { name: "never completes", after: undefined, fails: false }
]

/**
 * Waits for `running` under fake timers, as a real event loop would reach it: the timers due now
 * (and the immediates they queue) first, then 1 ms on, until it settled. Its value and when it
 * settled, in ms after `start` (by the faked `Date`).
 *
 * @since 0.2.0
 * @category Scenarios
 */
export const settleUnderFakeTimers = async <A>(
  running: Promise<A>,
  start: number,
  advanceTimersBy: (ms: number) => Promise<unknown>
): Promise<{ readonly value: A; readonly at: number }> => {
  let done: { readonly value: A; readonly at: number } | undefined
  const settled = running.then((value) => {
    done = { value, at: Date.now() - start }
  })
  for (;;) {
    await advanceTimersBy(0)
    if (done !== undefined) break
    await advanceTimersBy(1)
  }
  await settled
  return done
}
