import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, type GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { BudgetExceeded, type GatewayError } from "@modelgate/core/Errors"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import { CallRecord } from "@modelgate/core/ModelResult"
import * as Telemetry from "@modelgate/core/Telemetry"
import { RecordingTracer, ScriptedProvider } from "@modelgate/testing"
import {
  Cause,
  Chunk,
  Context,
  Effect,
  Exit,
  Fiber,
  Layer,
  Logger,
  LogLevel,
  Metric,
  MetricLabel,
  Option,
  Random,
  Schema,
  Stream,
  TestClock,
  type Tracer
} from "effect"
import { inspect } from "node:util"
import { providers, refs, targets, workflow, workflows, definitionOf } from "./fixtures.js"

/** A tracer that keeps every span (what an OpenTelemetry exporter would receive). */
const makeTracer = RecordingTracer.make

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

const testDefinition: GatewayConfig.Definition = definitionOf({
  targets,
  workflows: [
    ...workflows,
    workflow({ name: "tele.fallback", output: { schema: "Classification", schemaVersion: "4" } }),
    workflow({ name: "tele.metrics" }),
    workflow({ name: "tele.budget" }),
    workflow({ name: "tele.degraded", degrade: { _tag: "static", value: "sorry" } }),
    workflow({ name: "tele.permit" }),
    workflow({ name: "tele.repair", repair: true, output: { schema: "Classification", schemaVersion: "1" } })
  ]
})

const layerWith = (
  scripts: ScriptedProvider.Scripts,
  options: {
    readonly settings?: Telemetry.Settings
    readonly budgets?: Layer.Layer<Budgets.Budgets>
    readonly concurrency?: Layer.Layer<Concurrency.Concurrency>
  } = {}
) =>
  ModelGateway.layer(testDefinition).pipe(
    Layer.provide(Telemetry.layerSettings(options.settings ?? { tenant: { _tag: "Omit" } })),
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(
      Layer.mergeAll(
        options.budgets ?? Budgets.layerOff,
        options.concurrency ?? Concurrency.layerOff,
        Health.layerOff,
        CallRecorder.layerMemory
      )
    )
  )

/** Budgets that refuse every reservation of `tenant` (and are unlimited for the others). */
const refusingBudgets = (tenant: string) =>
  Layer.effect(
    Budgets.Budgets,
    Effect.map(Budgets.Budgets, (unlimited) =>
      Budgets.Budgets.of({
        ...unlimited,
        reserve: (t, amount) =>
          t === tenant
            ? Effect.fail(new BudgetExceeded({ tenant: t, limit: 0, committed: 0, reserved: 0, requested: amount }))
            : unlimited.reserve(t, amount)
      })
    )
  ).pipe(Layer.provide(Budgets.layerOff))

/** Unbounded concurrency where every permit takes `ms` of virtual time to come. */
const slowPermits = (ms: number) =>
  Layer.effect(
    Concurrency.Concurrency,
    Effect.map(Concurrency.Concurrency, (c) =>
      Concurrency.Concurrency.of({ ...c, acquire: () => Effect.as(Effect.sleep(ms), { release: () => {} }) })
    )
  ).pipe(Layer.provide(Concurrency.layerOff))

const decodeCommand = Schema.decodeSync(ModelCommand.ModelCommand)
const cmd = (workflowName: string, extra: Partial<typeof ModelCommand.ModelCommand.Encoded> = {}) =>
  decodeCommand({
    workflow: workflowName,
    tenant: "acme-42",
    messages: [{ _tag: "user", content: "hello" }],
    ...extra
  })

/** Forks `generate` under `tracer`, advances virtual time, and returns the exit. */
const runTraced = (tracer: Tracer.Tracer, command: ModelCommand.ModelCommand, ms = 5_000) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const fiber = yield* Effect.fork(Effect.exit(gateway.generate(command)).pipe(Effect.withTracer(tracer)))
    yield* TestClock.adjust(ms)
    const done = yield* Fiber.poll(fiber)
    assert.isTrue(Option.isSome(done), "call did not finish in time")
    return yield* Fiber.join(fiber)
  })

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

const counter = (metric: Metric.Metric.Counter<number>, labels: Record<string, string>) =>
  Effect.map(
    Metric.value(
      Metric.taggedWithLabels(
        metric,
        Object.entries(labels).map(([k, v]) => MetricLabel.make(k, v))
      )
    ),
    (s) => s.count
  )
const histogram = (metric: Metric.Metric.Histogram<number>, labels: Record<string, string>) =>
  Metric.value(
    Metric.taggedWithLabels(
      metric,
      Object.entries(labels).map(([k, v]) => MetricLabel.make(k, v))
    )
  )

