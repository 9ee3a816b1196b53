import { assert, describe, it } from "@effect/vitest"
import { ModelGateway, type StreamEvent } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Chunk, Clock, Effect, Exit, Fiber, Schema, Stream, TestClock } from "effect"
import {
  Classification,
  command,
  gatewayLayer,
  primaryAnswers,
  refs,
  threeChunkStreamTags,
  tagsOf,
  onRoutes
} from "./fixtures.js"

/** The primary target streams a valid classification in five chunks: the first 50 ms in, then every 20 ms. */
const streamedClassification = primaryAnswers({
  value: { category: "billing", confidence: 0.75 },
  stream: { ttft: 50, interval: 20, chunks: ['{"cat', 'egory":"bi', 'lling","con', 'fidence":0.7', "5}"] }
})

/** The event tags of {@link streamedClassification}, streamed. */
const streamedClassificationTags = [
  "RouteSelected",
  // The serving attempt, announced before its first delta.
  "RouteCommitted",
  "TextDelta",
  "PartialObject",
  "TextDelta",
  "PartialObject",
  "TextDelta",
  "PartialObject",
  "TextDelta",
  "PartialObject",
  // 2 characters on 38: under an eighth, not re-parsed.
  "TextDelta",
  // The scripted provider reports usage at the end: one update, then the total.
  "UsageUpdate",
  "UsageReported",
  "Final"
]

const classify = ModelGateway.workflow("ticket.classify", Classification)
const input: ModelGateway.CommandInput = {
  tenant: "acme",
  messages: [{ _tag: "user", content: "My invoice is wrong" }]
}

/** Runs `effect` in a fiber, moves the clock by `ms`, and returns its exit and the instant it ended. */
const settle = <A, E, R>(effect: Effect.Effect<A, E, R>, ms: number) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(
      effect.pipe(
        Effect.exit,
        Effect.flatMap((exit) => Effect.map(Clock.currentTimeMillis, (at) => ({ exit, at })))
      )
    )
    yield* TestClock.adjust(ms)
    return yield* Fiber.join(fiber)
  })

/** `next` keeps everything `previous` had: strings extended, arrays and objects with every earlier entry extended. */
const extendsValue = (previous: unknown, next: unknown): boolean => {
  if (typeof previous === "string") return typeof next === "string" && next.startsWith(previous)
  if (Array.isArray(previous))
    return Array.isArray(next) && previous.every((item, i) => i < next.length && extendsValue(item, next[i]))
  if (typeof previous === "object" && previous !== null) {
    if (typeof next !== "object" || next === null || Array.isArray(next)) return false
    const after = new Map(Object.entries(next))
    return Object.entries(previous).every(([key, value]) => after.has(key) && extendsValue(value, after.get(key)))
  }
  return previous === next
}

/**
 * Streams `cmd` to its end (up to 1 s of virtual time): its events and the instant it ended. A
 * failed stream fails the test.
 */
const streamEvents = (cmd: ReturnType<typeof command>) =>
  settle(
    Effect.flatMap(ModelGateway.ModelGateway, (gateway) => Stream.runCollect(gateway.stream(cmd))),
    1_000
  ).pipe(
    Effect.map(({ exit, at }) => {
      assert.isTrue(Exit.isSuccess(exit))
      return { events: Exit.isSuccess(exit) ? Chunk.toReadonlyArray(exit.value) : [], at }
    })
  )

const partials = (events: ReadonlyArray<StreamEvent.StreamEvent>) =>
  events.flatMap((e) => (e._tag === "PartialObject" ? [e.value] : []))

