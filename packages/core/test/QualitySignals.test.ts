/**
 * Quality signals (issue 16, item 4): a target whose invalid-output rate on a workflow crosses the
 * threshold is demoted under scored selection, excluded (`QUALITY_REGRESSION`) past the harder
 * threshold, and recovers when its bad answers leave the window; callers' feedback and offline
 * eval results count too. Breakers are not involved.
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayConfig, ModelGateway, QualitySignals } from "@modelgate/core"
import { ModelTarget, TargetRef } from "@modelgate/core/ModelTarget"
import { TargetClasses } from "../src/internal/targetSchemas.js"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect } from "effect"
import { Classification, command, gatewayLayer, refs, targets, workflow } from "./fixtures.js"
import { at, concurrently } from "./lifecycleFixtures.js"

const ref = { primary: TargetRef.make(refs.primary), fallback: TargetRef.make(refs.fallback) }
const withQuality = (t: ModelTarget, quality: "high" | "standard") =>
  new ModelTarget({ ...t, classes: TargetClasses.make({ quality }) })

const definition = (quality: { readonly minEvalScore?: number } = {}) => ({
  config: GatewayConfig.GatewayConfig.make({
    targets: targets.map((t) =>
      t.ref === refs.primary ? withQuality(t, "high") : t.ref === refs.fallback ? withQuality(t, "standard") : t
    ),
    workflows: [
      workflow({
        name: "ticket.classify",
        output: { schema: "Classification", schemaVersion: "1" },
        selection: "scored",
        quality: { window: 60_000, minSamples: 5, demoteAbove: 0.2, recoverBelow: 0.1, excludeAbove: 0.6, ...quality }
      })
    ]
  }),
  schemas: { Classification }
})

const valid = ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 0.9 } })
const invalid = ScriptedProvider.invalidJson({ after: 10 })

/** Runs `count` calls concurrently and moves time by 100 ms; their results. */
const calls = (count: number) =>
  Effect.flatMap(ModelGateway.ModelGateway, (gateway) =>
    concurrently(
      Array.from({ length: count }, () => gateway.generate(command("ticket.classify"))),
      100
    )
  )

const snapshot = (target: string) =>
  Effect.map(ModelGateway.ModelGateway, (g) => {
    const w = g.router.workflows.get("ticket.classify")!.workflow
    return g.quality.snapshot("ticket.classify", target, w.quality!, undefined)
  })

describe("QualitySignals", () => {
  it.effect(
    "a target whose invalid-output rate crosses the threshold is demoted, and recovers when it leaves the window",
    () =>
      Effect.gen(function* () {
        // The stronger primary leads while in good standing.
        const first = yield* calls(5)
        assert.deepStrictEqual(
          first.map((r) => r.evidence.target),
          [ref.fallback, ref.fallback, ref.primary, ref.primary, ref.primary]
        )
        // 2 invalid of 5 (recorded at t=20): 0.4 > 0.2, below the exclusion's 0.6: demoted.
        const s = yield* snapshot(refs.primary)
        assert.deepStrictEqual([s.calls, s.invalidOutputRate, s.level], [5, 0.4, "demoted"])
        const [demoted] = yield* calls(1)
        assert.strictEqual(demoted?.evidence.target, ref.fallback)
        assert.strictEqual(demoted?.evidence.selectionReason, "BEST_SCORE")
        const scores = demoted?.evidence.scores ?? []
        // quality fit 0.9 − 0.3 for the demoted primary, 0.75 for the fallback
        assert.deepStrictEqual(
          scores.map((x) => [x.target, x.quality]),
          [
            [ref.fallback, 0.75],
            [ref.primary, 0.6]
          ]
        )
        // The invalid answers were recorded at t=20: they leave the 60 s window at 60 020 exactly.
        yield* at(60_019)
        assert.strictEqual((yield* snapshot(refs.primary)).level, "demoted")
        yield* at(60_020)
        assert.strictEqual((yield* snapshot(refs.primary)).level, "ok")
        const [recovered] = yield* calls(1)
        assert.strictEqual(recovered?.evidence.target, ref.primary)
      }).pipe(
        Effect.provide(
          gatewayLayer({ [refs.primary]: [invalid, invalid, valid], [refs.fallback]: [valid] }, definition())
        )
      )
  )

  it.effect("past the harder threshold the target is excluded with QUALITY_REGRESSION until it recovers", () =>
    Effect.gen(function* () {
      yield* calls(5)
      const s = yield* snapshot(refs.primary)
      assert.deepStrictEqual([s.invalidOutputRate, s.level], [0.8, "excluded"])
      const [excluded] = yield* calls(1)
      assert.strictEqual(excluded?.evidence.target, ref.fallback)
      assert.deepStrictEqual(
        excluded?.evidence.excluded.map((x) => [x.target, x.reason]),
        [[ref.primary, "QUALITY_REGRESSION"]]
      )
      assert.strictEqual(excluded?.evidence.excluded[0]?.detail, "invalid or rejected 0.8 over 5 calls")
      yield* at(60_020)
      const [back] = yield* calls(1)
      assert.strictEqual(back?.evidence.target, ref.primary)
      assert.deepStrictEqual(back?.evidence.excluded, [])
    }).pipe(
      Effect.provide(
        gatewayLayer(
          { [refs.primary]: [invalid, invalid, invalid, invalid, valid], [refs.fallback]: [valid] },
          definition()
        )
      )
    )
  )

  it.effect("callers' feedback counts: rejected answers demote the target", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const answered = yield* calls(5)
      assert.isTrue(answered.every((r) => r.evidence.target === ref.primary))
      for (const r of answered.slice(0, 2)) {
        assert.isTrue(yield* gateway.feedback(r.evidence.callId, { accepted: false }))
      }
      assert.isFalse(yield* gateway.feedback("mg_unknown", { accepted: false }))
      const s = yield* snapshot(refs.primary)
      assert.deepStrictEqual([s.rejectionRate, s.invalidOutputRate, s.level], [0.4, 0, "demoted"])
      const [next] = yield* calls(1)
      assert.strictEqual(next?.evidence.target, ref.fallback)
    }).pipe(Effect.provide(gatewayLayer({ [refs.primary]: [valid], [refs.fallback]: [valid] }, definition())))
  )

  it.effect("an offline eval score below minEvalScore on the workflow's segment demotes the target", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      yield* gateway.quality.loadEvals([
        QualitySignals.EvalResult.make({
          target: ref.primary,
          segment: "billing",
          score: 0.55,
          evalVersion: "eval-2026-12"
        })
      ])
      const [other] = yield* calls(1)
      // Another segment's call: the eval does not apply.
      assert.strictEqual(other?.evidence.target, ref.primary)
      const [billing] = yield* concurrently([gateway.generate(command("ticket.classify", { segment: "billing" }))], 100)
      assert.strictEqual(billing?.evidence.target, ref.fallback)
      const policy = gateway.router.workflows.get("ticket.classify")!.workflow.quality!
      assert.deepStrictEqual(gateway.quality.standing("ticket.classify", refs.primary, policy, "billing"), {
        level: "demoted",
        demotion: policy.demotion,
        detail: "eval score 0.55 below 0.7"
      })
    }).pipe(
      Effect.provide(
        gatewayLayer({ [refs.primary]: [valid], [refs.fallback]: [valid] }, definition({ minEvalScore: 0.7 }))
      )
    )
  )
})
