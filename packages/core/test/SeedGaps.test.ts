/**
 * Gaps found by an audit of the seed tests (issue 12): `schemaValid` false and absent, a repair that
 * the test fails without, request-time exclusion for images and tools, tool-call deltas through
 * `ModelGateway.stream`, and a steady stream cut at its attempt's total timeout — which must be
 * recorded as a timeout, and not charged to the target's breaker when the call's deadline cut it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, type GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import type { GatewayError } from "@modelgate/core/Errors"
import { CallRecord, type ModelResult } from "@modelgate/core/ModelResult"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import type { StreamEvent } from "@modelgate/core/StreamEvent"
import { countText } from "@modelgate/core/TokenEstimator"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Clock, Effect, Exit, Fiber, Layer, Option, Schema, Stream, TestClock } from "effect"
import {
  command,
  definition,
  gatewayLayer,
  imageMessages,
  invalidOnEveryRoute,
  lookupTool,
  primaryAnswers,
  providers,
  refs,
  target,
  targets,
  workflow,
  workflows,
  definitionOf,
  onRoutes
} from "./fixtures.js"
import { generateFor } from "./virtualTime.js"

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const scripted = ScriptedProvider.ScriptedProvider

const runFor = generateFor

/** Forks `stream`, advances virtual time by `ms`; every event with the instant it reached the consumer. */
const streamFor = (cmd: ReturnType<typeof command>, ms: number) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const seen: Array<{ readonly event: StreamEvent; readonly at: number }> = []
    const fiber = yield* Effect.fork(
      gateway.stream(cmd).pipe(
        Stream.tap((event) => Effect.map(Clock.currentTimeMillis, (at) => void seen.push({ event, at }))),
        Stream.runDrain,
        Effect.exit,
        Effect.flatMap((exit) => Effect.map(Clock.currentTimeMillis, (at) => ({ exit, at })))
      )
    )
    yield* TestClock.adjust(ms)
    const done = yield* Fiber.poll(fiber)
    assert.isTrue(Option.isSome(done), "stream did not end in time")
    return { ...(yield* Fiber.join(fiber)), seen }
  })

const failureOf = (exit: Exit.Exit<unknown, GatewayError>): GatewayError | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

const successOf = (exit: Exit.Exit<ModelResult, GatewayError>): ModelResult => {
  if (Exit.isSuccess(exit)) return exit.value
  return assert.fail(`expected a success, got ${Cause.pretty(exit.cause)}`)
}

// ---------------------------------------------------------------------------------------------
// A definition with a vision target and repair / no-repair twins of the structured workflow
// ---------------------------------------------------------------------------------------------

const visionRef = "model://openai/vision@eu" as const
const withVision = (t: ModelTarget): ModelTarget => {
  const encoded = Schema.encodeSync(ModelTarget)(t)
  return Schema.decodeSync(ModelTarget)({ ...encoded, capabilities: { ...encoded.capabilities, vision: true } })
}
const visionTarget = withVision(target(visionRef, "openai"))

const output = { schema: "Classification", schemaVersion: "1" } as const
const seedDefinition: GatewayConfig.Definition = definitionOf({
  targets: [...targets, visionTarget],
  workflows: [
    ...workflows,
    workflow({ name: "seed.repair", repair: true, output }),
    workflow({ name: "seed.noRepair", repair: false, output }),
    workflow({ name: "seed.vision", route: [refs.primary, visionRef] })
  ]
})

/** `gatewayLayer` with a Health service that keeps every attempt signal in `signals`. */
const layerObservingHealth = (
  signals: Array<readonly [string, Health.AttemptSignal]>,
  scripts: ScriptedProvider.Scripts
) =>
  ModelGateway.layer(definition).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layerOff,
        Concurrency.layerOff,
        CallRecorder.layerMemory,
        Layer.effect(
          Health.Health,
          Effect.map(Health.Health, (noop) =>
            Health.Health.of({
              ...noop,
              record: (t, signal) => Effect.sync(() => void signals.push([t.ref, signal]))
            })
          )
        ).pipe(Layer.provide(Health.layerOff))
      )
    )
  )

