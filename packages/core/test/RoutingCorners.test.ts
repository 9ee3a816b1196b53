/**
 * Routing corners (issue 25): the context check counts the output, breakers keyed by version, one
 * "time the call has" value, evidence written from what was executed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as AgentRun from "@modelgate/core/AgentRun"
import * as Budgets from "@modelgate/core/Budgets"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import * as Health from "@modelgate/core/Health"
import { TenantId } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { Capabilities, ModelTarget, Pricing } from "@modelgate/core/ModelTarget"
import { TargetClasses } from "../src/internal/targetSchemas.js"
import * as TokenEstimator from "@modelgate/core/TokenEstimator"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import { Effect, Exit, Fiber, Layer, Metric, TestClock } from "effect"
import { command, servicesCounting, target, workflow, exclusionsOf } from "./fixtures.js"
import { driven, generateExit } from "./virtualTime.js"
import { keyOn } from "./lifecycleFixtures.js"
import { metrics as routerMetrics } from "../src/internal/router/metrics.js"

const A = "model://openai/small@eu"
const B = "model://anthropic/haiku@eu"
const limits = { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }

/** `t` with a price and its own window and output limit. */
const sized = (t: ModelTarget, contextWindow: number, maxOutputTokens = 16_000) =>
  new ModelTarget({
    ...t,
    capabilities: new Capabilities({ ...t.capabilities, contextWindow, maxOutputTokens }),
    pricing: new Pricing({ inputPerMillion: 1, outputPerMillion: 2, currency: "USD", pricingVersion: "p-1" })
  })

const gateway = (
  targets: ReadonlyArray<ModelTarget>,
  route: readonly [string, ...Array<string>],
  scripts: ScriptedProvider.Scripts = {},
  limit = 100
) =>
  ModelGateway.layer({
    config: GatewayConfig.GatewayConfig.make({
      targets,
      workflows: [workflow({ name: "w.long", route, timeout: 10_000 })]
    })
  }).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts })),
    Layer.provideMerge(servicesCounting(limit))
  )

/** Runs `generate` for 1 s of virtual time: its exit. */
const run = (cmd: ReturnType<typeof command>) => driven(generateExit(cmd), 1_000)

const ok = ScriptedProvider.success({ after: 10, usage: { inputTokens: 10, outputTokens: 10 } })

describe("class 3: the context check counts the output", () => {
  // An input of about 6,000 tokens.
  const long = command("w.long", {
    messages: [{ _tag: "user", content: "ticket ".repeat(6_000) }],
    maxOutputTokens: 8_000
  })
  const n = TokenEstimator.estimateInput({ messages: long.messages })

  it.effect(
    "input + maxOutputTokens over the window: the output is capped to what is left, in the request and the reservation",
    () =>
      Effect.gen(function* () {
        const g = yield* ModelGateway.ModelGateway
        const route = yield* g.router.resolve(long)
        assert.deepStrictEqual(route.decision.eligible.map(String), [A])
        // the gateway's count of what is sent
        const n = route.inputTokens!
        assert.isAtLeast(n, 5_900)
        const exit = yield* run(long)
        assert.isTrue(Exit.isSuccess(exit))
        const attempts = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
        // input + output ≤ window: 10,000 − n output tokens at most
        assert.deepStrictEqual(
          attempts.map((a) => [a.target, a.maxOutputTokens]),
          [[A, 10_000 - n]]
        )
        if (Exit.isSuccess(exit)) {
          // the reservation is the worst case of the capped call: n in at $1/M, 10,000 − n out at $2/M
          const expected = (n * 1 + (10_000 - n) * 2) / 1e6
          assert.strictEqual(Math.round(exit.value.evidence.cost.reserved * 1e9), Math.round(expected * 1e9))
        }
      }).pipe(Effect.provide(gateway([sized(target(A, "openai", { limits }), 10_000)], [A], { [A]: [ok] })))
  )

  it.effect("no output fits after the input: CONTEXT_TOO_SMALL; the larger window serves", () =>
    Effect.gen(function* () {
      const g = yield* ModelGateway.ModelGateway
      const route = yield* g.router.resolve(long)
      assert.deepStrictEqual(exclusionsOf(route.decision), [[A, "CONTEXT_TOO_SMALL"]])
      assert.deepStrictEqual(route.decision.eligible.map(String), [B])
    }).pipe(
      Effect.provide(
        gateway([sized(target(A, "openai", { limits }), n), sized(target(B, "anthropic", { limits }), 100_000)], [A, B])
      )
    )
  )

  it.effect("minContextTokens is a hard filter on the window, input counted or not", () =>
    Effect.gen(function* () {
      const g = yield* ModelGateway.ModelGateway
      const route = yield* g.router.resolve(command("w.long", { minContextTokens: 64_000 }))
      assert.deepStrictEqual(
        route.decision.excluded.map((e) => [e.target, e.reason, e.detail]),
        [[A, "CONTEXT_TOO_SMALL", "window 10000, minContextTokens 64000"]]
      )
      assert.deepStrictEqual(route.decision.eligible.map(String), [B])
      assert.strictEqual(route.decision.required?.contextTokens, 64_000)
      const none = yield* Effect.exit(g.router.resolve(command("w.long", { minContextTokens: 200_000 })))
      assert.isTrue(Exit.isFailure(none))
    }).pipe(
      Effect.provide(
        gateway(
          [sized(target(A, "openai", { limits }), 10_000), sized(target(B, "anthropic", { limits }), 100_000)],
          [A, B]
        )
      )
    )
  )
})

