/**
 * The offline routing evaluation (issue 16, item 5): its figures are computed from the task set
 * through the real router — recomputed here independently for the simplest policy, compared with
 * the oracle, and changed when the data changes.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Pricing } from "@modelgate/core"
import { Effect, Schema } from "effect"
import { Dataset, evaluate, percentile, policies, targets } from "../routing-eval/evaluate.js"
import { render } from "../routing-eval/table.js"

const dataset = Schema.decodeUnknownSync(Dataset)(
  JSON.parse(readFileSync(fileURLToPath(new URL("../routing-eval/tasks.json", import.meta.url)), "utf8"))
)
const sonnet = targets.find((t) => t.ref === "model://anthropic/sonnet@eu")!

describe("routing-eval", () => {
  it.effect("strong-only figures equal the ones recomputed from the task set", () =>
    Effect.gen(function* () {
      const report = yield* evaluate(dataset)
      const strong = report.policies.find((p) => p.policy === "strong only")!
      const tasks = dataset.tasks
      const outcomes = tasks.map((t) => t.outcomes[sonnet.ref]!)
      const cost = tasks.reduce((sum, t) => sum + Pricing.costAt(sonnet, t.inputTokens, t.outputTokens), 0)
      assert.strictEqual(strong.tasks, 80)
      assert.closeTo(strong.cost, cost, 1e-12)
      assert.strictEqual(strong.quality, outcomes.filter((o) => o.pass && o.valid).length / tasks.length)
      assert.strictEqual(strong.invalidOutputRate, outcomes.filter((o) => !o.valid).length / tasks.length)
      assert.strictEqual(
        strong.p95LatencyMs,
        percentile(
          outcomes.map((o) => o.latencyMs),
          0.95
        )
      )
      assert.deepStrictEqual(strong.selected, { [sonnet.ref]: 80 })
    })
  )

  it.effect("every policy is measured against the oracle: no policy beats it, gaps are differences", () =>
    Effect.gen(function* () {
      const report = yield* evaluate(dataset)
      assert.deepStrictEqual(
        report.policies.map((p) => p.policy),
        policies.map((p) => p.name)
      )
      for (const p of report.policies) {
        assert.isAtMost(p.quality, report.oracle.quality, p.policy)
        assert.closeTo(p.qualityGap, report.oracle.quality - p.quality, 1e-12)
        assert.closeTo(p.costRatio, p.cost / report.oracle.cost, 1e-12)
        assert.isAtMost(p.regret, report.oracle.solved)
      }
      // The policies differ: the evaluation tells them apart.
      assert.isAbove(new Set(report.policies.map((p) => p.cost.toFixed(6))).size, 3)
      // The table prints each policy's computed figures.
      const text = render(report).join("\n")
      for (const p of report.policies) {
        assert.include(text, p.policy)
        assert.include(text, `${(p.quality * 100).toFixed(1)}%`)
      }
    })
  )

  it.effect("other data, other figures: a strong target that never answers validly", () =>
    Effect.gen(function* () {
      const broken: Dataset = {
        ...dataset,
        tasks: dataset.tasks.map((t) => ({
          ...t,
          outcomes: { ...t.outcomes, [sonnet.ref]: { ...t.outcomes[sonnet.ref]!, valid: false } }
        }))
      }
      const before = yield* evaluate(dataset)
      const after = yield* evaluate(broken)
      const strong = after.policies.find((p) => p.policy === "strong only")!
      assert.deepStrictEqual([strong.quality, strong.invalidOutputRate, strong.failed], [0, 1, 80])
      assert.isBelow(after.oracle.quality, before.oracle.quality)
      const ordered = (r: typeof before) => r.policies.find((p) => p.policy === "ordered mini→sonnet")!
      assert.isAbove(ordered(after).invalidOutputRate, ordered(before).invalidOutputRate)
    })
  )
})
