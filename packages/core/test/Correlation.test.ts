/**
 * The caller's request id (decision, evidence and record, span, stream) and the production metrics
 * with bounded labels: tenant spend estimated and actual (store units) by policy version, fallbacks
 * per route, outcome per task segment, tool failures. Metrics are read through Effect's registry;
 * each test uses label values of its own (this file's policy version) and compares before/after.
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentRun, Budgets, CallRecorder, GatewayConfig, ModelCommand, ModelGateway, ToolLoop } from "@modelgate/core"
import * as Concurrency from "@modelgate/core/Concurrency"
import * as Health from "@modelgate/core/Health"
import * as Telemetry from "@modelgate/core/Telemetry"
import { TenantId } from "@modelgate/core/ModelCommand"
import { ScriptedProvider } from "@modelgate/testing"
import { Chunk, Effect, Either, Exit, Layer, Metric, MetricLabel, Schema, Stream } from "effect"
import { keepingTracer } from "./keptSpans.js"
import { target, workflow } from "./fixtures.js"
import { agentLayer, answers, asks, makeTools } from "./toolLoopFixtures.js"
import { driven } from "./virtualTime.js"

const P = "model://openai/small@eu"
const F = "model://anthropic/haiku@eu"
const limits = { maxAttempts: 1, perAttemptTimeout: 400, minimumAttemptTime: 100 }
const policy = "policy-corr-1"

const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [target(P, "openai", { limits }), target(F, "anthropic", { limits })],
    workflows: [workflow({ name: "corr.chat", route: [P, F], segment: "billing", policyVersion: policy })]
  }),
  schemas: {}
}

const layer = (scripts: ScriptedProvider.Scripts) =>
  ModelGateway.layer(definition).pipe(
    // acme is declared for metric labels; every other tenant is `other`
    Layer.provide(Telemetry.layerSettings({ tenant: { _tag: "Omit" }, metricTenants: ["acme"] })),
    Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts })),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
    )
  )

const command = (extra: Partial<typeof ModelCommand.ModelCommand.Encoded> = {}) =>
  Schema.decodeSync(ModelCommand.ModelCommand)({
    workflow: "corr.chat",
    tenant: "acme",
    messages: [{ _tag: "user", content: "Why was I charged twice?" }],
    // a cost cap makes the gateway count the input, so the estimate is known
    maxCost: 1,
    ...extra
  })

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

/** The count of `metric` under exactly these labels (in the engine's label order). */
const count = (metric: Metric.Metric.Counter<number>, labels: ReadonlyArray<readonly [string, string]>) =>
  Effect.map(
    Metric.value(
      Metric.taggedWithLabels(
        metric,
        labels.map(([k, v]) => MetricLabel.make(k, v))
      )
    ),
    (s) => s.count
  )

const A = Telemetry.Attr
const m = Telemetry.metrics
const units = (usd: number) => Math.round(usd * Budgets.unitsPerCurrency)

describe("the caller's request id", () => {
  it.effect("reaches the decision, the evidence and record, the call span and the stream's RouteSelected", () =>
    Effect.gen(function* () {
      const g = yield* ModelGateway.ModelGateway
      const { spans, tracer } = keepingTracer()
      const result = yield* driven(
        g.generate(command({ requestId: "req_01HZX-a.b:c" })).pipe(Effect.withTracer(tracer))
      )
      assert.strictEqual(result.evidence.requestId, "req_01HZX-a.b:c")
      const call = spans.find((s) => s.name === "modelgate.generate")
      assert.strictEqual(call?.attributes.get(A.requestId), "req_01HZX-a.b:c")
      const decided = yield* g.router.resolve(command({ requestId: "req-2" }))
      assert.strictEqual(decided.decision.requestId, "req-2")
      // the decision's id is the outcome's: the request id does not change it
      assert.strictEqual(decided.decision.routeId, (yield* g.router.resolve(command())).decision.routeId)
      const events = yield* driven(Stream.runCollect(g.stream(command({ requestId: "req-3" }))))
      const selected = Chunk.toReadonlyArray(events).flatMap((e) => (e._tag === "RouteSelected" ? [e] : []))
      assert.deepStrictEqual(
        selected.map((e) => e.decision.requestId),
        ["req-3"]
      )
      const final = Chunk.toReadonlyArray(events).find((e) => e._tag === "Final")
      assert.strictEqual(final?._tag === "Final" ? final.result.evidence.requestId : undefined, "req-3")
      assert.deepStrictEqual(
        (yield* records).map((r) => [r.mode, r.evidence.requestId]),
        [
          ["generate", "req_01HZX-a.b:c"],
          ["stream", "req-3"]
        ]
      )
      // without one: absent everywhere
      const plain = yield* driven(g.generate(command()))
      assert.isUndefined(plain.evidence.requestId)
    }).pipe(
      Effect.provide(
        layer({
          [P]: [
            ScriptedProvider.success({ after: 10, text: "one" }),
            ScriptedProvider.success({ after: 10, text: "two" }),
            ScriptedProvider.success({ after: 10, text: "three" })
          ]
        })
      )
    )
  )

  it.effect("is validated: bounded, a safe charset; the error names the rule, never the value", () =>
    Effect.gen(function* () {
      const decode = (requestId: string) =>
        Effect.either(
          ModelCommand.decodeUnknown({
            workflow: "corr.chat",
            tenant: "acme",
            messages: [{ _tag: "user", content: "hi" }],
            requestId
          })
        )
      for (const bad of ["", "x".repeat(129), "has space", "semi;colon", "new\nline", "é"]) {
        const decoded = yield* decode(bad)
        assert.isTrue(Either.isLeft(decoded), JSON.stringify(bad))
        if (Either.isLeft(decoded)) {
          assert.include(decoded.left.message, "$.requestId")
          if (bad.length > 3) assert.notInclude(decoded.left.message, bad)
        }
      }
      // a W3C trace id, a colon, the longest allowed
      assert.isTrue(Either.isRight(yield* decode(`0af7651916cd43dd8448eb211c80319c:${"a".repeat(95)}`)))
    })
  )
})

