/**
 * The demo's `scored` scenario (virtual time): the scored decision of `ticket.triage` and the
 * escalation of an unsure answer to a stronger model, in its timeline.
 */
import { assert, describe, it } from "@effect/vitest"
import { TargetRef } from "@modelgate/core/ModelTarget"
import { Effect } from "effect"
import { runScored } from "../support-ticket/scored.js"
import { runScenario } from "./plainOutput.js"

describe("demo scenario scored", () => {
  it.effect("prints the scores and an escalation on the timeline", () =>
    Effect.gen(function* () {
      const { report, out } = yield* runScenario(runScored)
      const [sure, unsure] = report.records
      assert.strictEqual(sure?.evidence.selectionReason, "BEST_SCORE")
      assert.strictEqual(sure?.evidence.target, "model://openai/gpt-4.1-nano@eu")
      assert.isUndefined(sure?.evidence.escalations)
      assert.deepStrictEqual(
        sure?.evidence.scores?.map((s) => [s.target, s.total]),
        [
          // 0.45·0.71 + 0.2·1 + 0.15·1 + 0.1
          ["model://openai/gpt-4.1-nano@eu", 0.7695],
          // 0.45·0.82 + 0.2·1 + 0.15·0.25 + 0.1
          ["model://openai/gpt-4.1-mini@eu", 0.7065],
          // 0.45·0.93 + 0.2·0.3 + 0.15·0.05 + 0.1
          ["model://openai/gpt-4.1@eu", 0.586]
        ]
      )
      assert.deepStrictEqual(
        unsure?.evidence.attempts.map((a) => [a.target, a.startOffsetMs, a.latencyMs]),
        [
          ["model://openai/gpt-4.1-nano@eu", 0, 120],
          ["model://openai/gpt-4.1@eu", 120, 600]
        ]
      )
      assert.deepStrictEqual(
        unsure?.evidence.escalations?.map((x) => [x.signal, x.from, x.fromTier, x.to, x.toTier]),
        [
          [
            "check",
            TargetRef.make("model://openai/gpt-4.1-nano@eu"),
            "low",
            TargetRef.make("model://openai/gpt-4.1@eu"),
            "high"
          ]
        ]
      )
      assert.include(out, "escalation (check): openai/gpt-4.1-nano@eu [low] → openai/gpt-4.1@eu [high]")
      assert.include(out, "openai/gpt-4.1@eu #1")
    })
  )
})
