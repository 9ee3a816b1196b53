/**
 * The canary controller (issue 16, item 2): candidate against baseline over each window; rollback
 * at the window boundary when the candidate's error rate is past the threshold after the minimum
 * sample; a ramp to the next step only after a clean window; every change logged, counted and
 * published; the router assigns sides with the controller's share.
 */
import { assert, describe, it } from "@effect/vitest"
import { CanaryController, GatewayConfig, ModelGateway } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Chunk, Effect, Fiber, Layer, Metric, Stream } from "effect"
import * as CanaryWindow from "../src/internal/canaryWindow.js"
import * as RouterEngine from "../src/internal/router/engine.js"
import { command, gatewayLayer, target, targets, workflow } from "./fixtures.js"
import { at, candidateRef, concurrently } from "./lifecycleFixtures.js"
import { canaryMetrics } from "../src/internal/metrics.js"

const primaryRef = "model://openai/small@eu" as const
const canaryId = "reply-v2"
const rollout = { steps: [0.1, 0.5, 1] as const, window: 60_000, minSamples: 10, maxErrorRateIncrease: 0.05 }

const definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [...targets, target(candidateRef, "vllm", { limits: { maxAttempts: 1 } })],
    workflows: [
      workflow({
        name: "ticket.reply",
        canary: { id: canaryId, target: candidateRef, share: 0.1, stickiness: "session", rollout }
      })
    ]
  }),
  schemas: {}
}

/** `count` session keys whose bucket is in [from, to): candidate side from share `to` on. */
const keysIn = (from: number, to: number, count: number): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; out.length < count; i++) {
    const key = `s-${i}`
    const onFrom = from > 0 && RouterEngine.canarySide({ id: canaryId, share: from }, key) === "candidate"
    if (!onFrom && RouterEngine.canarySide({ id: canaryId, share: to }, key) === "candidate") out.push(key)
  }
  return out
}
const candidateKeys = keysIn(0, 0.1, 10)
const middleKeys = keysIn(0.1, 0.5, 10)
/** Baseline at every share below 1. */
const baselineKeys = (() => {
  const out: Array<string> = []
  for (let i = 0; out.length < 10; i++) {
    const key = `b-${i}`
    if (RouterEngine.canarySide({ id: canaryId, share: 0.5 }, key) === "baseline") out.push(key)
  }
  return out
})()

/** Runs one call per key concurrently (all scripted at 10 ms) and moves time by 100 ms. */
const calls = (keys: ReadonlyArray<string>) =>
  Effect.flatMap(ModelGateway.ModelGateway, (gateway) =>
    concurrently(
      keys.map((sessionKey) => Effect.either(gateway.generate(command("ticket.reply", { sessionKey })))),
      100
    )
  )

const layerWith = (candidate: ReadonlyArray<ScriptedProvider.Outcome>) =>
  gatewayLayer({ [candidateRef]: candidate, [primaryRef]: [ScriptedProvider.success({ after: 10 })] }, definition).pipe(
    Layer.provideMerge(CanaryController.layer)
  )

const share = Effect.map(CanaryController.CanaryController, (c) => c.share("ticket.reply", canaryId))

