/**
 * The demo's `canary` scenario (virtual time): ramps after clean windows, the automatic rollback at
 * the window boundary after the provider update, every later ticket on the baseline.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCanary } from "../support-ticket/canary.js"
import { runScenario } from "./plainOutput.js"

describe("demo scenario canary", () => {
  it.effect("prints a ramp and an automatic rollback on its timeline", () =>
    Effect.gen(function* () {
      const { report, out } = yield* runScenario(runCanary)
      const lines = out.split("\n").map((l) => l.trim())
      const verdicts = lines.filter((l) => l.startsWith("clean window") || l.startsWith("ROLLED BACK"))
      assert.deepStrictEqual(
        verdicts.map((l) => l.split(":")[0]),
        ["clean window → ramped 10% → 25%", "clean window → ramped 25% → 50%", "ROLLED BACK 50% → 0%"]
      )
      assert.include(out, "1:00  candidate")
      // The rollback judged the window after the update: broken JSON on the candidate side only.
      const rollback = lines.find((l) => l.startsWith("ROLLED BACK"))!
      assert.include(rollback, "invalidOutputRate")
      // Every ticket from the rollback on went to the baseline; before it, some to the candidate.
      const after = report.records.filter((r) => r.evidence.startedAt >= 60_000)
      const before = report.records.filter((r) => r.evidence.startedAt < 60_000)
      assert.strictEqual(after.length, 100)
      assert.isTrue(
        after.every((r) => r.evidence.canary?.side === "baseline" && r.evidence.target?.includes("gpt-4.1-mini"))
      )
      assert.isTrue(
        before.some((r) => r.evidence.canary?.side === "candidate" && r.evidence.selectionReason === "CANARY")
      )
      assert.include(out, "after the rollback: 100 of 100 tickets on the baseline")
    })
  )
})