describe("class 7: evidence written from what was executed", () => {
  const classed = (t: ModelTarget, quality: "low" | "high", inputPerMillion: number) =>
    new ModelTarget({
      ...t,
      classes: new TargetClasses({ quality }),
      pricing: new Pricing({
        inputPerMillion,
        outputPerMillion: inputPerMillion,
        currency: "USD",
        pricingVersion: "p-1"
      })
    })
  const cheap = classed(target(A, "openai", { limits }), "low", 1)
  const strong = classed(target(B, "anthropic", { limits }), "high", 100_000)
  const escalations = (workflowName: string) =>
    Metric.value(
      Metric.tagged(
        Metric.tagged(Metric.tagged(routerMetrics.escalations, "workflow", workflowName), "from_tier", "low"),
        "to_tier",
        "high"
      )
    )

  it.effect("the escalation target is then excluded by the budget: no escalation in evidence, record or metric", () =>
    Effect.gen(function* () {
      const before = (yield* escalations("w.long")).count
      // The strong target's worst case (~$40) does not fit the $1 budget; the cheap one's does.
      const exit = yield* run(command("w.long", { escalate: true, maxOutputTokens: 100 }))
      assert.isTrue(Exit.isSuccess(exit), JSON.stringify(exit))
      const attempts = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      assert.deepStrictEqual(
        attempts.map((a) => a.target),
        [A]
      )
      if (Exit.isSuccess(exit)) {
        const evidence = exit.value.evidence
        assert.strictEqual(evidence.target, A)
        // the signal is kept; it led nowhere
        assert.deepStrictEqual(
          evidence.escalations?.map((e) => [e.signal, String(e.from), e.to]),
          [["command", A, undefined]]
        )
        assert.deepStrictEqual(exclusionsOf(evidence), [[B, "BUDGET_DOES_NOT_FIT"]])
        assert.strictEqual(evidence.selectionReason, "ONLY_ELIGIBLE")
      }
      const [record] = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
      assert.deepStrictEqual(
        record?.evidence.escalations?.map((e) => e.to),
        [undefined]
      )
      assert.strictEqual((yield* escalations("w.long")).count, before)
    }).pipe(Effect.provide(gateway([cheap, strong], [A, B], { [A]: [ok] }, 1)))
  )

  it.effect("an escalation that ran is recorded and counted once", () =>
    Effect.gen(function* () {
      const before = (yield* escalations("w.long")).count
      const exit = yield* run(command("w.long", { escalate: true, maxOutputTokens: 100 }))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.deepStrictEqual(
          exit.value.evidence.escalations?.map((e) => [e.signal, String(e.from), String(e.to)]),
          [["command", A, B]]
        )
      }
      assert.strictEqual((yield* escalations("w.long")).count, before + 1)
    }).pipe(Effect.provide(gateway([cheap, strong], [A, B], { [B]: [ok] }, 1_000)))
  )
})