describe("CanaryController", () => {
  it.effect("rolls back at the exact window boundary when the candidate's error rate is past the threshold", () =>
    Effect.gen(function* () {
      const controller = yield* CanaryController.CanaryController
      const published = yield* Effect.fork(Stream.runCollect(Stream.take(controller.changes, 1)))
      const results = yield* calls([...candidateKeys, ...baselineKeys])
      // Candidate-side calls fell back to the primary: the caller got answers, the candidate failed.
      assert.isTrue(results.every((r) => r._tag === "Right"))
      yield* at(59_999)
      assert.strictEqual(yield* share, 0.1)
      assert.strictEqual(controller.state("ticket.reply", canaryId)?.status, "running")
      yield* at(60_000)
      assert.strictEqual(yield* share, 0)
      assert.strictEqual(controller.state("ticket.reply", canaryId)?.status, "rolled_back")
      const history = yield* controller.history
      assert.deepStrictEqual(
        history.map((c) => [c.action, c.from, c.to, c.at]),
        [
          ["started", 0, 0.1, 0],
          ["rolled_back", 0.1, 0, 60_000]
        ]
      )
      const rolledBack = history[1]!
      assert.deepStrictEqual(
        [rolledBack.candidate?.calls, rolledBack.candidate?.errorRate, rolledBack.baseline?.calls],
        [10, 1, 10]
      )
      // Every candidate call failed over to the primary: errors, and twice the latency.
      assert.deepStrictEqual(rolledBack.reasons, ["errorRate 1 > 0 + 0.05", "p95LatencyMs 20 > 10 × 1.5"])
      const seen = yield* Fiber.join(published)
      assert.deepStrictEqual(
        Chunk.toArray(seen).map((c) => c.action),
        ["rolled_back"]
      )
      const counted = yield* Metric.value(
        Metric.tagged(
          Metric.tagged(Metric.tagged(canaryMetrics.changes, "workflow", "ticket.reply"), "canary", canaryId),
          "action",
          "rolled_back"
        )
      )
      assert.isTrue(counted.count >= 1)
      // After the rollback a candidate key routes on the baseline side.
      const [after] = yield* calls([candidateKeys[0]!])
      assert.strictEqual(after?._tag, "Right")
      if (after?._tag === "Right") {
        assert.deepStrictEqual(after.right.evidence.canary, { id: canaryId, side: "baseline" })
        assert.strictEqual<string | undefined>(after.right.evidence.target, primaryRef)
      }
    }).pipe(Effect.provide(layerWith([ScriptedProvider.unavailable({ after: 10 })])))
  )

  it.effect("ramps only after a clean window with the minimum sample, one step per window", () =>
    Effect.gen(function* () {
      const controller = yield* CanaryController.CanaryController
      // Window 1: 5 candidate calls, below the minimum sample: no change at its boundary.
      yield* calls([...candidateKeys.slice(0, 5), ...baselineKeys])
      yield* at(60_000)
      assert.strictEqual(yield* share, 0.1)
      // Window 2: clean, with the minimum sample: ramped to 0.5 at its boundary, not before.
      yield* calls([...candidateKeys, ...baselineKeys])
      // Keys in [0.1, 0.5) are still on the baseline side.
      const before = yield* calls([middleKeys[0]!])
      assert.deepStrictEqual(
        before[0]?._tag === "Right" ? before[0].right.evidence.canary?.side : undefined,
        "baseline"
      )
      yield* at(119_999)
      assert.strictEqual(yield* share, 0.1)
      yield* at(120_000)
      assert.strictEqual(yield* share, 0.5)
      // Now they are on the candidate side, served by the candidate.
      const onCandidate = yield* calls([...candidateKeys, ...middleKeys])
      assert.isTrue(
        onCandidate.every(
          (r) =>
            r._tag === "Right" &&
            r.right.evidence.canary?.side === "candidate" &&
            r.right.evidence.target === candidateRef
        )
      )
      yield* calls(baselineKeys)
      yield* at(180_000)
      assert.strictEqual(yield* share, 1)
      yield* calls([...candidateKeys, ...baselineKeys])
      yield* at(240_000)
      assert.deepStrictEqual(
        (yield* controller.history).map((c) => [c.action, c.from, c.to, c.at]),
        [
          ["started", 0, 0.1, 0],
          ["ramped", 0.1, 0.5, 120_000],
          ["ramped", 0.5, 1, 180_000],
          ["completed", 1, 1, 240_000]
        ]
      )
      assert.strictEqual(controller.state("ticket.reply", canaryId)?.status, "completed")
    }).pipe(Effect.provide(layerWith([ScriptedProvider.success({ after: 10 })])))
  )

  it.effect("a reload keeps a canary's state while its id stays; a new id starts over", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const controller = yield* CanaryController.CanaryController
      yield* calls([...candidateKeys, ...baselineKeys])
      yield* at(60_000)
      assert.strictEqual(yield* share, 0.5)
      yield* gateway.reload(definition)
      assert.strictEqual(yield* share, 0.5)
      const renamed = {
        ...definition,
        config: GatewayConfig.GatewayConfig.make({
          targets: definition.config.targets,
          workflows: [
            workflow({
              name: "ticket.reply",
              canary: { id: "reply-v3", target: candidateRef, share: 0.1, stickiness: "session", rollout }
            })
          ]
        })
      }
      yield* gateway.reload(renamed)
      assert.strictEqual(controller.share("ticket.reply", "reply-v3"), 0.1)
      assert.deepStrictEqual(
        (yield* controller.history).map((c) => [c.canary, c.action, c.at]),
        [
          [canaryId, "started", 0],
          [canaryId, "ramped", 60_000],
          ["reply-v3", "started", 60_000]
        ]
      )
    }).pipe(Effect.provide(layerWith([ScriptedProvider.success({ after: 10 })])))
  )

  it("breaches compares rates by absolute increase and latency and cost by ratio", () => {
    const rules = GatewayConfig.GatewayConfig.make({
      targets,
      workflows: [
        workflow({
          name: "w",
          canary: { id: "c", target: primaryRef, share: 0.1, stickiness: "call", rollout: { steps: [1], window: 1000 } }
        })
      ]
    }).workflows[0]!.canary!.rollout!
    const stats = (fields: Partial<CanaryController.WindowStats>): CanaryController.WindowStats => ({
      calls: 20,
      errorRate: 0,
      invalidOutputRate: 0,
      p95LatencyMs: 100,
      costPerCall: 0.01,
      ...fields
    })
    assert.deepStrictEqual(CanaryWindow.breaches(rules, stats({ errorRate: 0.05 }), stats({})), [])
    assert.deepStrictEqual(CanaryWindow.breaches(rules, stats({ p95LatencyMs: 150 }), stats({})), [])
    assert.deepStrictEqual(
      CanaryWindow.breaches(rules, stats({ invalidOutputRate: 0.2, p95LatencyMs: 151, costPerCall: 0.02 }), stats({})),
      ["invalidOutputRate 0.2 > 0 + 0.05", "p95LatencyMs 151 > 100 × 1.5", "costPerCall 0.02 > 0.01 × 1.5"]
    )
    assert.strictEqual(CanaryWindow.statsOf([]).calls, 0)
    assert.deepStrictEqual(
      CanaryWindow.statsOf(
        Array.from({ length: 20 }, (_, i) => ({ error: i < 2, invalid: false, latencyMs: i + 1, cost: 0.5 }))
      ),
      { calls: 20, errorRate: 0.1, invalidOutputRate: 0, p95LatencyMs: 19, costPerCall: 0.5 }
    )
  })
})
