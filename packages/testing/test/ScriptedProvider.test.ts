import { assert, describe, it } from "@effect/vitest"
import { ModelTarget, TargetRef } from "@modelgate/core/ModelTarget"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Duration, Effect, Fiber, Stream, TestClock } from "effect"
import { target } from "../src/AdapterFixtures.js"
import * as ScriptedProvider from "../src/ScriptedProvider.js"

/** A target of `provider` under `ref` (the scripted provider reads only these two). */
const targetOf = (ref: string, provider: string) =>
  new ModelTarget({ ...target(provider, "m"), ref: TargetRef.make(ref) })

const a = targetOf("model://openai/small@eu", "openai")
const b = targetOf("model://anthropic/haiku@eu", "anthropic")

const requestFor = (target: ModelTarget, messages = 1): ProviderAdapter.ProviderRequest => ({
  target,
  messages: Array.from({ length: messages }, () => ({ _tag: "user" as const, content: "hi" })),
  tools: [],
  toolChoice: undefined,
  output: undefined,
  maxOutputTokens: 100,
  timeout: Duration.millis(400)
})

const Scripted = ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts: {} })

/**
 * A long run in three equal segments. The log must cost O(1) per attempt, so the third segment
 * takes about as long as the first (the first also pays the JIT's warm-up). The former log copied
 * the whole array on every attempt (O(n²)): its third segment costs 5× its first. The test compares
 * the segments with each other, not with a wall-clock bound, so a loaded machine slows both alike.
 */
const SEGMENT = 20_000
const SEGMENTS = 3
const MAX_GROWTH = 2.5

