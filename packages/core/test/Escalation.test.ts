/**
 * Escalation inside a call (issue 14 item 6): an answer that fails validation, or the workflow's
 * check on the validated value, moves the call to the best eligible stronger target, under the
 * same hard filters, deadline and reservation; evidence lists each escalation with its signal and
 * `modelgate.escalations{workflow,from_tier,to_tier}` counts them.
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, ModelGateway } from "@modelgate/core"
import type { Evidence } from "@modelgate/core/ModelResult"
import { TargetRef } from "@modelgate/core/ModelTarget"
import type { Escalation } from "@modelgate/core/RouteDecision"
import type { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Either, Fiber, Metric, Schema, TestClock } from "effect"
import { Classification, command, providers, decodeTarget, decodeWorkflow } from "./fixtures.js"
import { routingGateway } from "./routingFixtures.js"
import { metrics as routerMetrics } from "../src/internal/router/metrics.js"

const refs = {
  fast: TargetRef.make("model://gemini/fast@eu"),
  standard: TargetRef.make("model://anthropic/standard@eu"),
  strong: TargetRef.make("model://openai/strong@eu"),
  strongUs: TargetRef.make("model://vllm/strong@us")
}

const target = (
  ref: string,
  provider: string,
  quality: "low" | "standard" | "high",
  regions: readonly [string] = ["eu"]
) =>
  decodeTarget({
    ref,
    provider,
    model: ref.split("/")[3]!.split("@")[0]!,
    capabilities: { contextWindow: 128_000, maxOutputTokens: 1000, structuredOutput: { mode: "json_schema" } },
    regions,
    dataClasses: ["internal"],
    pricing: { inputPerMillion: 1, outputPerMillion: 4, pricingVersion: "p-1" },
    limits: { maxAttempts: 1, perAttemptTimeout: 1000 },
    classes: { quality }
  })

const workflow = (name: string, extra: Partial<typeof Workflow.Encoded> = {}) =>
  decodeWorkflow({
    name,
    policyVersion: "route-v8",
    prompt: { id: "p", version: "1" },
    route: [refs.fast, refs.standard, refs.strongUs, refs.strong],
    timeout: 5000,
    regions: ["eu", "us"],
    dataClass: "internal",
    output: { schema: "Classification", schemaVersion: "1" },
    ...extra
  })

const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [
      target(refs.fast, "gemini", "low"),
      target(refs.standard, "anthropic", "standard"),
      target(refs.strong, "openai", "high"),
      target(refs.strongUs, "vllm", "high", ["us"])
    ],
    workflows: [
      workflow("plain"),
      workflow("to.high", { escalation: { tier: "high" } }),
      workflow("checked", { escalation: { check: "lowConfidence", onInvalidOutput: false } }),
      workflow("explicit", { escalation: { targets: [refs.strong] } })
    ]
  }),
  schemas: { Classification },
  escalationChecks: {
    lowConfidence: (value) => Schema.is(Classification)(value) && value.confidence < 0.6
  }
}

const layer = (scripts: ScriptedProvider.Scripts) => routingGateway(definition, scripts)

const answer = (confidence: number, after = 10) =>
  ScriptedProvider.success({ after, value: { category: "billing", confidence } })

/** Runs a call of `name` to its end (5 s of virtual time) and returns its result; a failed call fails the test. */
const served = (name: string, extra: Parameters<typeof command>[1] = {}) =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    // The data of these calls may stay in the EU only: strong@us is excluded by region.
    const fiber = yield* Effect.fork(Effect.either(gateway.generate(command(name, { regions: ["eu"], ...extra }))))
    yield* TestClock.adjust(5000)
    const done = yield* Fiber.join(fiber)
    assert.isTrue(Either.isRight(done))
    return yield* done
  })

const escalations = (workflow: string, from: string, to: string) =>
  Metric.value(
    Metric.tagged(
      Metric.tagged(Metric.tagged(routerMetrics.escalations, "workflow", workflow), "from_tier", from),
      "to_tier",
      to
    )
  )

/**
 * Asserts that a call of `workflow` escalated once: its attempts (`[target, startOffsetMs, outcome]`),
 * the escalation's target serving it, the escalation in its evidence, counted once under its tiers.
 */
const assertEscalated = (
  workflow: string,
  evidence: Evidence,
  expected: {
    readonly attempts?: ReadonlyArray<readonly [string, number, string]>
    readonly escalation: Escalation & { readonly fromTier: string; readonly toTier: string }
  }
) =>
  Effect.gen(function* () {
    if (expected.attempts !== undefined) {
      assert.deepStrictEqual(
        evidence.attempts.map((a): readonly [string, number, string] => [a.target, a.startOffsetMs, a.outcome]),
        expected.attempts
      )
    }
    assert.strictEqual(evidence.target, expected.escalation.to)
    assert.deepStrictEqual(evidence.escalations, [expected.escalation])
    const counted = yield* escalations(workflow, expected.escalation.fromTier, expected.escalation.toTier)
    assert.strictEqual(counted.count, 1)
  })