const A = Telemetry.Attr

describe("Telemetry: spans", () => {
  it.effect("one call span with child attempt spans, carrying versions, route, usage, cost and outcome", () =>
    Effect.gen(function* () {
      const { spans, tracer } = makeTracer()
      const exit = yield* runTraced(tracer, cmd("tele.fallback"))
      assert.isTrue(Exit.isSuccess(exit))
      const [record] = yield* records
      assert.isDefined(record)
      const call = spans.filter((s) => s.name === "modelgate.generate")
      const attempts = spans.filter((s) => s.name === "modelgate.attempt")
      assert.strictEqual(call.length, 1)
      const span = call[0]!
      assert.isTrue(span.exit !== undefined && Exit.isSuccess(span.exit))
      // three attempts on the primary (503s), one on the fallback; all children of the call span
      assert.deepStrictEqual(
        attempts.map((a) => [
          a.parentId,
          a.kind,
          a.attributes.get(A.target),
          a.attributes.get(A.attemptNumber),
          a.attributes.get(A.attemptOutcome)
        ]),
        [
          [span.spanId, "client", refs.primary, 1, "unavailable"],
          [span.spanId, "client", refs.primary, 2, "unavailable"],
          [span.spanId, "client", refs.primary, 3, "unavailable"],
          [span.spanId, "client", refs.fallback, 1, "success"]
        ]
      )
      // Failed attempts end their spans with a failure (status ERROR once exported): the error tag
      // and the outcome, nothing else; the answered attempt ends with success.
      assert.deepStrictEqual(
        attempts.map((a) => {
          const exit = a.exit
          if (exit === undefined || Exit.isSuccess(exit)) return [exit === undefined ? "open" : "ok"]
          const error = Cause.squash(exit.cause)
          return error instanceof Error ? [error.name, error.message] : ["not an Error"]
        }),
        [
          ["ProviderUnavailable", "attempt unavailable"],
          ["ProviderUnavailable", "attempt unavailable"],
          ["ProviderUnavailable", "attempt unavailable"],
          ["ok"]
        ]
      )
      // ...at the end of the attempt, as before.
      const ended = attempts.map((a) => (a.status._tag === "Ended" ? Number(a.status.endTime / 1_000_000n) : -1))
      assert.deepStrictEqual(
        ended,
        attempts.map((a) => {
          const start = a.status.startTime / 1_000_000n
          return Number(start) + Number(a.attributes.get(A.latencyMs))
        })
      )
      // No attribute is ever absent-as-text, and lists are lists.
      for (const x of spans) {
        for (const [k, v] of x.attributes) {
          assert.isDefined(v, `${x.name} ${k}`)
          if (typeof v === "object") assert.isTrue(Array.isArray(v) && v.every((i) => typeof i === "string"), k)
        }
      }
      const a0 = attempts[0]!.attributes
      assert.strictEqual(a0.get(A.httpStatus), 503)
      assert.strictEqual(a0.get(A.errorType), "ProviderUnavailable")
      assert.strictEqual(a0.get(A.providerName), "openai")
      assert.strictEqual(a0.get(A.requestModel), "small")
      assert.strictEqual(a0.get(A.latencyMs), 100)
      const last = attempts[3]!.attributes
      assert.strictEqual(last.get(A.attemptStartOffsetMs), 600)
      assert.strictEqual(last.get(A.latencyMs), 50)
      assert.strictEqual(last.get(A.providerRequestId), `req_600_${refs.fallback}`)
      assert.strictEqual(last.get(A.httpStatus), 200)
      assert.strictEqual(last.get(A.inputTokens), 120)
      assert.strictEqual(last.get(A.outputTokens), 30)
      assert.strictEqual(last.get(A.responseModel), "haiku-2026-01-01")
      assert.strictEqual(last.get(A.errorType), undefined)

      const s = span.attributes
      const e = record!.evidence
      const expected: Record<string, unknown> = {
        [A.operationName]: "chat",
        [A.mode]: "generate",
        [A.callId]: e.callId,
        [A.workflow]: "tele.fallback",
        [A.outcome]: "success",
        [A.policyVersion]: "policy-7",
        [A.promptId]: "tele.fallback.prompt",
        [A.promptVersion]: "3",
        [A.schemaVersion]: "4",
        [A.pricingVersion]: "prices-2026-11",
        [A.target]: refs.fallback,
        [A.providerName]: "anthropic",
        [A.requestModel]: "haiku",
        [A.responseModel]: "haiku-2026-01-01",
        [A.modelVersion]: "haiku-2026-01-01",
        [A.fallbackUsed]: true,
        [A.degraded]: false,
        [A.retryCount]: 2,
        [A.attemptCount]: 4,
        [A.latencyMs]: 650,
        [A.inputTokens]: 120,
        [A.outputTokens]: 30,
        [A.cachedInputTokens]: 20,
        [A.costUsd]: e.cost.actual,
        [A.costEstimatedUsd]: e.cost.estimated,
        [A.costReservedUsd]: e.cost.reserved,
        [A.schemaValid]: true,
        [A.permitWaitMs]: 0
      }
      for (const [k, v] of Object.entries(expected)) assert.deepStrictEqual(s.get(k), v, k)
      assert.deepStrictEqual(s.get(A.responseFinishReasons), ["stop"])
      assert.deepStrictEqual(s.get(A.eligible), [refs.primary, refs.fallback])
      assert.isTrue(s.has(A.requestMaxTokens))
      assert.isFalse(s.has(A.errorType))
      assert.isFalse(s.has(A.tenant) || s.has(A.tenantHash), "tenant ids are omitted by default")
      // cost is the fallback's usage at its prices: (100 × 0.4 + 20 × 0.4 + 30 × 1.6) / 1e6
      assert.closeTo(e.cost.actual, (100 * 0.4 + 20 * 0.4 + 30 * 1.6) / 1e6, 1e-12)
    }).pipe(
      Effect.withRandom(Random.fixed([0.5])),
      Effect.provide(
        layerWith({
          [refs.primary]: [ScriptedProvider.unavailable({ after: 100 })],
          [refs.fallback]: [
            ScriptedProvider.success({
              after: 50,
              value: { category: "billing", confidence: 0.9 },
              usage: { inputTokens: 120, cachedInputTokens: 20, outputTokens: 30 },
              modelVersion: "haiku-2026-01-01"
            })
          ]
        })
      )
    )
  )

  it.effect("a failed call: error type and reason on the span, which ends with the failure", () =>
    Effect.gen(function* () {
      const { spans, tracer } = makeTracer()
      const exit = yield* runTraced(tracer, cmd("tele.metrics"))
      assert.isTrue(Exit.isFailure(exit))
      const span = spans.find((s) => s.name === "modelgate.generate")!
      assert.strictEqual(span.attributes.get(A.outcome), "failed")
      assert.strictEqual(span.attributes.get(A.errorType), "InvalidRequest")
      assert.strictEqual(span.attributes.get(A.errorReason), "bad_request")
      assert.strictEqual(span.attributes.get(A.attemptCount), 1)
      assert.isTrue(span.exit !== undefined && Exit.isFailure(span.exit))
    }).pipe(Effect.provide(layerWith({ [refs.primary]: [ScriptedProvider.invalidRequest({ after: 10 })] })))
  )

  it.effect("cancellation: the call span says cancelled, the attempt span cancelled", () =>
    Effect.gen(function* () {
      const { spans, tracer } = makeTracer()
      const gateway = yield* ModelGateway.ModelGateway
      const fiber = yield* Effect.fork(gateway.generate(cmd("tele.metrics")).pipe(Effect.withTracer(tracer)))
      yield* TestClock.adjust(120)
      yield* Fiber.interrupt(fiber)
      const call = spans.find((s) => s.name === "modelgate.generate")!
      const attempt = spans.find((s) => s.name === "modelgate.attempt")!
      assert.strictEqual(call.attributes.get(A.outcome), "cancelled")
      assert.strictEqual(attempt.attributes.get(A.attemptOutcome), "cancelled")
      assert.strictEqual(attempt.attributes.get(A.latencyMs), 120)
      assert.isTrue(attempt.exit !== undefined && Exit.isInterrupted(attempt.exit))
    }).pipe(Effect.provide(layerWith({ [refs.primary]: [ScriptedProvider.hang] })))
  )

  it.effect("tenant ids: omitted by default, plain or hashed when configured, never a metric label", () =>
    Effect.gen(function* () {
      const run = (settings: Telemetry.Settings) =>
        Effect.gen(function* () {
          const { spans, tracer } = makeTracer()
          yield* runTraced(tracer, cmd("tele.metrics"))
          return spans.find((s) => s.name === "modelgate.generate")!.attributes
        }).pipe(Effect.provide(layerWith({}, { settings })))
      const omitted = yield* run({ tenant: { _tag: "Omit" } })
      assert.isFalse(omitted.has(A.tenant))
      assert.isFalse(omitted.has(A.tenantHash))
      const plain = yield* run({ tenant: Telemetry.tenantPlain })
      assert.strictEqual(plain.get(A.tenant), "acme-42")
      assert.isFalse(plain.has(A.tenantHash))
      let calls = 0
      const hashed = Telemetry.tenantHashed((t) => {
        calls++
        return `h(${t.length})`
      })
      const h1 = yield* run({ tenant: hashed })
      const h2 = yield* run({ tenant: hashed })
      assert.strictEqual(h1.get(A.tenantHash), "h(7)")
      assert.strictEqual(h2.get(A.tenantHash), "h(7)")
      assert.isFalse(h1.has(A.tenant))
      assert.strictEqual(calls, 1, "hashes are memoized per tenant")
      const snapshot = yield* Metric.snapshot
      for (const pair of snapshot) {
        for (const tag of pair.metricKey.tags) assert.notInclude(tag.value, "acme-42")
      }
    })
  )
})

