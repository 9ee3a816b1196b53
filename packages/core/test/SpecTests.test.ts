/**
 * The routing spec's tests, by id (issue 14): T1–T6 and T8 (T7 belongs to the lifecycle issue).
 * TestClock, exact values.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, type GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import { TargetRef } from "@modelgate/core/ModelTarget"
import type { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import { Duration, Effect, Either, type Layer, Option, TestClock } from "effect"
import { command, imageMessages, lookupTool } from "./fixtures.js"
import {
  classedTarget,
  routingGateway,
  routingDefinition,
  routingWorkflow,
  tierRefs,
  verified
} from "./routingFixtures.js"
import { driven } from "./virtualTime.js"

const refs = {
  ...tierRefs,
  local: TargetRef.make("model://vllm/local@eu"),
  us: TargetRef.make("model://gemini/cheap@us")
}

const makeTargets = () => [
  classedTarget(refs.strong, "openai", {
    classes: { quality: "high", latency: "slow", cost: "high" },
    price: [3, 12],
    quality: { extract: verified(0.93) },
    capabilities: { vision: true }
  }),
  classedTarget(refs.standard, "anthropic", {
    classes: { quality: "standard", latency: "medium", cost: "medium" },
    price: [0.8, 3.2],
    quality: { extract: verified(0.78) },
    dataClasses: ["internal", "confidential"]
  }),
  classedTarget(refs.fast, "gemini", {
    classes: { quality: "low", latency: "fast", cost: "low" },
    price: [0.1, 0.4],
    capabilities: { contextWindow: 8_000 }
  }),
  classedTarget(refs.local, "vllm", {
    classes: { quality: "standard", latency: "medium", cost: "low" },
    price: [0.2, 0.8],
    capabilities: { tools: false },
    dataClasses: ["internal", "confidential"]
  }),
  classedTarget(refs.us, "gemini", { classes: { quality: "low", latency: "fast" }, price: [0.1, 0.4], regions: ["us"] })
]

const workflow = (fields: Partial<typeof Workflow.Encoded> & { readonly name: string }) =>
  routingWorkflow({ route: [refs.strong, refs.standard, refs.fast], regions: ["eu", "us"], ...fields })

const definition = (): GatewayConfig.Definition =>
  routingDefinition(makeTargets(), [
    workflow({ name: "ordered" }),
    workflow({ name: "scored", selection: "scored" }),
    workflow({
      name: "wide",
      selection: "scored",
      route: [refs.strong, refs.standard, refs.fast, refs.local, refs.us]
    }),
    workflow({ name: "wide.ordered", route: [refs.strong, refs.standard, refs.fast, refs.local, refs.us] }),
    workflow({
      name: "tested",
      route: [refs.strong, refs.standard, refs.fast, refs.local, refs.us],
      risk: "HIGH",
      qualityThreshold: 0.75
    })
  ])

/** The gateway over scripted providers with the given budgets and route health. */
const layerWith = (
  scripts: ScriptedProvider.Scripts,
  budgets: Layer.Layer<Budgets.Budgets, unknown> = Budgets.layerOff,
  health: Layer.Layer<Health.Health, unknown> = Health.layerOff
) => routingGateway(definition(), scripts, { budgets, health })

/** Runs a call to its end under the TestClock and returns how it ended. */
const runCall = (cmd: ReturnType<typeof command>, advance = 5_000) =>
  driven(Effect.either(ModelGateway.generate(cmd)), advance)