describe("escalation inside a call", () => {
  it.effect(
    "invalid output escalates to the best eligible stronger target at the policy's tier, past the hard filters",
    () =>
      Effect.gen(function* () {
        const e = (yield* served("to.high")).evidence
        // standard is stronger than fast but below the policy's tier; strong@us is outside the regions
        assert.deepStrictEqual(
          e.excluded.map((x) => [x.target, x.reason]),
          [[refs.strongUs, "DATA_REGION_MISMATCH"]]
        )
        yield* assertEscalated("to.high", e, {
          attempts: [
            [refs.fast, 0, "invalid_output"],
            [refs.strong, 10, "success"]
          ],
          escalation: { signal: "invalid_output", from: refs.fast, fromTier: "low", to: refs.strong, toTier: "high" }
        })
      }).pipe(
        Effect.provide(
          layer({ [refs.fast]: [ScriptedProvider.invalidJson({ after: 10 })], [refs.strong]: [answer(0.9)] })
        )
      )
  )

  it.effect("without an escalation policy invalid output goes to the next target, no escalation", () =>
    Effect.gen(function* () {
      const result = yield* served("plain")
      assert.deepStrictEqual(
        result.evidence.attempts.map((a) => [a.target, a.outcome]),
        [
          [refs.fast, "invalid_output"],
          [refs.standard, "success"]
        ]
      )
      assert.isUndefined(result.evidence.escalations)
    }).pipe(
      Effect.provide(
        layer({ [refs.fast]: [ScriptedProvider.invalidJson({ after: 10 })], [refs.standard]: [answer(0.9)] })
      )
    )
  )

  it.effect(
    "the workflow's check on the validated value (confidence < 0.6) escalates; a confident answer does not",
    () =>
      Effect.gen(function* () {
        const result = yield* served("checked")
        const e = result.evidence
        assert.deepStrictEqual(result.content.value, { category: "billing", confidence: 0.9 })
        yield* assertEscalated("checked", e, {
          attempts: [
            [refs.fast, 0, "success"],
            [refs.standard, 10, "success"]
          ],
          escalation: { signal: "check", from: refs.fast, fromTier: "low", to: refs.standard, toTier: "standard" }
        })
      }).pipe(Effect.provide(layer({ [refs.fast]: [answer(0.4)], [refs.standard]: [answer(0.9)] })))
  )

  it.effect("the check's answer stands when the stronger targets cannot answer; the escalations are listed", () =>
    Effect.gen(function* () {
      const result = yield* served("checked")
      const e = result.evidence
      assert.deepStrictEqual(result.content.value, { category: "billing", confidence: 0.4 })
      assert.strictEqual(e.target, refs.fast)
      assert.deepStrictEqual(
        e.attempts.map((a) => [a.target, a.startOffsetMs, a.outcome]),
        [
          [refs.fast, 0, "success"],
          [refs.standard, 10, "unavailable"],
          [refs.strong, 20, "unavailable"]
        ]
      )
      assert.deepStrictEqual(
        e.escalations?.map((x) => [x.signal, x.from, x.to]),
        [["check", refs.fast, refs.standard]]
      )
    }).pipe(
      Effect.provide(
        layer({
          [refs.fast]: [answer(0.4)],
          [refs.standard]: [ScriptedProvider.unavailable({ after: 10 })],
          [refs.strong]: [ScriptedProvider.unavailable({ after: 10 })]
        })
      )
    )
  )

  it.effect("explicit escalation targets; the command's escalate is listed first and counted", () =>
    Effect.gen(function* () {
      const e = (yield* served("explicit", { escalate: true })).evidence
      assert.strictEqual(e.selectionReason, "ESCALATION")
      assert.deepStrictEqual(e.eligible, [refs.strong, refs.fast, refs.standard])
      yield* assertEscalated("explicit", e, {
        escalation: { signal: "command", from: refs.fast, fromTier: "low", to: refs.strong, toTier: "high" }
      })
      assert.match(e.routeId ?? "", /^route-[0-9a-f]{8}$/)
    }).pipe(Effect.provide(layer({ [refs.strong]: [answer(0.9)] })))
  )

  it.effect("an escalation target outside the route is a configuration problem", () =>
    Effect.gen(function* () {
      const bad: GatewayConfig.Definition = {
        ...definition,
        config: GatewayConfig.GatewayConfig.make({
          targets: definition.config.targets,
          workflows: [
            workflow("bad", {
              route: [refs.fast, refs.standard],
              escalation: { targets: [refs.strong], check: "missing" }
            })
          ]
        })
      }
      const problems = GatewayConfig.validate(bad, new Set(providers), {})
      assert.deepStrictEqual(
        problems.filter((p) => p.path.includes("escalation")).map((p) => [p.path, p.reason]),
        [
          ["workflows[0].escalation.targets[0]", "ESCALATION_TARGET_NOT_IN_ROUTE"],
          ["workflows[0].escalation.check", "UNKNOWN_ESCALATION_CHECK"]
        ]
      )
    })
  )
})
