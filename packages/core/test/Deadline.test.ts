/**
 * The deadline scope's combinator (`bounded`), side by side with `Effect.timeout`: same outcomes
 * and instants, except the tie rule (a completion at exactly the bound wins); and its two timer
 * paths — the clock's `sleep` (TestClock) and the native timer (live clock, driven here by fake
 * timers, never by real time) — give the same outcome sequence.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Option, Supervisor, TestClock } from "effect"
import { afterEach, beforeEach, it as plainIt, vi } from "vitest"
import {
  bound,
  fakeTimers,
  type Scenario,
  scenarios,
  settleUnderFakeTimers
} from "@modelgate/testing/DeadlineScenarios"
import { bounded } from "../src/internal/deadline.js"

/** What a caller observed: the outcome and the instant (ms from the start) it got it. */
interface Observed {
  readonly outcome: "value" | "cut" | "failed"
  readonly at: number
  /** When the step's interruption finalizer ran, if it was cut. */
  readonly interruptedAt: number | undefined
}

/** The expected observation for `bounded` (completion wins a tie). */
const expected = (s: Scenario): Observed => {
  if (s.after !== undefined && s.after <= bound)
    return { outcome: s.fails ? "failed" : "value", at: s.after, interruptedAt: undefined }
  return { outcome: "cut", at: bound, interruptedAt: bound }
}

/** The step of a scenario; `log` receives the instant of its interruption. */
const stepOf = (s: Scenario, log: { interruptedAt: number | undefined }) =>
  (s.after === undefined
    ? Effect.never
    : Effect.sleep(s.after).pipe(
        Effect.zipRight(s.fails ? Effect.fail("boom" as const) : Effect.succeed("done" as const))
      )
  ).pipe(
    Effect.onInterrupt(() =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          log.interruptedAt = now
        })
      )
    )
  )

const observe = <E>(
  exit: Exit.Exit<Option.Option<"done">, E>,
  at: number,
  interruptedAt: number | undefined
): Observed => ({
  outcome: Exit.isFailure(exit) ? "failed" : Option.isSome(exit.value) ? "value" : "cut",
  at,
  interruptedAt
})

/** Runs `self` in a fiber under TestClock, moving time 1 ms at a time until it is done. */
const runVirtual = <A, E>(self: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    const fiber = yield* Effect.fork(self)
    let exit = yield* Fiber.poll(fiber)
    while (Option.isNone(exit)) {
      yield* TestClock.adjust(1)
      exit = yield* Fiber.poll(fiber)
    }
    return { exit: exit.value, at: (yield* Clock.currentTimeMillis) - start }
  })

describe("deadline scope: bounded vs Effect.timeout (TestClock)", () => {
  for (const s of scenarios) {
    it.effect(`${s.name}: bounded answers as expected, at the expected instant`, () =>
      Effect.gen(function* () {
        const log: { interruptedAt: number | undefined } = { interruptedAt: undefined }
        const start = yield* Clock.currentTimeMillis
        const { exit, at } = yield* runVirtual(bounded(stepOf(s, log), start + bound))
        const seen = observe(exit, at, log.interruptedAt === undefined ? undefined : log.interruptedAt - start)
        assert.deepStrictEqual(seen, expected(s))
      })
    )

    it.effect(`${s.name}: Effect.timeout agrees, except that it lets the timer win a tie`, () =>
      Effect.gen(function* () {
        const log: { interruptedAt: number | undefined } = { interruptedAt: undefined }
        const start = yield* Clock.currentTimeMillis
        const { exit, at } = yield* runVirtual(Effect.timeoutOption(stepOf(s, log), bound))
        // Effect.timeoutOption: `None` when the timer won, failures pass through.
        const outcome: Observed["outcome"] = Exit.isFailure(exit)
          ? "failed"
          : Option.isSome(exit.value)
            ? "value"
            : "cut"
        const stock: Observed = {
          outcome,
          at,
          interruptedAt: log.interruptedAt === undefined ? undefined : log.interruptedAt - start
        }
        const ours = expected(s)
        if (s.after === bound) {
          // The reason for the tie rule: under TestClock the stock timeout wins a same-instant tie.
          assert.deepStrictEqual(stock, { outcome: "cut", at: bound, interruptedAt: bound })
          assert.notStrictEqual(ours.outcome, "cut")
        } else {
          assert.deepStrictEqual(stock, ours)
        }
      })
    )
  }

  it.effect("an interrupted caller interrupts the step and leaves no timer behind", () =>
    Effect.gen(function* () {
      const log: { interruptedAt: number | undefined } = { interruptedAt: undefined }
      const fiber = yield* Effect.fork(bounded(stepOf({ name: "", after: 500, fails: false }, log), bound))
      yield* TestClock.adjust(30)
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(log.interruptedAt, 30)
      yield* TestClock.adjust(1_000)
      assert.strictEqual(log.interruptedAt, 30)
    })
  )
})