describe("ScriptedProvider", () => {
  it.effect("logs every attempt in start order, per target, as snapshots", () =>
    Effect.gen(function* () {
      const openai = yield* ProviderAdapter.tag("openai")
      const anthropic = yield* ProviderAdapter.tag("anthropic")
      const scripted = yield* ScriptedProvider.ScriptedProvider
      yield* openai.generate(requestFor(a, 1))
      yield* anthropic.generate(requestFor(b, 2))
      const before = yield* scripted.attempts
      yield* Stream.runDrain(openai.stream(requestFor(a, 3)))
      const all = yield* scripted.attempts
      assert.deepStrictEqual(
        all.map((l) => [l.target, l.provider, l.mode, l.messages, l.endedAt, l.interrupted]),
        [
          [a.ref, "openai", "generate", 1, 0, false],
          [b.ref, "anthropic", "generate", 2, 0, false],
          [a.ref, "openai", "stream", 3, 0, false]
        ]
      )
      // What was read earlier does not grow with later attempts.
      assert.strictEqual(before.length, 2)
      assert.deepStrictEqual(
        (yield* scripted.attemptsOn(a.ref)).map((l) => [l.mode, l.messages]),
        [
          ["generate", 1],
          ["stream", 3]
        ]
      )
      assert.deepStrictEqual(
        (yield* scripted.attemptsOn(b.ref)).map((l) => l.messages),
        [2]
      )
      assert.deepStrictEqual(yield* scripted.attemptsOn("model://none/x@eu"), [])
      // The per-target view is the same log entries (ended, interrupted are updated in place).
      assert.strictEqual((yield* scripted.attemptsOn(b.ref))[0], all[1])
    }).pipe(Effect.provide(Scripted))
  )

  it.effect(
    `a long run costs O(1) per attempt: the last of ${SEGMENTS} segments of ${SEGMENT} attempts takes < ${MAX_GROWTH}× the first`,
    () =>
      Effect.gen(function* () {
        const openai = yield* ProviderAdapter.tag("openai")
        const anthropic = yield* ProviderAdapter.tag("anthropic")
        const scripted = yield* ScriptedProvider.ScriptedProvider
        const ra = requestFor(a)
        const rb = requestFor(b)
        const segmentMs: Array<number> = []
        for (let s = 0; s < SEGMENTS; s++) {
          const started = performance.now()
          for (let i = 0; i < SEGMENT; i++) yield* (i % 2 === 0 ? openai : anthropic).generate(i % 2 === 0 ? ra : rb)
          segmentMs.push(performance.now() - started)
        }
        assert.strictEqual((yield* scripted.attempts).length, SEGMENT * SEGMENTS)
        assert.strictEqual((yield* scripted.attemptsOn(b.ref)).length, (SEGMENT * SEGMENTS) / 2)
        const [first = Number.NaN, , last = Number.NaN] = segmentMs
        assert.isBelow(last / first, MAX_GROWTH, `segments took ${segmentMs.map((ms) => Math.round(ms)).join(", ")} ms`)
      }).pipe(Effect.provide(Scripted))
  )

  it.effect(
    "lateWork: an abandoned attempt's scripted completion is logged at its virtual instant, never delivered",
    () =>
      Effect.gen(function* () {
        const openai = yield* ProviderAdapter.tag("openai")
        const scripted = yield* ScriptedProvider.ScriptedProvider
        // The client gives up at 250 ms; the server answers at 900 ms.
        const abandoned = yield* openai.generate(requestFor(a)).pipe(Effect.timeout(Duration.millis(250)), Effect.fork)
        yield* TestClock.adjust(Duration.millis(250))
        const exit = yield* Fiber.await(abandoned)
        assert.strictEqual(exit._tag, "Failure")
        const [log] = yield* scripted.attempts
        assert.deepStrictEqual(
          [log?.endedAt, log?.interrupted, log?.scriptedCompletionAt, log?.late],
          [250, true, 900, undefined]
        )
        yield* TestClock.adjust(Duration.millis(649))
        assert.strictEqual(log?.late, undefined)
        yield* TestClock.adjust(Duration.millis(1))
        assert.deepStrictEqual(log?.late, { at: 900, outcome: "Success", httpStatus: 200 })
        // A failure that completes late carries its status; a hang never completes.
        const failing = yield* openai.generate(requestFor(b)).pipe(Effect.timeout(Duration.millis(50)), Effect.fork)
        const hanging = yield* openai.generate(requestFor(b)).pipe(Effect.timeout(Duration.millis(50)), Effect.fork)
        yield* TestClock.adjust(Duration.millis(10_000))
        yield* Fiber.await(failing)
        yield* Fiber.await(hanging)
        const logs = yield* scripted.attemptsOn(b.ref)
        assert.deepStrictEqual(
          logs.map((l) => [l.startedAt, l.endedAt, l.scriptedCompletionAt, l.late]),
          [
            [900, 950, 1000, { at: 1000, outcome: "Fail", httpStatus: 503 }],
            [900, 950, undefined, undefined]
          ]
        )
      }).pipe(
        Effect.provide(
          ScriptedProvider.layer({
            providers: ["openai"],
            lateWork: true,
            scripts: {
              [a.ref]: [ScriptedProvider.success({ after: 900 })],
              [b.ref]: [ScriptedProvider.unavailable({ after: 100 }), ScriptedProvider.hang]
            }
          })
        )
      )
  )

  it.effect("without lateWork an abandoned attempt's completion is not logged", () =>
    Effect.gen(function* () {
      const openai = yield* ProviderAdapter.tag("openai")
      const scripted = yield* ScriptedProvider.ScriptedProvider
      const abandoned = yield* openai.generate(requestFor(a)).pipe(Effect.timeout(Duration.millis(250)), Effect.fork)
      yield* TestClock.adjust(Duration.millis(2_000))
      yield* Fiber.await(abandoned)
      const [log] = yield* scripted.attempts
      assert.deepStrictEqual(
        [log?.endedAt, log?.interrupted, log?.scriptedCompletionAt, log?.late],
        [250, true, 900, undefined]
      )
    }).pipe(
      Effect.provide(
        ScriptedProvider.layer({
          providers: ["openai"],
          scripts: { [a.ref]: [ScriptedProvider.success({ after: 900 })] }
        })
      )
    )
  )
})
