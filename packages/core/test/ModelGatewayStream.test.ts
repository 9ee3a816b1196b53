import { assert, describe, it } from "@effect/vitest"
import { CallRecorder, ModelGateway } from "@modelgate/core"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ScriptedProvider } from "@modelgate/testing"
import { Chunk, Clock, Effect, Exit, Fiber, Stream, TestClock } from "effect"
import {
  command,
  gatewayLayer,
  primaryAnswers,
  refs,
  target,
  targets,
  threeChunkStreamTags,
  workflows,
  definitionOf,
  tagsOf
} from "./fixtures.js"

const collect = (cmd: ReturnType<typeof command>, ms: number) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const fiber = yield* Effect.fork(
      Stream.runCollect(gateway.stream(cmd)).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Effect.map(Clock.currentTimeMillis, (at) => ({ exit, at })))
      )
    )
    yield* TestClock.adjust(ms)
    return yield* Fiber.join(fiber)
  })

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const withLimits = (limits: { ttftTimeout?: number; streamIdleTimeout?: number; maxAttempts?: number }) =>
  definitionOf({
    targets: targets.map((t) =>
      t.ref === refs.primary ? target(refs.primary, "openai", { mode: "json_schema_strict", limits }) : t
    ),
    workflows
  })

describe("ModelGateway.stream", () => {
  it.effect("streams route, deltas, usage and the final envelope", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* collect(command("ticket.reply"), 1_000)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const events = Chunk.toReadonlyArray(exit.value)
        assert.deepStrictEqual(tagsOf(events), threeChunkStreamTags)
        const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
        assert.strictEqual(text, "Hello there, friend")
        const final = events[events.length - 1]
        assert.isTrue(final?._tag === "Final" && final.result.content.text === "Hello there, friend")
      }
      assert.strictEqual(at, 90)
      const [record] = yield* records
      assert.strictEqual(record?.mode, "stream")
      assert.strictEqual(record?.outcome, "success")
    }).pipe(
      Effect.provide(
        primaryAnswers({
          text: "Hello there, friend",
          stream: { ttft: 50, interval: 20, chunks: ["Hello", " there,", " friend"] }
        })
      )
    )
  )

  it.effect("time to first token exceeded before the commit point: falls back at once", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* collect(command("ticket.reply"), 1_000)
      assert.isTrue(Exit.isSuccess(exit))
      const logs = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      assert.deepStrictEqual(
        logs.map((l) => [l.target, l.startedAt, l.endedAt, l.interrupted]),
        [
          [refs.primary, 0, 100, true],
          [refs.fallback, 100, 130, false]
        ]
      )
      assert.strictEqual(at, 130)
      if (Exit.isSuccess(exit)) {
        const selected = Chunk.toReadonlyArray(exit.value).flatMap((e) =>
          e._tag === "RouteSelected" ? [e.target] : []
        )
        assert.deepStrictEqual(selected.map(String), [refs.primary, refs.fallback])
      }
    }).pipe(
      Effect.provide(
        gatewayLayer(
          {
            [refs.primary]: [ScriptedProvider.success({ after: 0, stream: { ttft: 300, interval: 10 } })],
            [refs.fallback]: [ScriptedProvider.success({ after: 0, stream: { ttft: 30, interval: 0, chunks: ["ok"] } })]
          },
          withLimits({ ttftTimeout: 100, maxAttempts: 1 })
        )
      )
    )
  )

  it.effect("a failure after the first delta ends the stream with a typed error, incomplete, usage counted", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* collect(command("ticket.reply"), 1_000)
      assert.strictEqual(at, 60)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail")
        assert.strictEqual(exit.cause.error._tag, "ProviderUnavailable")
      assert.strictEqual((yield* (yield* ScriptedProvider.ScriptedProvider).attempts).length, 1)
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "incomplete")
      assert.isTrue((record?.evidence.usage.outputTokens ?? 0) > 0)
      assert.isTrue((record?.evidence.cost.actual ?? 0) > 0)
    }).pipe(
      Effect.provide(
        primaryAnswers(
          {
            stream: {
              ttft: 40,
              interval: 20,
              chunks: ["one two", " three four", " five"],
              failAfterChunks: { count: 2, error: new ProviderError({ kind: "server_error", processed: "maybe" }) }
            }
          },
          { [refs.fallback]: [ScriptedProvider.success({ after: 0 })] }
        )
      )
    )
  )

  it.effect("a stream stalled past the gap limit after the commit point fails as incomplete", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* collect(command("ticket.reply"), 2_000)
      // first chunk at 20, the next would come at 320; the 100 ms gap limit fires at 120
      assert.strictEqual(at, 120)
      assert.isTrue(Exit.isFailure(exit))
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "incomplete")
      assert.strictEqual(record?.evidence.attempts[0]?.outcome, "unavailable")
    }).pipe(
      Effect.provide(
        gatewayLayer(
          {
            [refs.primary]: [
              ScriptedProvider.success({ after: 0, stream: { ttft: 20, interval: 300, chunks: ["a", "b", "c"] } })
            ]
          },
          withLimits({ streamIdleTimeout: 100 })
        )
      )
    )
  )

  it.effect("the stream is cut at the output cap", () =>
    Effect.gen(function* () {
      const words = Array.from({ length: 40 }, (_, i) => ` word${i}`)
      const { exit } = yield* collect(command("ticket.reply", { maxOutputTokens: 16 }), 2_000)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const final = Chunk.toReadonlyArray(exit.value).find((e) => e._tag === "Final")
        assert.isTrue(final?._tag === "Final" && final.result.finishReason === "length")
        const deltas = Chunk.toReadonlyArray(exit.value).filter((e) => e._tag === "TextDelta").length
        assert.isTrue(deltas < words.length)
        if (final?._tag === "Final") assert.isTrue(final.result.evidence.usage.outputTokens >= 16)
      }
    }).pipe(
      Effect.provide(
        primaryAnswers({
          stream: { ttft: 10, interval: 1, chunks: Array.from({ length: 40 }, (_, i) => ` word${i}`) }
        })
      )
    )
  )
})