describe("typed workflows", () => {
  it.effect("a typed handle gives the value typed and validated by its schema", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* settle(ModelGateway.generateWith(classify, input), 100)
      assert.strictEqual(at, 10)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const { value, result } = exit.value
        const category: "billing" | "technical" | "other" = value.category
        assert.strictEqual(category, "billing")
        assert.strictEqual(value.confidence, 0.75)
        // @ts-expect-error the schema has no `orderId`
        assert.isUndefined(value.orderId)
        assert.strictEqual(result.evidence.workflow, "ticket.classify")
        assert.isTrue(result.evidence.schemaValid)
      }
    }).pipe(onRoutes([ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 0.75 } })]))
  )

  it.effect("a handle whose schema the workflow's output does not satisfy fails with InvalidOutput", () =>
    Effect.gen(function* () {
      const order = ModelGateway.workflow("ticket.classify", Schema.Struct({ orderId: Schema.String }))
      const { exit, at } = yield* settle(ModelGateway.generateWith(order, input), 100)
      assert.strictEqual(at, 10)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
        const error = exit.cause.error
        assert.strictEqual(error._tag, "InvalidOutput")
        if (error._tag === "InvalidOutput") assert.deepStrictEqual(error.issues, ["$.orderId: Missing"])
      } else assert.fail("expected a typed failure")
      // A free-text workflow has no structured value to satisfy a schema.
      const reply = ModelGateway.workflow("ticket.reply", Classification)
      const free = yield* settle(ModelGateway.generateWith(reply, input), 100)
      assert.isTrue(Exit.isFailure(free.exit))
      if (Exit.isFailure(free.exit) && free.exit.cause._tag === "Fail")
        assert.strictEqual(free.exit.cause.error._tag, "InvalidOutput")
      else assert.fail("expected a typed failure")
    }).pipe(
      Effect.provide(
        gatewayLayer({
          [refs.primary]: [
            ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 0.75 } }),
            ScriptedProvider.success({ after: 10, text: "Hello" })
          ]
        })
      )
    )
  )

  it.effect("input that is not a command is a ParseError before any call", () =>
    Effect.gen(function* () {
      const hostile = { ...input, baseUrl: "https://evil.example" }
      const { exit, at } = yield* settle(ModelGateway.generateWith(classify, hostile), 100)
      assert.strictEqual(at, 0)
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "ParseError")
      const logs = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      assert.strictEqual(logs.length, 0)
    }).pipe(Effect.provide(gatewayLayer({})))
  )

  it.effect("a streamed structured answer yields growing partial objects, then the validated value", () =>
    Effect.gen(function* () {
      const { events, at } = yield* streamEvents(command("ticket.classify"))
      // Five chunks: the first 50 ms in, then one every 20 ms.
      assert.strictEqual(at, 130)
      assert.deepStrictEqual(tagsOf(events), streamedClassificationTags)
      const values = partials(events)
      assert.deepStrictEqual(values, [
        {},
        { category: "bi" },
        { category: "billing" },
        // `0.7` may still grow: numbers appear once complete.
        { category: "billing" }
      ])
      for (let i = 1; i < values.length; i++) assert.isTrue(extendsValue(values[i - 1], values[i]), `partial ${i}`)
      const final = events[events.length - 1]
      assert.isTrue(final?._tag === "Final")
      if (final?._tag === "Final") {
        assert.deepStrictEqual(final.result.content.value, { category: "billing", confidence: 0.75 })
        assert.isTrue(final.result.evidence.schemaValid)
        assert.isTrue(extendsValue(values[values.length - 1], final.result.content.value))
      }
    }).pipe(Effect.provide(streamedClassification))
  )

  it.effect("streamWith: the same events, with Final carrying the value typed by the handle's schema", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* settle(Stream.runCollect(ModelGateway.streamWith(classify, input)), 1_000)
      assert.strictEqual(at, 130)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const events = Chunk.toReadonlyArray(exit.value)
        assert.deepStrictEqual(tagsOf(events), streamedClassificationTags)
        const final = events[events.length - 1]
        if (final?._tag === "Final") {
          const category: "billing" | "technical" | "other" = final.value.category
          assert.strictEqual(category, "billing")
          assert.strictEqual(final.value.confidence, 0.75)
          // @ts-expect-error the handle's schema has no `orderId`
          assert.isUndefined(final.value.orderId)
        } else {
          assert.fail("no Final event")
        }
      }
      // A handle whose schema the output does not satisfy ends the stream with InvalidOutput.
      const order = ModelGateway.workflow("ticket.classify", Schema.Struct({ orderId: Schema.String }))
      const failed = yield* settle(Stream.runCollect(ModelGateway.streamWith(order, input)), 1_000)
      assert.isTrue(Exit.isFailure(failed.exit) && failed.exit.cause._tag === "Fail")
      if (Exit.isFailure(failed.exit) && failed.exit.cause._tag === "Fail") {
        assert.strictEqual(failed.exit.cause.error._tag, "InvalidOutput")
      }
    }).pipe(Effect.provide(streamedClassification))
  )

  it.effect("a long structured answer is re-parsed a bounded number of times, each value extending the last", () =>
    Effect.gen(function* () {
      const { events, at } = yield* streamEvents(command("ticket.classify"))
      assert.strictEqual(at, 50 + 49 * 5)
      const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
      assert.strictEqual(text, longText)
      const values = partials(events)
      // 50 deltas of ~2 KB: re-parsed only when the text grew by an eighth since the last parse.
      assert.strictEqual(events.filter((e) => e._tag === "TextDelta").length, 50)
      // 50 deltas of 40-41 characters: every one while the text is under ~330 characters, then fewer.
      assert.strictEqual(values.length, 18)
      for (let i = 1; i < values.length; i++) assert.isTrue(extendsValue(values[i - 1], values[i]), `partial ${i}`)
      assert.isTrue(extendsValue(values[values.length - 1], JSON.parse(longText)))
      const final = events[events.length - 1]
      assert.isTrue(final?._tag === "Final")
      if (final?._tag === "Final")
        assert.deepStrictEqual(final.result.content.value, { category: "technical", confidence: 0.5 })
    }).pipe(
      Effect.provide(
        primaryAnswers({
          text: longText,
          stream: { ttft: 50, interval: 5, chunks: longChunks }
        })
      )
    )
  )

  it.effect("a free-text workflow streams no partial objects", () =>
    Effect.gen(function* () {
      const { events, at } = yield* streamEvents(command("ticket.reply"))
      assert.strictEqual(at, 90)
      assert.deepStrictEqual(tagsOf(events), threeChunkStreamTags)
      assert.deepStrictEqual(partials(events), [])
    }).pipe(
      Effect.provide(
        primaryAnswers({
          text: '{"looks":"like json"}',
          stream: { ttft: 50, interval: 20, chunks: ['{"looks"', ':"like', ' json"}'] }
        })
      )
    )
  )
})

// About 2 KB of JSON: notes first (dropped by the schema's decoder), then the classification.
const longText = JSON.stringify({
  notes: Array.from({ length: 55 }, (_, i) => `note ${String(i).padStart(2, "0")}: the customer wrote again`),
  category: "technical",
  confidence: 0.5
})
const longChunks = Array.from({ length: 50 }, (_, i) =>
  longText.slice(Math.floor((i * longText.length) / 50), Math.floor(((i + 1) * longText.length) / 50))
)