describe("schemaValid", () => {
  it.effect("false when every route's answer fails validation: InvalidOutput, and the record says so", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.classify"), 1_000)
      assert.strictEqual(at, 70)
      assert.strictEqual(failureOf(exit)?._tag, "InvalidOutput")
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "failed")
      assert.strictEqual(record?.errorTag, "InvalidOutput")
      assert.strictEqual(record?.evidence.schemaValid, false)
      assert.deepStrictEqual(
        record?.evidence.attempts.map((a) => [a.target, a.outcome, a.errorTag]),
        [
          [refs.primary, "invalid_output", "InvalidOutput"],
          [refs.fallback, "invalid_output", "InvalidOutput"]
        ]
      )
    }).pipe(Effect.provide(gatewayLayer(invalidOnEveryRoute)))
  )

  it.effect("absent for a free-text workflow (no output schema), in the envelope and the record", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.reply"), 1_000)
      assert.strictEqual(at, 25)
      const result = successOf(exit)
      assert.strictEqual(result.content.text, "Dear customer, sorry about that.")
      assert.isUndefined(result.evidence.schemaValid)
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "success")
      assert.isUndefined(record?.evidence.schemaValid)
      // Absent in the encoded record too (what `CallRecorder.layerLog` writes).
      if (record !== undefined) {
        const encoded = JSON.parse(JSON.stringify(Schema.encodeSync(CallRecord)(record)))
        assert.notProperty(encoded.evidence, "schemaValid")
      }
    }).pipe(onRoutes([ScriptedProvider.success({ after: 25, text: "Dear customer, sorry about that." })]))
  )
})

describe("repair", () => {
  // The same script for both workflows: the primary's first answer is schema-invalid, its second
  // (the repair answer, if asked) is valid; the fallback would answer "technical".
  const scripts: ScriptedProvider.Scripts = {
    [refs.primary]: [
      ScriptedProvider.success({ after: 40, value: { category: "shipping", confidence: 0.9 } }),
      ScriptedProvider.success({ after: 30, value: { category: "billing", confidence: 0.9 } })
    ],
    [refs.fallback]: [ScriptedProvider.success({ after: 20, value: { category: "technical", confidence: 0.5 } })]
  }

  it.effect("repair: true — a second attempt on the same target, carrying the repair messages, succeeds", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("seed.repair"), 1_000)
      assert.strictEqual(at, 70)
      const result = successOf(exit)
      assert.deepStrictEqual(result.content.value, { category: "billing", confidence: 0.9 })
      assert.strictEqual(String(result.evidence.target), refs.primary)
      assert.isTrue(result.evidence.schemaValid)
      assert.isFalse(result.evidence.fallbackUsed)
      assert.strictEqual(result.evidence.retryCount, 0)
      assert.deepStrictEqual(
        result.evidence.attempts.map((a) => [a.target, a.attempt, a.outcome, a.startOffsetMs, a.latencyMs]),
        [
          [refs.primary, 1, "invalid_output", 0, 40],
          [refs.primary, 2, "success", 40, 30]
        ]
      )
      // The command has 2 messages; the repair request adds the invalid answer and the correction.
      const logs = yield* (yield* scripted).attempts
      assert.deepStrictEqual(
        logs.map((l) => [l.target, l.startedAt, l.endedAt, l.messages]),
        [
          [refs.primary, 0, 40, 2],
          [refs.primary, 40, 70, 4]
        ]
      )
    }).pipe(Effect.provide(gatewayLayer(scripts, seedDefinition)))
  )

  it.effect("repair: false — the same script goes to the fallback instead", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("seed.noRepair"), 1_000)
      assert.strictEqual(at, 60)
      const result = successOf(exit)
      assert.deepStrictEqual(result.content.value, { category: "technical", confidence: 0.5 })
      assert.strictEqual(String(result.evidence.target), refs.fallback)
      assert.isTrue(result.evidence.fallbackUsed)
      const logs = yield* (yield* scripted).attempts
      assert.deepStrictEqual(
        logs.map((l) => [l.target, l.startedAt, l.messages]),
        [
          [refs.primary, 0, 2],
          [refs.fallback, 40, 2]
        ]
      )
    }).pipe(Effect.provide(gatewayLayer(scripts, seedDefinition)))
  )
})