describe("class 6: one time the call has, read by every rule", () => {
  const M = A
  const F = B
  const classedAs = (t: ModelTarget, quality: "low" | "high", latency: "fast" | "medium") =>
    new ModelTarget({ ...t, classes: new TargetClasses({ quality, latency }) })
  const scoredLayer = () =>
    ModelGateway.layer({
      config: GatewayConfig.GatewayConfig.make({
        targets: [
          classedAs(target(M, "openai", { limits }), "high", "medium"),
          classedAs(target(F, "anthropic", { limits }), "low", "fast")
        ],
        workflows: [workflow({ name: "w.scored", route: [M, F], timeout: 10_000, selection: "scored" })]
      })
    }).pipe(
      Layer.provideMerge(
        ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts: { [M]: [ok, ok], [F]: [ok, ok] } })
      ),
      Layer.provideMerge(
        Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
      )
    )
  const firstTarget = Effect.map(
    Effect.flatMap(ScriptedProvider.ScriptedProvider, (s) => s.attempts),
    (attempts) => attempts.map((a) => a.target)
  )

  it.effect("an agent run with 1.5 s left puts the fast class first, though the command and workflow allow 10 s", () =>
    Effect.gen(function* () {
      // alone: the call has 10 s, the stronger medium-latency target leads
      assert.isTrue(Exit.isSuccess(yield* run(command("w.scored", { timeout: 10_000 }))))
      assert.deepStrictEqual(yield* firstTarget, [M])
      const inRun = yield* Effect.fork(
        Effect.exit(
          AgentRun.run(
            { runId: "r-1", deadline: "1500 millis", tenant: TenantId.make("acme") },
            Effect.flatMap(ModelGateway.ModelGateway, (g) => g.generate(command("w.scored", { timeout: 10_000 })))
          )
        )
      )
      yield* TestClock.adjust(1_000)
      const exit = yield* Fiber.join(inRun)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) assert.strictEqual(exit.value.evidence.selectionReason, "BEST_SCORE")
      assert.deepStrictEqual(yield* firstTarget, [M, F])
    }).pipe(Effect.provide(scoredLayer()))
  )
})

describe("class 2: a failing new version does not take the running version's health", () => {
  const single = { maxAttempts: 1, perAttemptTimeout: 500, minimumAttemptTime: 100 }
  const versioned = (model: string): GatewayConfig.Definition => ({
    config: GatewayConfig.GatewayConfig.make({
      targets: [
        new ModelTarget({ ...target(A, "openai", { limits: single }), model }),
        target(B, "anthropic", { limits: single })
      ],
      workflows: [
        workflow({
          name: "w.v",
          route: [A, B],
          allowFallback: false,
          onNewVersion: "canary",
          newVersionCanary: { share: 0.5 }
        })
      ]
    }),
    schemas: {}
  })
  const id = "new-version:small-v2"
  const candidateKey = keyOn({ id, share: 0.5 }, "candidate")
  const baselineKey = keyOn({ id, share: 0.5 }, "baseline")
  const down = ScriptedProvider.unavailable({ after: 10, status: 503 })
  const layer = ModelGateway.layer(versioned("small-v1")).pipe(
    Layer.provideMerge(
      ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts: { [A]: [down, down, ok] } })
    ),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layerOff,
        Concurrency.layerOff,
        Health.layerMemory(
          Health.HealthConfig.make({
            breaker: Health.BreakerSettings.make({ consecutiveFailures: 2, failureRatio: 0 })
          })
        ),
        CallRecorder.layerMemory
      )
    )
  )

  it.effect("the canary's 503s open the canary's breaker only; the baseline version keeps serving", () =>
    Effect.gen(function* () {
      const g = yield* ModelGateway.ModelGateway
      yield* g.reload(versioned("small-v2"))
      for (let i = 0; i < 2; i++) {
        const exit = yield* run(command("w.v", { sessionKey: candidateKey }))
        assert.isTrue(Exit.isFailure(exit))
      }
      const h = yield* Health.Health
      const v1 = new ModelTarget({ ...target(A, "openai", { limits: single }), model: "small-v1" })
      const v2 = new ModelTarget({ ...target(A, "openai", { limits: single }), model: "small-v2" })
      assert.isTrue(yield* h.isOpen(v2))
      assert.isFalse(yield* h.isOpen(v1))
      // the baseline side: the running version serves
      const baseline = yield* run(command("w.v", { sessionKey: baselineKey }))
      assert.isTrue(Exit.isSuccess(baseline), JSON.stringify(baseline))
      if (Exit.isSuccess(baseline)) {
        assert.deepStrictEqual([baseline.value.evidence.target, baseline.value.evidence.model], [A, "small-v1"])
      }
      // the candidate side: the open candidate is skipped for the baseline
      const decision = yield* g.router.resolve(command("w.v", { sessionKey: candidateKey }))
      assert.deepStrictEqual(decision.decision.canary, { id, side: "baseline", skipped: true })
      assert.deepStrictEqual(decision.decision.eligible.map(String), [A])
      assert.strictEqual(decision.targets[0]?.model, "small-v1")
    }).pipe(Effect.provide(layer))
  )
})