describe("Telemetry: the log recorder and spans", () => {
  it.effect(
    "the logged CallRecord (tenant id included) is not copied into span events; recorder spans stay in the trace",
    () =>
      Effect.gen(function* () {
        const { spans, tracer } = makeTracer()
        const recorder = Layer.effect(
          CallRecorder.CallRecorder,
          Effect.map(
            Effect.succeed(Context.get(yield* Layer.build(CallRecorder.layerLog), CallRecorder.CallRecorder)),
            (log) => ({
              record: (r: CallRecord) =>
                Effect.zipRight(log.record(r), Effect.withSpan(Effect.void, "app.recorder.write"))
            })
          )
        )
        const exit = yield* Effect.gen(function* () {
          const gateway = yield* ModelGateway.ModelGateway
          return yield* Effect.exit(gateway.generate(cmd("tele.metrics")))
        }).pipe(
          Effect.withTracer(tracer),
          Effect.provide(
            ModelGateway.layer(testDefinition).pipe(
              Layer.provideMerge(ScriptedProvider.layer({ providers, scripts: {} })),
              Layer.provideMerge(Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, recorder))
            )
          ),
          Effect.provide(
            Logger.replace(
              Logger.defaultLogger,
              Logger.make(() => undefined)
            )
          ),
          Effect.provide(Logger.add(Logger.tracerLogger)),
          // Debug: the log recorder writes the whole record (tenant id included) there
          Logger.withMinimumLogLevel(LogLevel.Debug)
        )
        assert.isTrue(Exit.isSuccess(exit))
        const call = spans.find((s) => s.name === "modelgate.generate")!
        const write = spans.find((s) => s.name === "app.recorder.write")!
        assert.isDefined(write)
        // the recorder's span is a child of the call span (by id), and no span carries the tenant
        assert.strictEqual(write.parentId, call.spanId)
        assert.strictEqual(write.traceId, call.traceId)
        assert.deepStrictEqual(call.events, [])
        for (const s of spans) assert.notInclude(s.dump(), "acme-42")
      }).pipe(Effect.scoped)
  )
})