describe("routing spec tests", () => {
  it.effect("spec T3: an expensive target is rejected or degraded when the reservation doesn't fit", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const route = yield* gateway.router.resolve(command("ordered"))
      const n = route.decision.estimatedInputTokens!
      // worst cases: input tokens × input price + the 1000-token output cap × output price
      const worst = (input: number, output: number) => (n * input + 1000 * output) / 1_000_000
      assert.isAbove(worst(3, 12), 0.002)
      assert.isAbove(worst(0.8, 3.2), 0.002)
      assert.isBelow(worst(0.1, 0.4), 0.002)
      // The expensive primary and secondary do not fit the 0.002 left; the cheap one is chosen.
      const done = yield* runCall(command("ordered"))
      assert.isTrue(done._tag === "Right", "no BudgetExceeded")
      if (done._tag !== "Right") return
      const e = done.right.evidence
      assert.strictEqual(e.target, refs.fast)
      assert.deepStrictEqual(e.eligible, [refs.fast])
      assert.strictEqual(e.selectionReason, "ONLY_ELIGIBLE")
      assert.deepStrictEqual(
        e.excluded.map((x) => [x.target, x.reason, x.detail]),
        [
          [
            refs.strong,
            "BUDGET_DOES_NOT_FIT",
            `worst case ${Number(worst(3, 12).toPrecision(6))} exceeds the 0.002 left of the tenant's budget`
          ],
          [
            refs.standard,
            "BUDGET_DOES_NOT_FIT",
            `worst case ${Number(worst(0.8, 3.2).toPrecision(6))} exceeds the 0.002 left of the tenant's budget`
          ]
        ]
      )
      assert.strictEqual(e.cost.reserved, worst(0.1, 0.4))
      assert.strictEqual(e.cost.estimated, worst(0.1, 0.4))
      // scored selection too: only the affordable target stays, its score unchanged
      const scored = yield* runCall(command("scored"))
      assert.isTrue(scored._tag === "Right")
      if (scored._tag === "Right") {
        assert.strictEqual(scored.right.evidence.target, refs.fast)
        assert.deepStrictEqual(
          scored.right.evidence.scores?.map((s) => s.target),
          [refs.fast]
        )
      }
    }).pipe(Effect.provide(layerWith({}, Budgets.layerMemory({ tenants: { acme: { limit: 0.002 } } }))))
  )

  it.effect("spec T3: when no eligible target fits, BudgetExceeded names what the cheapest would need", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const route = yield* gateway.router.resolve(command("ordered"))
      const n = route.decision.estimatedInputTokens!
      const cheapest = (n * 0.1 + 1000 * 0.4) / 1_000_000
      const done = yield* runCall(command("ordered"))
      assert.isTrue(done._tag === "Left")
      if (done._tag !== "Left") return
      const error = done.left
      assert.strictEqual(error._tag, "BudgetExceeded")
      if (error._tag === "BudgetExceeded") {
        assert.strictEqual(error.limit, 0.0001)
        assert.strictEqual(error.requested, cheapest)
      }
    }).pipe(Effect.provide(layerWith({}, Budgets.layerMemory({ tenants: { acme: { limit: 0.0001 } } }))))
  )

  const reasons = (excluded: ReadonlyArray<{ target: string; reason: string; detail: string }>) =>
    excluded.map((x) => [x.target, x.reason, x.detail])
  const resolve = (name: string, extra: Parameters<typeof command>[1] = {}) =>
    Effect.flatMap(ModelGateway.ModelGateway, (g) => g.router.resolve(command(name, extra)))

  it.effect("spec T1: vision/tool/context requirements exclude incompatible targets", () =>
    Effect.gen(function* () {
      const vision = yield* resolve("wide", { messages: imageMessages })
      assert.deepStrictEqual(vision.decision.eligible, [refs.strong])
      assert.strictEqual(vision.decision.required?.vision, true)
      assert.deepStrictEqual(reasons(vision.decision.excluded), [
        [refs.standard, "CAPABILITY_MISSING", "missing: vision"],
        [refs.fast, "CAPABILITY_MISSING", "missing: vision"],
        [refs.local, "CAPABILITY_MISSING", "missing: vision"],
        [refs.us, "CAPABILITY_MISSING", "missing: vision"]
      ])
      const tools = yield* resolve("wide", { tools: [lookupTool] })
      assert.strictEqual(tools.decision.required?.tools, true)
      assert.deepStrictEqual(reasons(tools.decision.excluded), [[refs.local, "CAPABILITY_MISSING", "missing: tools"]])
      // ~12,000 tokens of input: over fast's 8,000-token window
      const long = yield* resolve("wide", {
        messages: [{ _tag: "user", content: "word ".repeat(12_000) }]
      })
      const tokens = long.decision.estimatedInputTokens!
      assert.isAbove(tokens, 8_000)
      assert.strictEqual(long.decision.required?.contextTokens, tokens)
      assert.deepStrictEqual(reasons(long.decision.excluded), [
        [refs.fast, "CONTEXT_TOO_SMALL", `~${tokens} input tokens, window 8000`]
      ])
      // the selected target never lacks what the request needs
      for (const r of [vision, tools, long])
        assert.notInclude(
          r.decision.excluded.map((x) => x.target),
          r.decision.selected
        )
    }).pipe(Effect.provide(layerWith({}, Budgets.layerMemory({ tenants: { acme: { limit: 100 } } }))))
  )

  it.effect("spec T2: restricted data never routes to a disallowed provider or region", () =>
    Effect.gen(function* () {
      const confidential = yield* resolve("wide.ordered", { dataClass: "confidential", regions: ["eu"] })
      assert.deepStrictEqual(confidential.decision.eligible, [refs.standard, refs.local])
      assert.deepStrictEqual(confidential.decision.required?.regions, ["eu"])
      assert.strictEqual(confidential.decision.required?.dataClass, "confidential")
      assert.deepStrictEqual(
        confidential.decision.excluded.map((x) => [x.target, x.reason]),
        [
          [refs.strong, "DATA_CLASS_NOT_ALLOWED"],
          [refs.fast, "DATA_CLASS_NOT_ALLOWED"],
          [refs.us, "DATA_REGION_MISMATCH"]
        ]
      )
      // the approved provider fails: the fallback stays among the approved ones
      const done = yield* runCall(command("wide.ordered", { dataClass: "confidential", regions: ["eu"] }))
      assert.isTrue(Either.isRight(done))
      if (Either.isRight(done)) {
        assert.deepStrictEqual(
          done.right.evidence.attempts.map((a) => [a.target, a.outcome]),
          [
            [refs.standard, "unavailable"],
            [refs.local, "success"]
          ]
        )
      }
      // every approved one fails: a policy error, never a disallowed target
      const none = yield* runCall(command("wide.ordered", { dataClass: "confidential", regions: ["eu"] }))
      assert.isTrue(Either.isLeft(none))
      if (Either.isLeft(none)) {
        assert.strictEqual(none.left._tag, "PolicyViolation")
        assert.deepStrictEqual(
          none.left.attempts?.map((a) => a.target),
          [refs.standard, refs.local]
        )
      }
    }).pipe(
      Effect.provide(
        layerWith({
          [refs.standard]: [ScriptedProvider.unavailable({ after: 10 })],
          [refs.local]: [ScriptedProvider.success({ after: 10 }), ScriptedProvider.unavailable({ after: 10 })]
        })
      )
    )
  )

  it.effect("spec T4: an open breaker removes a target and recovery returns it gradually", () =>
    Effect.gen(function* () {
      const health = yield* Health.Health
      const gateway = yield* ModelGateway.ModelGateway
      const fast = gateway.router.workflows.get("scored")!.targets.find((t) => t.ref === refs.fast)!
      const signal = (ok: boolean) =>
        health.record(fast, {
          outcome: ok ? "success" : "unavailable",
          availabilityFailure: !ok,
          latencyMs: 100,
          ttftMs: undefined,
          errorTag: ok ? undefined : "ProviderUnavailable"
        })
      for (let i = 0; i < 8; i++) yield* signal(true)
      yield* signal(false)
      yield* signal(false)
      const open = yield* resolve("scored")
      assert.deepStrictEqual(
        open.decision.excluded.map((x) => [x.target, x.reason]),
        [[refs.fast, "BREAKER_OPEN"]]
      )
      // cool-down over: half-open, eligible again but scored down (success rate 0.8 × 0.5)
      yield* TestClock.adjust(1_000)
      const halfOpen = yield* resolve("scored")
      assert.deepStrictEqual(halfOpen.decision.excluded, [])
      const probe = halfOpen.decision.scores?.find((x) => x.target === refs.fast)
      assert.deepInclude(probe, { health: 0.4, status: "DEGRADED" })
      // the probe succeeds: closed, its health back to its success rate (9 of 11)
      assert.isTrue(yield* health.tryAcquire(fast))
      yield* signal(true)
      const closed = yield* resolve("scored")
      assert.deepInclude(
        closed.decision.scores?.find((x) => x.target === refs.fast),
        { health: 0.8182, status: "HEALTHY" }
      )
      const record = yield* health.snapshot(Health.routeKey(fast))
      assert.strictEqual(Option.getOrUndefined(record)?.breaker, "closed")
    }).pipe(
      Effect.provide(
        layerWith(
          {},
          Budgets.layerOff,
          Health.layerMemory(
            Health.HealthConfig.make({
              breaker: Health.BreakerSettings.make({
                consecutiveFailures: 2,
                coolDown: Duration.millis(1_000),
                halfOpenProbes: 1
              })
            })
          )
        )
      )
    )
  )

  it.effect("spec T5: a primary outage selects only compatible tested alternates", () =>
    Effect.gen(function* () {
      const route = yield* resolve("tested", { tools: [lookupTool] })
      // tested: a verified score ≥ 0.75 on the segment; compatible: tools
      assert.deepStrictEqual(route.decision.eligible, [refs.strong, refs.standard])
      assert.deepStrictEqual(
        route.decision.excluded.map((x) => [x.target, x.reason]),
        [
          [refs.fast, "QUALITY_UNVERIFIED"],
          [refs.local, "CAPABILITY_MISSING"],
          [refs.us, "QUALITY_UNVERIFIED"]
        ]
      )
      const done = yield* runCall(command("tested", { tools: [lookupTool] }))
      assert.isTrue(Either.isRight(done))
      if (Either.isRight(done)) {
        assert.deepStrictEqual(
          done.right.evidence.attempts.map((a) => [a.target, a.startOffsetMs, a.outcome]),
          [
            [refs.strong, 0, "unavailable"],
            [refs.standard, 10, "success"]
          ]
        )
        assert.isTrue(done.right.evidence.fallbackUsed)
      }
    }).pipe(
      Effect.provide(
        layerWith({
          [refs.strong]: [ScriptedProvider.unavailable({ after: 10 })],
          [refs.standard]: [ScriptedProvider.success({ after: 10 })]
        })
      )
    )
  )
})
