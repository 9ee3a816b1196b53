/**
 * Hostile input (issue 12, item 2): a streamed delta of any size gives a typed outcome, and an
 * attempt is always recorded with its usage and cost — also when the adapter dies with a defect.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway, ProviderAdapter } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Chunk, Effect, Exit, Fiber, Layer, Option, Stream, TestClock } from "effect"
import { command, definition, gatewayLayer, providers, refs } from "./fixtures.js"

/** Moves virtual time and lets real event-loop turns (large deltas are counted in slices) happen, until `fiber` is done. */
const awaitWithTime = <A, E>(fiber: Fiber.RuntimeFiber<A, E>) =>
  Effect.gen(function* () {
    for (;;) {
      const done = yield* Fiber.poll(fiber)
      if (Option.isSome(done)) return yield* done.value
      yield* TestClock.adjust(10)
      yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    }
  })

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

describe("a streamed delta of any size", () => {
  for (const [name, delta] of [
    ["6 MB without whitespace", "x".repeat(6_000_000)],
    ["6 MB of JSON", JSON.stringify({ answer: "y".repeat(6_000_000) })]
  ] as const) {
    it.effect(`${name}: a typed outcome; the attempt is recorded with usage and cost`, () =>
      Effect.gen(function* () {
        const gateway = yield* ModelGateway.ModelGateway
        const fiber = yield* Effect.fork(Effect.exit(Stream.runCollect(gateway.stream(command("ticket.reply")))))
        const exit = yield* awaitWithTime(fiber)
        assert.isTrue(Exit.isSuccess(exit))
        if (Exit.isSuccess(exit)) {
          const events = Chunk.toReadonlyArray(exit.value)
          const final = events[events.length - 1]
          assert.strictEqual(final?._tag, "Final")
          // Counted, and cut at the output cap it pays for.
          if (final?._tag === "Final") assert.strictEqual(final.result.finishReason, "length")
        }
        const [record] = yield* records
        assert.strictEqual(record?.outcome, "success")
        const [attempt] = record?.evidence.attempts ?? []
        assert.strictEqual(attempt?.outcome, "success")
        assert.isAbove(attempt?.usage?.outputTokens ?? 0, 4_000)
        assert.isAbove(attempt?.cost ?? 0, 0)
      }).pipe(
        Effect.provide(
          gatewayLayer({
            [refs.primary]: [
              ScriptedProvider.success({ after: 0, text: delta, stream: { ttft: 10, interval: 10, chunks: [delta] } })
            ]
          })
        )
      )
    )
  }
})

describe("an adapter that dies", () => {
  /** Scripted providers, with the primary's adapter replaced by one whose `generate` dies. */
  const dying = Layer.succeed(ProviderAdapter.tag("openai"), {
    provider: "openai",
    generate: () => Effect.die(new RangeError("Maximum call stack size exceeded")),
    stream: () => Stream.die(new RangeError("Maximum call stack size exceeded"))
  })
  const layer = ModelGateway.layer(definition).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        dying,
        ScriptedProvider.layer({
          providers: providers.filter((p) => p !== "openai"),
          scripts: { [refs.fallback]: [ScriptedProvider.success({ after: 5, text: "ok" })] }
        })
      )
    ),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
    )
  )

  it.effect("the attempt is recorded (unavailable, adapter_defect, input billed) and the call falls back", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const fiber = yield* Effect.fork(Effect.exit(gateway.generate(command("ticket.reply"))))
      const exit = yield* awaitWithTime(fiber)
      assert.isTrue(Exit.isSuccess(exit))
      const [record] = yield* records
      const attempts = record?.evidence.attempts ?? []
      // Retried like a transport failure, then the fallback answers.
      const died = attempts[0]
      const answered = attempts[attempts.length - 1]
      assert.strictEqual(died?.outcome, "unavailable")
      assert.strictEqual(died?.errorTag, "ProviderUnavailable")
      assert.isAbove(died?.usage?.inputTokens ?? 0, 0)
      assert.strictEqual(answered?.outcome, "success")
      assert.strictEqual(String(record?.evidence.target), refs.fallback)
    }).pipe(Effect.provide(layer))
  )
})
