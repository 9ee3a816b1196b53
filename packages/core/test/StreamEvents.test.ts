/**
 * The stream's route-metadata and usage events: `RouteCommitted` describes the attempt that
 * actually streams (after a fallback before the first byte too), `UsageUpdate`s carry tokens and
 * cost as the provider reports them (held until the commit point, never for an attempt that did
 * not serve), `UsageReported` carries the call's cost, and non-streaming targets are excluded from
 * streams with their reason in the decision.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { Usage } from "@modelgate/core/ModelResult"
import { costOf } from "@modelgate/core/Pricing"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { StreamEvent } from "@modelgate/core/StreamEvent"
import { ScriptedProvider } from "@modelgate/testing"
import { Chunk, Effect, Exit, Fiber, Layer, Schema, Stream, TestClock } from "effect"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import { command, definition, providers, refs, targets, workflows } from "./fixtures.js"

const usage = (inputTokens: number, outputTokens: number) => new Usage({ inputTokens, outputTokens })

/** The primary's (`openai`) adapter replaced by one streaming `events`; the others scripted. */
const withPrimaryEvents = (
  events: ReadonlyArray<ProviderAdapter.ProviderStreamEvent> | "failAfterUsage",
  scripts: ScriptedProvider.Scripts = {},
  def: GatewayConfig.Definition = definition
) => {
  const primary = Layer.succeed(ProviderAdapter.tag("openai"), {
    provider: "openai",
    generate: () => Effect.die("not used: these tests stream"),
    stream: () =>
      events === "failAfterUsage"
        ? Stream.concat(
            Stream.make<Array<ProviderAdapter.ProviderStreamEvent>>(
              { _tag: "Started", requestId: "req-1", httpStatus: 200 },
              { _tag: "Usage", usage: usage(500, 0) }
            ),
            Stream.fail(new ProviderError({ kind: "overloaded", processed: "no", detail: "overloaded before a token" }))
          )
        : Stream.fromIterable(events)
  })
  return ModelGateway.layer(def).pipe(
    Layer.provideMerge(
      Layer.mergeAll(primary, ScriptedProvider.layer({ providers: providers.filter((p) => p !== "openai"), scripts }))
    ),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
    )
  )
}
const { ProviderError } = ProviderAdapter

const run = (cmd = command("ticket.reply")) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const fiber = yield* Effect.fork(Effect.exit(Stream.runCollect(gateway.stream(cmd))))
    yield* TestClock.adjust(1_000)
    const exit = yield* Fiber.join(fiber)
    assert.isTrue(Exit.isSuccess(exit))
    return Exit.isSuccess(exit) ? Chunk.toReadonlyArray(exit.value) : []
  })

const tags = (events: ReadonlyArray<StreamEvent>) => events.map((e) => e._tag)
const primaryTarget = targets.find((t) => t.ref === refs.primary)!

describe("stream route metadata", () => {
  it.effect("RouteCommitted comes once, right before the first delta, and describes the serving attempt", () =>
    Effect.gen(function* () {
      const events = yield* run()
      assert.deepStrictEqual(tags(events), [
        "RouteSelected",
        "RouteCommitted",
        "TextDelta",
        "TextDelta",
        "UsageUpdate",
        "UsageReported",
        "Final"
      ])
      const committed = events[1]
      assert.deepStrictEqual(
        committed?._tag === "RouteCommitted" && {
          target: String(committed.target),
          model: committed.model,
          provider: committed.provider,
          position: committed.position,
          attempt: committed.attempt,
          fallback: committed.fallback,
          policyVersion: committed.policyVersion
        },
        {
          target: refs.primary,
          model: "small",
          provider: "openai",
          position: 0,
          attempt: 1,
          fallback: false,
          policyVersion: "policy-7"
        }
      )
      const final = events[events.length - 1]
      assert.strictEqual(
        committed?._tag === "RouteCommitted" && final?._tag === "Final" && committed.routeId,
        final?._tag === "Final" ? final.result.evidence.routeId : "no final"
      )
    }).pipe(
      Effect.provide(
        withPrimaryEvents([
          { _tag: "Started", requestId: "req-1", httpStatus: 200 },
          { _tag: "TextDelta", text: "Hello" },
          { _tag: "TextDelta", text: " there" },
          { _tag: "Finish", finishReason: "stop", refusal: false, usage: usage(40, 2), modelVersion: "small" }
        ])
      )
    )
  )

  it.effect("a fallback before the first byte: RouteCommitted names the fallback, not the first target", () =>
    Effect.gen(function* () {
      const events = yield* run()
      // The primary is tried (and retried: overloaded, not processed) before the fallback streams.
      const selected = events.flatMap((e) => (e._tag === "RouteSelected" ? [[String(e.target), e.attempt]] : []))
      assert.deepStrictEqual(selected, [
        [refs.primary, 1],
        [refs.primary, 2],
        [refs.primary, 3],
        [refs.fallback, 1]
      ])
      assert.deepStrictEqual(tags(events).slice(3, 6), ["RouteSelected", "RouteCommitted", "TextDelta"])
      const committed = events.filter((e) => e._tag === "RouteCommitted")
      assert.strictEqual(committed.length, 1)
      const [c] = committed
      assert.deepStrictEqual(
        c?._tag === "RouteCommitted" && [String(c.target), c.model, c.position, c.fallback, c.attempt],
        [refs.fallback, "haiku", 1, true, 1]
      )
      // The failed attempt reported 500 input tokens before failing: that usage never appears as an update.
      const updates = events.flatMap((e) => (e._tag === "UsageUpdate" ? [e] : []))
      assert.deepStrictEqual(
        updates.map((u) => String(u.target)),
        [refs.fallback]
      )
    }).pipe(
      Effect.provide(
        withPrimaryEvents("failAfterUsage", {
          [refs.fallback]: [ScriptedProvider.success({ after: 0, stream: { ttft: 30, interval: 0, chunks: ["ok"] } })]
        })
      )
    )
  )
})

