/**
 * An adapter that owns the attempt's deadline (`ProviderAdapter.generateUntil`, issue 27 item 2):
 * under the live clock the engine hands it the bound instead of forking the attempt and arming a
 * timer; under any other clock (TestClock) the engine races `generate` against the clock's sleep as
 * for any adapter, with the same tie rule (a completion at exactly the bound wins).
 */
import { assert, describe, it } from "@effect/vitest"
import type { ProviderAdapter, ProviderResponse } from "@modelgate/core/ProviderAdapter"
import { simpleRequest } from "@modelgate/testing/AdapterFixtures"
import { fakeTimers } from "@modelgate/testing/DeadlineScenarios"
import { Clock, Effect, Fiber, Option, Stream, TestClock } from "effect"
import { afterEach, beforeEach, it as plainIt, vi } from "vitest"
import { generateUntil } from "../src/internal/attempt.js"
import { providerAnswer } from "./fixtures.js"

const response = providerAnswer()

const request = simpleRequest("owned", "m")

/** An adapter whose `generate` answers after `afterMs` of the clock, recording which path ran. */
const adapterAnswering = (afterMs: number, calls: Array<string>): ProviderAdapter => ({
  provider: "owned",
  generate: () =>
    Effect.suspend(() => {
      calls.push("generate")
      return Effect.as(Effect.sleep(afterMs), response)
    }),
  generateUntil: (_request, until) =>
    Effect.sync(() => {
      calls.push(`generateUntil@${until}`)
      return Option.some(response)
    }),
  stream: () => Stream.dieMessage("not used")
})

describe("an adapter-owned deadline under TestClock: the engine's raced timer", () => {
  for (const [name, after, outcome] of [
    ["completes before the bound", 50, "value"],
    ["completes exactly at the bound", 100, "value"],
    ["completes after the bound", 150, "cut"]
  ] as const) {
    it.effect(`${name}: ${outcome} at the expected instant, generateUntil not used`, () =>
      Effect.gen(function* () {
        const calls: Array<string> = []
        const start = yield* Clock.currentTimeMillis
        const fiber = yield* Effect.fork(generateUntil(adapterAnswering(after, calls), request, start + 100))
        let exit = yield* Fiber.poll(fiber)
        while (Option.isNone(exit)) {
          yield* TestClock.adjust(1)
          exit = yield* Fiber.poll(fiber)
        }
        const at = (yield* Clock.currentTimeMillis) - start
        const value = yield* exit.value
        assert.strictEqual(Option.isSome(value) ? "value" : "cut", outcome)
        assert.strictEqual(at, Math.min(after, 100))
        assert.deepStrictEqual(calls, ["generate"])
      })
    )
  }
})

describe("an adapter-owned deadline under the live clock", () => {
  // Fake timers, immediates and clock (`fakeTimers`): no real time passes.
  beforeEach(() => void vi.useFakeTimers(fakeTimers))
  afterEach(() => void vi.useRealTimers())

  plainIt("the engine hands the bound to generateUntil: no fork, no timer of its own", async () => {
    const calls: Array<string> = []
    const until = Date.now() + 100
    const answer = await Effect.runPromise(generateUntil(adapterAnswering(50, calls), request, until))
    assert.isTrue(Option.isSome(answer))
    assert.deepStrictEqual(calls, [`generateUntil@${until}`])
    assert.strictEqual(vi.getTimerCount(), 0)
  })

  plainIt("an adapter without generateUntil is bounded by the engine (generate, one timer)", async () => {
    const calls: Array<string> = []
    const { generateUntil: _owned, ...plain } = adapterAnswering(0, calls)
    let answer: Option.Option<ProviderResponse> | undefined
    const running = Effect.runPromise(generateUntil(plain, request, Date.now() + 100)).then((a) => {
      answer = a
    })
    while (answer === undefined) await vi.advanceTimersByTimeAsync(1)
    await running
    assert.isTrue(Option.isSome(answer))
    assert.deepStrictEqual(calls, ["generate"])
  })
})