describe("deadline scope: the native timer (live clock) gives the same outcomes as the clock's sleep", () => {
  // Fake timers, immediates and clock (`fakeTimers`): no real time passes.
  beforeEach(() => void vi.useFakeTimers(fakeTimers))
  afterEach(() => void vi.useRealTimers())

  plainIt("every scenario, in order, through the live path", async () => {
    const seen: Array<Observed> = []
    for (const s of scenarios) {
      const log: { interruptedAt: number | undefined } = { interruptedAt: undefined }
      const start = Date.now()
      // Timers due now (and the immediates they queue) first, then 1 ms on.
      const done = await settleUnderFakeTimers(
        Effect.runPromiseExit(bounded(stepOf(s, log), start + bound)),
        start,
        (ms) => vi.advanceTimersByTimeAsync(ms)
      )
      seen.push(observe(done.value, done.at, log.interruptedAt === undefined ? undefined : log.interruptedAt - start))
    }
    // Same outcomes, in the same order, completions at the same instants. A cut lands 1 fake ms
    // late: the fake clock runs an immediate queued by a timer callback on its next tick, where
    // a real event loop runs it right after the timers phase of the same instant.
    const lateCut = (o: Observed): Observed =>
      o.outcome === "cut" ? { ...o, at: o.at + 1, interruptedAt: o.at + 1 } : o
    assert.deepStrictEqual(
      seen,
      scenarios.map((s) => lateCut(expected(s)))
    )
  })
})

describe("deadline scope: the native timer and its caller's interruption", () => {
  beforeEach(() => void vi.useFakeTimers(fakeTimers))
  afterEach(() => void vi.useRealTimers())

  plainIt("an interrupted caller interrupts the step, its finalizer run, and leaves no timer behind", async () => {
    const log: { interruptedAt: number | undefined } = { interruptedAt: undefined }
    const start = Date.now()
    const fiber = Effect.runFork(bounded(stepOf({ name: "", after: 500, fails: false }, log), start + bound))
    await vi.advanceTimersByTimeAsync(30)
    const exit = await Effect.runPromise(Fiber.interrupt(fiber))
    assert.isTrue(Exit.isInterrupted(exit))
    assert.strictEqual(log.interruptedAt, start + 30)
    assert.strictEqual(vi.getTimerCount(), 0)
  })

  plainIt("an uninterruptible caller waits for its step, which is not interrupted", async () => {
    const log: { interruptedAt: number | undefined } = { interruptedAt: undefined }
    const start = Date.now()
    const fiber = Effect.runFork(
      Effect.uninterruptible(bounded(stepOf({ name: "", after: 20, fails: false }, log), start + bound))
    )
    await vi.advanceTimersByTimeAsync(10)
    const interrupted = Effect.runPromise(Fiber.interrupt(fiber))
    await vi.advanceTimersByTimeAsync(10)
    await interrupted
    assert.strictEqual(Date.now() - start, 20)
    assert.strictEqual(log.interruptedAt, undefined)
    assert.strictEqual(vi.getTimerCount(), 0)
  })
})

describe("deadline scope: a step that is already its outcome", () => {
  /** Counts the fibers started under it. */
  class Forks extends Supervisor.AbstractSupervisor<number> {
    started = 0
    value = Effect.sync(() => this.started)
    override onStart() {
      this.started++
    }
  }

  /** The fibers `bounded(step, until)` forks, and its exit, under the live clock. */
  const forksOf = <A, E>(step: Effect.Effect<A, E>, until: number) =>
    Effect.gen(function* () {
      const supervisor = new Forks()
      const exit = yield* Effect.exit(Effect.supervised(bounded(step, until), supervisor))
      return { exit, forked: yield* supervisor.value }
    })

  it.live("an `Exit` (an adapter answering with `Effect.succeed`) completes without a fiber or a timer", () =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const ok = yield* forksOf(Effect.succeed("done" as const), now + 1_000)
      assert.deepStrictEqual(ok, { exit: Exit.succeed(Option.some("done" as const)), forked: 0 })
      const failed = yield* forksOf(Effect.fail("boom" as const), now + 1_000)
      assert.deepStrictEqual(failed, { exit: Exit.fail("boom" as const), forked: 0 })
      // At exactly its bound (or past it), an outcome that is already there still counts (tie rule).
      const atBound = yield* forksOf(Effect.succeed("done" as const), now)
      assert.deepStrictEqual(atBound.exit, Exit.succeed(Option.some("done" as const)))
      // A step that has to run still gets its own fiber and timer.
      const running = yield* forksOf(
        Effect.sync(() => "done" as const),
        now + 1_000
      )
      assert.deepStrictEqual(running, { exit: Exit.succeed(Option.some("done" as const)), forked: 1 })
    })
  )

  it.effect("under TestClock, the same outcomes at the instant the step starts", () =>
    Effect.gen(function* () {
      const ok = yield* bounded(Effect.succeed("done" as const), bound)
      assert.deepStrictEqual(ok, Option.some("done" as const))
      const failed = yield* Effect.exit(bounded(Effect.fail("boom" as const), bound))
      assert.deepStrictEqual(failed, Exit.fail("boom" as const))
      assert.strictEqual(yield* Clock.currentTimeMillis, 0)
    })
  )
})