describe("production metrics with bounded labels", () => {
  it.effect("tenant spend (estimated, actual) in store units by policy version; fallbacks per route; segments", () =>
    Effect.gen(function* () {
      const g = yield* ModelGateway.ModelGateway
      const acme = [
        [A.tenant, "acme"],
        [A.policyVersion, policy]
      ] as const
      const other = [
        [A.tenant, "other"],
        [A.policyVersion, policy]
      ] as const
      const route = [
        [A.workflow, "corr.chat"],
        [A.fallbackFrom, P],
        [A.fallbackTo, F]
      ] as const
      const segment = (seg: string, outcome: string) =>
        [
          [A.workflow, "corr.chat"],
          [A.segment, seg],
          [A.outcome, outcome],
          [A.policyVersion, policy]
        ] as const
      const before = {
        estimated: yield* count(m.tenantSpendEstimated, acme),
        actual: yield* count(m.tenantSpendActual, acme),
        otherActual: yield* count(m.tenantSpendActual, other),
        route: yield* count(m.fallbackRoutes, route),
        billing: yield* count(m.segmentOutcomes, segment("billing", "success")),
        otherSegment: yield* count(m.segmentOutcomes, segment("other", "failed"))
      }
      // acme: the primary answers 503, the fallback serves
      const first = yield* driven(g.generate(command()))
      assert.isTrue(first.evidence.fallbackUsed)
      // an undeclared tenant with a segment of its own: both labels are `other`; both targets fail
      const second = yield* driven(Effect.exit(g.generate(command({ tenant: "zeta-9", segment: "my-own-seg" }))))
      assert.isTrue(Exit.isFailure(second))
      const [r1, r2] = yield* records
      assert.isDefined(r1?.evidence.cost.estimated)
      assert.isAbove(r1?.evidence.cost.actual ?? 0, 0)
      assert.strictEqual(
        (yield* count(m.tenantSpendEstimated, acme)) - before.estimated,
        units(r1?.evidence.cost.estimated ?? Number.NaN)
      )
      assert.strictEqual(
        (yield* count(m.tenantSpendActual, acme)) - before.actual,
        units(r1?.evidence.cost.actual ?? 0)
      )
      // the failed call spent nothing (503s are not billed): no spend counted for `other`
      assert.strictEqual(r2?.evidence.cost.actual, 0)
      assert.strictEqual((yield* count(m.tenantSpendActual, other)) - before.otherActual, 0)
      // one move P → F per call: two
      assert.strictEqual((yield* count(m.fallbackRoutes, route)) - before.route, 2)
      assert.strictEqual((yield* count(m.segmentOutcomes, segment("billing", "success"))) - before.billing, 1)
      assert.strictEqual((yield* count(m.segmentOutcomes, segment("other", "failed"))) - before.otherSegment, 1)
      // no raw tenant id or caller segment in any label
      for (const pair of yield* Metric.snapshot) {
        for (const tag of pair.metricKey.tags) {
          assert.notInclude(tag.value, "zeta-9")
          assert.notInclude(tag.value, "my-own-seg")
        }
      }
    }).pipe(
      Effect.provide(
        layer({
          [P]: [ScriptedProvider.unavailable({ after: 10 }), ScriptedProvider.unavailable({ after: 10 })],
          [F]: [ScriptedProvider.success({ after: 10, text: "refunded" }), ScriptedProvider.unavailable({ after: 10 })]
        })
      )
    )
  )

  it.effect("tool failures by tool and kind; a name the model made up is `unknown`", () => {
    const t = makeTools()
    const tool = (name: string, kind: string) =>
      [
        [A.tool, name],
        [A.toolFailureKind, kind]
      ] as const
    return Effect.gen(function* () {
      const before = {
        unknown: yield* count(m.toolFailures, tool("unknown", "unknown_tool")),
        invalid: yield* count(m.toolFailures, tool("lookup_order", "invalid_arguments"))
      }
      const outcome = yield* driven(
        AgentRun.run(
          { runId: "run-corr", deadline: "1 minute", tenant: TenantId.make("acme") },
          ToolLoop.run(
            Schema.decodeSync(ModelCommand.ModelCommand)({
              workflow: "ticket.agent",
              tenant: "acme",
              messages: [{ _tag: "user", content: "Where is my order?" }]
            }),
            t.tools,
            { maxSteps: 4 }
          )
        ),
        10_000
      )
      assert.strictEqual(outcome._tag, "Completed")
      assert.strictEqual((yield* count(m.toolFailures, tool("unknown", "unknown_tool"))) - before.unknown, 1)
      assert.strictEqual((yield* count(m.toolFailures, tool("lookup_order", "invalid_arguments"))) - before.invalid, 1)
      for (const pair of yield* Metric.snapshot) {
        for (const tag of pair.metricKey.tags) assert.notInclude(tag.value, "made_up_tool")
      }
    }).pipe(
      Effect.provide(
        agentLayer({
          [P]: [
            asks("c1", "made_up_tool", {}),
            asks("c2", "lookup_order", { orderId: "nope" }),
            answers("It has shipped.")
          ]
        })
      )
    )
  })
})