describe("request-time exclusion", () => {
  it.effect("an image in the user message excludes targets without vision; a vision target answers", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("seed.vision", { messages: imageMessages }), 1_000)
      assert.strictEqual(at, 30)
      const result = successOf(exit)
      assert.strictEqual(String(result.evidence.target), visionRef)
      assert.deepStrictEqual(result.evidence.eligible.map(String), [visionRef])
      assert.deepStrictEqual(
        result.evidence.excluded.map((e) => [String(e.target), e.reason, e.detail]),
        [[refs.primary, "CAPABILITY_MISSING", "missing: vision"]]
      )
      // The vision target is the first eligible target: no fallback was needed.
      assert.isFalse(result.evidence.fallbackUsed)
      assert.deepStrictEqual(
        (yield* (yield* scripted).attempts).map((l) => l.target),
        [visionRef]
      )
    }).pipe(Effect.provide(gatewayLayer({ [visionRef]: [ScriptedProvider.success({ after: 30 })] }, seedDefinition)))
  )

  it.effect("the same workflow without an image: the text-only primary is eligible and answers", () =>
    Effect.gen(function* () {
      const result = successOf((yield* runFor(command("seed.vision"), 1_000)).exit)
      assert.strictEqual(String(result.evidence.target), refs.primary)
      assert.deepStrictEqual(result.evidence.eligible.map(String), [refs.primary, visionRef])
      assert.deepStrictEqual(result.evidence.excluded, [])
    }).pipe(Effect.provide(gatewayLayer({}, seedDefinition)))
  )

  it.effect("an image and no vision target on the route: NoEligibleRoute naming vision, no provider call", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.reply", { messages: imageMessages }), 1_000)
      assert.strictEqual(at, 0)
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "NoEligibleRoute")
      if (error?._tag === "NoEligibleRoute") {
        assert.deepStrictEqual(
          error.excluded.map((e) => [String(e.target), e.reason, e.detail]),
          [
            [refs.primary, "CAPABILITY_MISSING", "missing: vision"],
            [refs.fallback, "CAPABILITY_MISSING", "missing: vision"]
          ]
        )
      }
      assert.deepStrictEqual(yield* (yield* scripted).attempts, [])
      const [record] = yield* records
      assert.strictEqual(record?.errorTag, "NoEligibleRoute")
    }).pipe(Effect.provide(gatewayLayer({}, seedDefinition)))
  )

  it.effect("tools offered exclude a target without tools: it is never tried when the route before it fails", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.lenient", { tools: [lookupTool] }), 1_000)
      assert.strictEqual(at, 10)
      assert.strictEqual(failureOf(exit)?._tag, "ProviderRejected")
      assert.deepStrictEqual(
        (yield* (yield* scripted).attempts).map((l) => l.target),
        [refs.fallback]
      )
      const [record] = yield* records
      assert.deepStrictEqual(record?.evidence.eligible.map(String), [refs.fallback])
      assert.deepStrictEqual(
        record?.evidence.excluded.map((e) => [String(e.target), e.reason, e.detail]),
        [[refs.strictLocal, "CAPABILITY_MISSING", "missing: tools"]]
      )
    }).pipe(
      Effect.provide(
        gatewayLayer({
          [refs.fallback]: [ScriptedProvider.fail(10, { kind: "authentication", processed: "no", httpStatus: 401 })],
          [refs.strictLocal]: [ScriptedProvider.success({ after: 5 })]
        })
      )
    )
  )

  it.effect("the same script without tools: the target without tools takes over", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.lenient"), 1_000)
      assert.strictEqual(at, 15)
      const result = successOf(exit)
      assert.strictEqual(String(result.evidence.target), refs.strictLocal)
      assert.deepStrictEqual(result.evidence.excluded, [])
    }).pipe(
      Effect.provide(
        gatewayLayer({
          [refs.fallback]: [ScriptedProvider.fail(10, { kind: "authentication", processed: "no", httpStatus: 401 })],
          [refs.strictLocal]: [ScriptedProvider.success({ after: 5 })]
        })
      )
    )
  )
})