describe("stream usage updates", () => {
  it.effect("usage reported mid-stream: held to the commit point, then sent on each change with its cost", () =>
    Effect.gen(function* () {
      const events = yield* run()
      assert.deepStrictEqual(tags(events), [
        "RouteSelected",
        "RouteCommitted",
        "UsageUpdate",
        "TextDelta",
        "UsageUpdate",
        "TextDelta",
        "UsageUpdate",
        "UsageReported",
        "Final"
      ])
      const updates = events.flatMap((e) => (e._tag === "UsageUpdate" ? [e] : []))
      assert.deepStrictEqual(
        updates.map((u) => [u.usage.inputTokens, u.usage.outputTokens, u.cost, u.estimated]),
        [
          [1_000, 1, costOf(primaryTarget, usage(1_000, 1)), false],
          [1_000, 5, costOf(primaryTarget, usage(1_000, 5)), false],
          [1_000, 9, costOf(primaryTarget, usage(1_000, 9)), false]
        ]
      )
      // 1,000 in at $0.40/M and 9 out at $1.60/M: 400,000 + 14,400 billionths.
      assert.strictEqual(updates[2]?.cost, 0.0004144)
      const reported = events[events.length - 2]
      const final = events[events.length - 1]
      assert.isTrue(reported?._tag === "UsageReported" && final?._tag === "Final")
      if (reported?._tag === "UsageReported" && final?._tag === "Final") {
        assert.strictEqual(reported.cost, final.result.evidence.cost.actual)
        assert.strictEqual(reported.cost, 0.0004144)
      }
    }).pipe(
      Effect.provide(
        withPrimaryEvents([
          { _tag: "Started", requestId: "req-1", httpStatus: 200 },
          // Anthropic's message_start: the input, before any token.
          { _tag: "Usage", usage: usage(1_000, 1) },
          { _tag: "TextDelta", text: "Hello" },
          { _tag: "Usage", usage: usage(1_000, 5) },
          // Unchanged: no second update.
          { _tag: "Usage", usage: usage(1_000, 5) },
          { _tag: "TextDelta", text: " there" },
          { _tag: "Finish", finishReason: "stop", refusal: false, usage: usage(1_000, 9), modelVersion: "small" }
        ])
      )
    )
  )

  it.effect("a provider that reports no usage: one estimated update at the end, from the gateway's count", () =>
    Effect.gen(function* () {
      const events = yield* run()
      const updates = events.flatMap((e) => (e._tag === "UsageUpdate" ? [e] : []))
      assert.strictEqual(updates.length, 1)
      const [update] = updates
      const final = events[events.length - 1]
      assert.isTrue(update?.estimated)
      if (final?._tag === "Final" && update !== undefined) {
        assert.deepStrictEqual(update.usage, final.result.evidence.usage)
        assert.strictEqual(update.cost, costOf(primaryTarget, update.usage))
        assert.strictEqual(update.cost, final.result.evidence.cost.actual)
      }
    }).pipe(
      Effect.provide(
        withPrimaryEvents([
          { _tag: "Started", requestId: "req-1", httpStatus: 200 },
          { _tag: "TextDelta", text: "Hello there" },
          { _tag: "Finish", finishReason: "stop", refusal: false, usage: undefined, modelVersion: undefined }
        ])
      )
    )
  )
})

describe("non-streaming targets", () => {
  const noStreaming = (t: ModelTarget) =>
    Schema.decodeSync(ModelTarget)({
      ...Schema.encodeSync(ModelTarget)(t),
      capabilities: { ...Schema.encodeSync(ModelTarget)(t).capabilities, streaming: false }
    })
  const def: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({
      targets: targets.map((t) => (t.ref === refs.primary ? noStreaming(t) : t)),
      workflows
    }),
    schemas: definition.schemas
  }

  it.effect("are excluded from streams (CAPABILITY_MISSING, missing: streaming) and still serve generate", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const streamed = (yield* gateway.router.resolve(command("ticket.reply"), "stream")).decision
      assert.deepStrictEqual(streamed.eligible.map(String), [refs.fallback])
      assert.deepStrictEqual(
        streamed.excluded.map((e) => [String(e.target), e.reason, e.detail]),
        [[refs.primary, "CAPABILITY_MISSING", "missing: streaming"]]
      )
      const generated = (yield* gateway.router.resolve(command("ticket.reply"), "generate")).decision
      assert.deepStrictEqual(generated.eligible.map(String), [refs.primary, refs.fallback])
      // The stream itself: the non-streaming target is never attempted.
      const events = yield* run()
      const attempted = events.flatMap((e) =>
        e._tag === "RouteSelected" || e._tag === "RouteCommitted" ? [String(e.target)] : []
      )
      assert.deepStrictEqual(attempted, [refs.fallback, refs.fallback])
      const final = events[events.length - 1]
      assert.deepStrictEqual(
        final?._tag === "Final" && final.result.evidence.excluded.map((e) => [String(e.target), e.reason]),
        [[refs.primary, "CAPABILITY_MISSING"]]
      )
    }).pipe(
      Effect.provide(
        withPrimaryEvents(
          [],
          {
            [refs.fallback]: [ScriptedProvider.success({ after: 0, stream: { ttft: 30, interval: 0, chunks: ["ok"] } })]
          },
          def
        )
      )
    )
  )
})