describe("Telemetry: metrics", () => {
  it.effect("calls, latency, attempts, tokens, cost, retries and fallbacks by workflow, route and outcome", () =>
    Effect.gen(function* () {
      const m = Telemetry.metrics
      const w = { [A.workflow]: "tele.metrics" }
      const callLabels = {
        ...w,
        [A.route]: refs.fallback,
        [A.outcome]: "success",
        [A.errorType]: "none",
        [A.mode]: "generate"
      }
      const before = {
        calls: yield* counter(m.calls, callLabels),
        retries: yield* counter(m.retries, w),
        fallbacks: yield* counter(m.fallbacks, w),
        input: yield* counter(m.tokens, { ...w, [A.target]: refs.fallback, [A.tokenType]: "input" }),
        output: yield* counter(m.tokens, { ...w, [A.target]: refs.fallback, [A.tokenType]: "output" }),
        cached: yield* counter(m.tokens, { ...w, [A.target]: refs.fallback, [A.tokenType]: "cached_input" }),
        primaryAttempts: yield* counter(m.attempts, {
          ...w,
          [A.target]: refs.primary,
          [A.attemptOutcome]: "rate_limited"
        }),
        cost: yield* counter(m.cost, { ...w, [A.target]: refs.fallback }),
        latencyCount: (yield* histogram(m.callLatency, {
          ...w,
          [A.route]: refs.fallback,
          [A.outcome]: "success",
          [A.mode]: "generate"
        })).count
      }
      const { tracer } = makeTracer()
      const exit = yield* runTraced(tracer, cmd("tele.metrics"))
      assert.isTrue(Exit.isSuccess(exit))
      const [record] = yield* records
      assert.strictEqual((yield* counter(m.calls, callLabels)) - before.calls, 1)
      // three attempts on the primary (two retries), then the fallback
      assert.strictEqual(record!.evidence.retryCount, 2)
      assert.strictEqual((yield* counter(m.retries, w)) - before.retries, 2)
      assert.strictEqual((yield* counter(m.fallbacks, w)) - before.fallbacks, 1)
      assert.strictEqual(
        (yield* counter(m.attempts, { ...w, [A.target]: refs.primary, [A.attemptOutcome]: "rate_limited" })) -
          before.primaryAttempts,
        3
      )
      assert.strictEqual(
        (yield* counter(m.tokens, { ...w, [A.target]: refs.fallback, [A.tokenType]: "input" })) - before.input,
        300
      )
      assert.strictEqual(
        (yield* counter(m.tokens, { ...w, [A.target]: refs.fallback, [A.tokenType]: "output" })) - before.output,
        40
      )
      assert.strictEqual(
        (yield* counter(m.tokens, { ...w, [A.target]: refs.fallback, [A.tokenType]: "cached_input" })) - before.cached,
        100
      )
      assert.closeTo(
        (yield* counter(m.cost, { ...w, [A.target]: refs.fallback })) - before.cost,
        record!.evidence.cost.actual,
        1e-12
      )
      const latency = yield* histogram(m.callLatency, {
        ...w,
        [A.route]: refs.fallback,
        [A.outcome]: "success",
        [A.mode]: "generate"
      })
      assert.strictEqual(latency.count - before.latencyCount, 1)
      assert.isTrue(latency.max >= record!.evidence.totalLatencyMs)
    }).pipe(
      Effect.withRandom(Random.fixed([0.5])),
      Effect.provide(
        layerWith({
          [refs.primary]: [ScriptedProvider.rateLimited({ after: 10 })],
          [refs.fallback]: [
            ScriptedProvider.success({
              after: 10,
              usage: { inputTokens: 300, cachedInputTokens: 100, outputTokens: 40 }
            })
          ]
        })
      )
    )
  )

  it.effect("budget rejections, degraded calls and unknown workflows (label `unknown`, bounded cardinality)", () =>
    Effect.gen(function* () {
      const m = Telemetry.metrics
      const { tracer } = makeTracer()
      const rejectedBefore = yield* counter(m.budgetRejections, { [A.workflow]: "tele.budget" })
      const degradedBefore = yield* counter(m.degraded, { [A.workflow]: "tele.degraded" })
      const unknownLabels = {
        [A.workflow]: "unknown",
        [A.route]: "none",
        [A.outcome]: "failed",
        [A.errorType]: "InvalidRequest",
        [A.mode]: "generate"
      }
      const unknownBefore = yield* counter(m.calls, unknownLabels)
      const budget = yield* runTraced(tracer, cmd("tele.budget", { tenant: "poor" }))
      assert.isTrue(
        Exit.isFailure(budget) &&
          Cause.failureOption(budget.cause).pipe(Option.exists((e) => e._tag === "BudgetExceeded"))
      )
      const degraded = yield* runTraced(tracer, cmd("tele.degraded"))
      assert.isTrue(Exit.isSuccess(degraded) && degraded.value.evidence.degraded)
      for (let i = 0; i < 3; i++) yield* runTraced(tracer, cmd(`no.such.workflow-${i}`))
      assert.strictEqual((yield* counter(m.budgetRejections, { [A.workflow]: "tele.budget" })) - rejectedBefore, 1)
      assert.strictEqual((yield* counter(m.degraded, { [A.workflow]: "tele.degraded" })) - degradedBefore, 1)
      assert.strictEqual((yield* counter(m.calls, unknownLabels)) - unknownBefore, 3)
      const snapshot = yield* Metric.snapshot
      for (const pair of snapshot) {
        for (const tag of pair.metricKey.tags) assert.notInclude(tag.value, "no.such.workflow")
      }
    }).pipe(
      Effect.provide(
        layerWith(
          {
            [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
            [refs.fallback]: [ScriptedProvider.unavailable({ after: 10 })]
          },
          { budgets: refusingBudgets("poor") }
        )
      )
    )
  )

  it.effect("permit wait time: on the span and in the histogram, in virtual milliseconds", () =>
    Effect.gen(function* () {
      const { spans, tracer } = makeTracer()
      const before = yield* histogram(Telemetry.metrics.permitWait, { [A.workflow]: "tele.permit" })
      const exit = yield* runTraced(tracer, cmd("tele.permit"))
      assert.isTrue(Exit.isSuccess(exit))
      const span = spans.find((s) => s.name === "modelgate.generate")!
      assert.strictEqual(span.attributes.get(A.permitWaitMs), 250)
      assert.strictEqual(span.attributes.get(A.latencyMs), 260)
      const after = yield* histogram(Telemetry.metrics.permitWait, { [A.workflow]: "tele.permit" })
      assert.strictEqual(after.count - before.count, 1)
      assert.strictEqual(after.sum - before.sum, 250)
    }).pipe(
      Effect.provide(
        layerWith({ [refs.primary]: [ScriptedProvider.success({ after: 10 })] }, { concurrency: slowPermits(250) })
      )
    )
  )
})

// ---------------------------------------------------------------------------------------------
// Content is never recorded
// ---------------------------------------------------------------------------------------------

const CANARY = "zqxcanary"
const canaryCommand = (workflowName: string, extra: Partial<typeof ModelCommand.ModelCommand.Encoded> = {}) =>
  cmd(workflowName, {
    messages: [
      { _tag: "system", content: `${CANARY}-system You classify tickets.` },
      { _tag: "user", content: [{ _tag: "text", text: `${CANARY}-prompt my card was charged twice` }] },
      {
        _tag: "assistant",
        content: `${CANARY}-assistant`,
        toolCalls: [{ id: "call_1", name: "lookup", arguments: `{"q":"${CANARY}-toolarg-in"}` }]
      },
      { _tag: "tool", toolCallId: "call_1", name: "lookup", content: `${CANARY}-toolresult` },
      { _tag: "user", content: `${CANARY}-prompt2` }
    ],
    tools: [
      {
        name: "lookup",
        description: `${CANARY}-tooldesc`,
        parameters: { type: "object", properties: { q: { type: "string", description: `${CANARY}-param` } } }
      }
    ],
    ...extra
  })

const out = (after = 10) =>
  ScriptedProvider.success({
    after,
    text: `${CANARY}-output`,
    toolCalls: [{ id: "call_2", name: "lookup", arguments: `{"q":"${CANARY}-toolarg-out"}` }]
  })
const outValue = (after = 10) =>
  ScriptedProvider.success({ after, text: `{"category":"${CANARY}-value","confidence":1}` })
const outJunk = (after = 10) => ScriptedProvider.success({ after, text: `{${CANARY}-not-json` })

/** The same outcome on both routes of the fixture workflows. */
const onEveryRoute = (outcome: ScriptedProvider.Outcome): ScriptedProvider.Scripts => ({
  [refs.primary]: [outcome],
  [refs.fallback]: [outcome]
})

interface Scenario {
  readonly name: string
  readonly command: ModelCommand.ModelCommand
  readonly scripts: ScriptedProvider.Scripts
  readonly expect: "success" | "degraded" | "cancelled" | GatewayError["_tag"]
  readonly budgets?: Layer.Layer<Budgets.Budgets>
  readonly mode?: "stream"
}

const sideEffecting = {
  tools: [
    {
      name: "refund",
      description: `${CANARY}-tooldesc`,
      parameters: { type: "object", properties: { q: { type: "string" } } },
      sideEffecting: true
    }
  ]
}

const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "success with text and tool calls",
    command: canaryCommand("ticket.reply"),
    scripts: { [refs.primary]: [out()] },
    expect: "success"
  },
  {
    name: "success after a 429 and a fallback",
    command: canaryCommand("ticket.reply"),
    scripts: { [refs.primary]: [ScriptedProvider.rateLimited({ after: 10 })], [refs.fallback]: [out()] },
    expect: "success"
  },
  {
    name: "refusal",
    command: canaryCommand("ticket.reply"),
    scripts: { [refs.primary]: [ScriptedProvider.refusal({ after: 10 })] },
    expect: "Refusal"
  },
  {
    name: "rate limited everywhere",
    command: canaryCommand("ticket.reply"),
    scripts: onEveryRoute(ScriptedProvider.rateLimited({ after: 10 })),
    expect: "RateLimited"
  },
  {
    name: "unavailable everywhere",
    command: canaryCommand("ticket.reply"),
    scripts: onEveryRoute(ScriptedProvider.unavailable({ after: 10 })),
    expect: "ProviderUnavailable"
  },
  {
    name: "attempt timeouts until the deadline",
    command: canaryCommand("ticket.reply"),
    scripts: onEveryRoute(ScriptedProvider.hang),
    expect: "DeadlineExceeded"
  },
  {
    name: "schema-invalid output (values never echoed)",
    command: canaryCommand("ticket.classify", { tools: undefined }),
    scripts: { [refs.primary]: [outValue()], [refs.fallback]: [outJunk()] },
    expect: "InvalidOutput"
  },
  {
    name: "invalid output with repair (the invalid answer goes back to the provider only)",
    command: canaryCommand("tele.repair", { tools: undefined }),
    scripts: { [refs.primary]: [outJunk(), outValue()], [refs.fallback]: [outJunk()] },
    expect: "InvalidOutput"
  },
  {
    name: "invalid request (400)",
    command: canaryCommand("ticket.reply"),
    scripts: { [refs.primary]: [ScriptedProvider.invalidRequest({ after: 10 })] },
    expect: "InvalidRequest"
  },
  {
    name: "rejected (401) on every route",
    command: canaryCommand("ticket.reply"),
    scripts: {
      [refs.primary]: [ScriptedProvider.fail(10, { kind: "authentication", processed: "no", httpStatus: 401 })],
      [refs.fallback]: [ScriptedProvider.fail(10, { kind: "permission", processed: "no", httpStatus: 403 })]
    },
    expect: "ProviderRejected"
  },
  {
    name: "ambiguous outcome with a state-changing tool",
    command: canaryCommand("ticket.reply", sideEffecting),
    scripts: { [refs.primary]: [ScriptedProvider.fail(10, { kind: "timeout", processed: "maybe" })] },
    expect: "AmbiguousOutcome"
  },
  {
    name: "budget exceeded before any traffic",
    command: canaryCommand("ticket.reply", { tenant: "poor" }),
    scripts: {},
    budgets: refusingBudgets("poor"),
    expect: "BudgetExceeded"
  },
  {
    name: "no eligible route (data class nobody accepts)",
    command: canaryCommand("ticket.reply", { dataClass: "restricted" }),
    scripts: {},
    expect: "NoEligibleRoute"
  },
  {
    name: "policy violation (the only available target breaks residency)",
    command: canaryCommand("ticket.summarize", { regions: ["eu"] }),
    scripts: { [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })] },
    expect: "PolicyViolation"
  },
  {
    name: "unknown workflow",
    command: canaryCommand("no.such.workflow"),
    scripts: {},
    expect: "InvalidRequest"
  },
  {
    name: "input too large",
    command: canaryCommand("ticket.reply", { maxInputTokens: 5 }),
    scripts: {},
    expect: "InvalidRequest"
  },
  {
    name: "degraded answer",
    command: canaryCommand("tele.degraded"),
    scripts: onEveryRoute(ScriptedProvider.unavailable({ after: 10 })),
    expect: "degraded"
  },
  {
    name: "cancelled mid-attempt",
    command: canaryCommand("ticket.reply"),
    scripts: { [refs.primary]: [ScriptedProvider.hang] },
    expect: "cancelled"
  },
  {
    name: "stream: success with text and tool-call deltas",
    mode: "stream",
    command: canaryCommand("ticket.reply"),
    scripts: {
      [refs.primary]: [
        ScriptedProvider.success({
          after: 10,
          text: `${CANARY}-output streamed in pieces`,
          toolCalls: [{ id: "call_2", name: "lookup", arguments: `{"q":"${CANARY}-toolarg-out"}` }],
          stream: { ttft: 20, interval: 5 }
        })
      ]
    },
    expect: "success"
  },
  {
    name: "stream: fails before the first token, falls back",
    mode: "stream",
    command: canaryCommand("ticket.reply"),
    scripts: {
      [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
      [refs.fallback]: [
        ScriptedProvider.success({ after: 10, text: `${CANARY}-output`, stream: { ttft: 10, interval: 5 } })
      ]
    },
    expect: "success"
  },
  {
    name: "stream: fails after the first delta (incomplete)",
    mode: "stream",
    command: canaryCommand("ticket.reply"),
    scripts: {
      [refs.primary]: [
        ScriptedProvider.success({
          after: 10,
          text: `${CANARY}-output in four chunks`,
          stream: {
            ttft: 10,
            interval: 5,
            failAfterChunks: {
              count: 2,
              error: new ProviderError({ kind: "server_error", processed: "maybe", httpStatus: 500 })
            }
          }
        })
      ]
    },
    expect: "ProviderUnavailable"
  },
  {
    name: "stream: refusal",
    mode: "stream",
    command: canaryCommand("ticket.reply"),
    scripts: { [refs.primary]: [ScriptedProvider.refusal({ after: 10 })] },
    expect: "Refusal"
  },
  {
    name: "stream: cancelled mid-stream",
    mode: "stream",
    command: canaryCommand("ticket.reply"),
    scripts: {
      [refs.primary]: [
        ScriptedProvider.success({ after: 10, text: `${CANARY}-output slow`, stream: { ttft: 10, interval: 1_000 } })
      ]
    },
    expect: "cancelled"
  }
]