describe("ModelGateway.stream", () => {
  it.effect("tool-call deltas reach the caller in order; the Final envelope carries the assembled calls", () =>
    Effect.gen(function* () {
      const { exit, at, seen } = yield* streamFor(command("ticket.reply", { tools: [lookupTool] }), 1_000)
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual(at, 70)
      const summary = seen.map(({ event, at }) =>
        event._tag === "TextDelta"
          ? [event._tag, at, event.text]
          : event._tag === "ToolCallDelta"
            ? [event._tag, at, event.index, event.id, event.name, event.argumentsDelta]
            : [event._tag, at]
      )
      assert.deepStrictEqual(summary, [
        ["RouteSelected", 0],
        // The serving attempt, announced with its first delta.
        ["RouteCommitted", 20],
        ["TextDelta", 20, "Looking."],
        ["ToolCallDelta", 30, 0, "call_1", "lookup", '{"q":"'],
        ["ToolCallDelta", 40, 0, undefined, undefined, "invoic"],
        ["ToolCallDelta", 50, 0, undefined, undefined, 'e 42"}'],
        ["ToolCallDelta", 60, 1, "call_2", "ping", "{"],
        ["ToolCallDelta", 70, 1, undefined, undefined, "}"],
        ["UsageUpdate", 70],
        ["UsageReported", 70],
        ["Final", 70]
      ])
      const final = seen[seen.length - 1]?.event
      assert.strictEqual(final?._tag, "Final")
      if (final?._tag === "Final") {
        const { content, finishReason } = final.result
        assert.strictEqual(finishReason, "tool_calls")
        assert.strictEqual(content.text, "Looking.")
        assert.deepStrictEqual(
          content.toolCalls.map((c) => [c.id, c.name, c.arguments]),
          [
            ["call_1", "lookup", '{"q":"invoice 42"}'],
            ["call_2", "ping", "{}"]
          ]
        )
      }
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "success")
      assert.strictEqual(record?.finishReason, "tool_calls")
    }).pipe(
      Effect.provide(
        primaryAnswers({
          text: "Looking.",
          toolCalls: [
            { id: "call_1", name: "lookup", arguments: '{"q":"invoice 42"}' },
            { id: "call_2", name: "ping", arguments: "{}" }
          ],
          stream: { ttft: 20, interval: 10, chunks: ["Looking."], toolCallChunks: 3 }
        })
      )
    )
  )

  // Chunks every 50 ms from 30 ms on (30, 80, …, 380, then 430, …): the attempt's 400 ms bound
  // (the target's perAttemptTimeout, within the 1 s deadline) comes while it is still streaming.
  const steady = Array.from({ length: 20 }, (_, i) => ` word${i}`)
  const deliveredBy400 = steady.slice(0, 8)
  const steadyAnswer = ScriptedProvider.success({ after: 0, stream: { ttft: 30, interval: 50, chunks: steady } })
  const steadyScripts: ScriptedProvider.Scripts = {
    [refs.primary]: [steadyAnswer],
    [refs.fallback]: [ScriptedProvider.success({ after: 0 })]
  }

  it.effect("a steadily streaming answer cut at its total timeout: typed error at 400 ms, incomplete, usage kept", () =>
    Effect.gen(function* () {
      const { exit, at, seen } = yield* streamFor(command("ticket.reply"), 2_000)
      assert.strictEqual(at, 400)
      const error = failureOf(exit)
      // Its reason and the attempt's outcome: see the next test.
      assert.strictEqual(error?._tag, "ProviderUnavailable")
      assert.deepStrictEqual(
        seen.map(({ event, at }) => [event._tag, at, event._tag === "TextDelta" ? event.text : undefined]),
        [
          ["RouteSelected", 0, undefined],
          ["RouteCommitted", 30, undefined],
          ...deliveredBy400.map((text, i) => ["TextDelta", 30 + 50 * i, text])
        ]
      )
      // Cut at the bound, never retried nor handed to the fallback after the commit point.
      const logs = yield* (yield* scripted).attempts
      assert.deepStrictEqual(
        logs.map((l) => [l.target, l.startedAt, l.endedAt, l.interrupted, l.timeoutMs]),
        [[refs.primary, 0, 400, true, 400]]
      )
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "incomplete")
      assert.strictEqual(record?.errorTag, "ProviderUnavailable")
      const delivered = deliveredBy400.reduce((n, text) => n + countText(text), 0)
      const usage = record?.evidence.usage
      assert.strictEqual(usage?.outputTokens, delivered)
      assert.isAbove(usage?.inputTokens ?? 0, 0)
      assert.isAbove(record?.evidence.cost.actual ?? 0, 0)
      assert.deepStrictEqual(
        record?.evidence.attempts.map((a) => [
          a.target,
          a.errorTag,
          a.latencyMs,
          a.timeoutMs,
          a.ttftMs,
          a.usage?.outputTokens
        ]),
        [[refs.primary, "ProviderUnavailable", 400, 400, 30, delivered]]
      )
    }).pipe(Effect.provide(gatewayLayer(steadyScripts)))
  )

  it.effect("a steady stream cut at its total time is recorded as a timeout (as in generate), not as a stall", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* streamFor(command("ticket.reply"), 2_000)
      assert.strictEqual(at, 400)
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "ProviderUnavailable")
      if (error?._tag === "ProviderUnavailable") assert.strictEqual(error.reason, "timeout")
      const [record] = yield* records
      assert.strictEqual(record?.errorReason, "timeout")
      assert.deepStrictEqual(
        record?.evidence.attempts.map((a) => a.outcome),
        ["timeout"]
      )
    }).pipe(Effect.provide(gatewayLayer(steadyScripts)))
  )

  // The same steady stream under a call deadline of 300 ms, shorter than the target's 400 ms
  // limit: the call's deadline, not the target, cuts it (chunks at 30, 80, …, 280, cut at 300).
  const cutByDeadline: ScriptedProvider.Scripts = { [refs.primary]: [steadyAnswer] }

  it.effect("a steady stream cut by the call's deadline does not count against the target's breaker", () => {
    const signals: Array<readonly [string, Health.AttemptSignal]> = []
    return Effect.gen(function* () {
      const { exit, at, seen } = yield* streamFor(command("ticket.reply", { timeout: 300 }), 2_000)
      assert.strictEqual(at, 300)
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(seen.filter(({ event }) => event._tag === "TextDelta").length, 6)
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "incomplete")
      assert.deepStrictEqual(
        record?.evidence.attempts.map((a) => [a.latencyMs, a.timeoutMs]),
        [[300, 300]]
      )
      // AttemptSignal.availabilityFailure: "timeouts of the target's own per-attempt limit (not the call's deadline)".
      assert.deepStrictEqual(
        signals.map(([t, s]) => [t, s.availabilityFailure]),
        [[refs.primary, false]]
      )
    }).pipe(Effect.provide(layerObservingHealth(signals, cutByDeadline)))
  })
})