const encodeRecord = Schema.encodeSync(CallRecord)

describe("Telemetry: content is never recorded", () => {
  it.effect.each(scenarios)("$name: no canary in spans, span events, metrics, logs, records or errors", (scenario) =>
    Effect.gen(function* () {
      const { spans, tracer } = makeTracer()
      const logs: Array<string> = []
      const logger = Logger.make((o) => {
        logs.push(
          JSON.stringify({
            level: o.logLevel.label,
            message: o.message,
            annotations: [...o.annotations],
            spans: [...o.spans].map((s) => s.label),
            cause: Cause.pretty(o.cause, { renderErrorCause: true })
          })
        )
      })
      const logRecorder = Context.get(yield* Layer.build(CallRecorder.layerLog), CallRecorder.CallRecorder)
      const memory = yield* CallRecorder.makeMemory
      const recorder = Layer.succeed(CallRecorder.CallRecorder, {
        record: (r) => Effect.zipRight(memory.record(r), logRecorder.record(r))
      })
      const layer = ModelGateway.layer(testDefinition).pipe(
        Layer.provide(Telemetry.layerSettings({ tenant: Telemetry.tenantPlain })),
        Layer.provideMerge(ScriptedProvider.layer({ providers, scripts: scenario.scripts })),
        Layer.provideMerge(
          Layer.mergeAll(scenario.budgets ?? Budgets.layerOff, Concurrency.layerOff, Health.layerOff, recorder)
        )
      )
      const exit = yield* Effect.gen(function* () {
        const gateway = yield* ModelGateway.ModelGateway
        const fiber = yield* Effect.fork(
          scenario.mode === "stream"
            ? Effect.flatMap(Stream.runCollect(gateway.stream(scenario.command)), (events) => {
                const final = Chunk.findLast(events, (e) => e._tag === "Final")
                return Option.isSome(final) && final.value._tag === "Final"
                  ? Effect.succeed(final.value.result)
                  : Effect.dieMessage("stream ended without Final")
              })
            : gateway.generate(scenario.command)
        )
        if (scenario.expect === "cancelled") {
          yield* TestClock.adjust(50)
          yield* Fiber.interrupt(fiber)
        } else {
          yield* TestClock.adjust(5_000)
        }
        return yield* Fiber.await(fiber)
      }).pipe(
        Effect.withTracer(tracer),
        Effect.provide(layer),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.All)
      )

      // the path under test was really taken
      const [record] = yield* memory.records
      assert.isDefined(record, "exactly one record")
      if (scenario.expect === "success" || scenario.expect === "degraded") {
        assert.isTrue(
          Exit.isSuccess(exit),
          `expected success, got ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""}`
        )
        assert.strictEqual(record!.outcome, scenario.expect)
      } else if (scenario.expect === "cancelled") {
        assert.isTrue(Exit.isInterrupted(exit))
        assert.include(["cancelled", "incomplete"], record!.outcome)
      } else {
        const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
        assert.strictEqual(error?._tag, scenario.expect)
        assert.strictEqual(record!.errorTag, scenario.expect)
      }
      assert.isTrue(
        spans.some((s) => s.name === (scenario.mode === "stream" ? "modelgate.stream" : "modelgate.generate"))
      )
      assert.isTrue(
        logs.some((l) => l.includes("modelgate call")),
        "records are logged"
      )

      const exported: Array<string> = []
      for (const s of spans) exported.push(s.dump())
      exported.push(...logs)
      exported.push(
        JSON.stringify(encodeRecord(record!)),
        JSON.stringify(record),
        inspect(record, { depth: 20 }),
        String(record)
      )
      const snapshot = yield* Metric.snapshot
      exported.push(JSON.stringify(snapshot.map((p) => [p.metricKey.name, p.metricKey.tags])))
      if (Exit.isSuccess(exit)) {
        const { evidence } = exit.value
        exported.push(JSON.stringify(evidence), inspect(evidence, { depth: 20 }))
      } else {
        exported.push(
          Cause.pretty(exit.cause, { renderErrorCause: true }),
          JSON.stringify(exit.cause),
          inspect(exit.cause, { depth: 20 })
        )
        for (const e of Cause.failures(exit.cause)) {
          exported.push(
            e.message,
            String(e),
            JSON.stringify(e),
            inspect(e, { depth: 20 }),
            JSON.stringify(Schema.encodeSync(Schema.Unknown)(e))
          )
        }
      }
      const text = exported.join("\n")
      assert.isTrue(text.includes(record!.evidence.callId), "the scan covers real output")
      assert.notInclude(text, CANARY)
    }).pipe(Effect.scoped, Effect.withRandom(Random.fixed([0.5])))
  )
})
