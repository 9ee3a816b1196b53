/**
 * The gateway's lifecycle hooks: the router's view of the canary controller and the quality
 * signals, and what runs once per settled call of a workflow that uses a lifecycle feature
 * (controller observation, quality samples, a shadow call forked off the caller's path).
 */
import { Effect } from "effect"
import type * as CanaryController from "../CanaryController.js"
import type * as QualitySignals from "../QualitySignals.js"
import type * as Shadow from "../Shadow.js"
import type { Hooks } from "./lifecycle.js"

/** Hooks over the gateway's controller, signals and shadow runner. */
export const makeHooks = (parts: {
  readonly controller: CanaryController.Service
  readonly quality: QualitySignals.Service
  readonly shadow: Shadow.Runner
}): Hooks => ({
  canaryShare: (workflow, canary) => parts.controller.share(workflow, canary.id),
  quality: (workflow, segment, target) =>
    workflow.quality === undefined
      ? undefined
      : parts.quality.standing(workflow.name, target.ref, workflow.quality, segment),
  settled: (compiled, record, command, result, inputTokens) => {
    const features = compiled.lifecycle
    if (features === undefined) return Effect.void
    const w = compiled.workflow
    const steps: Array<Effect.Effect<void>> = []
    if (features.rollout) steps.push(parts.controller.observe(record))
    if (features.quality && w.quality !== undefined) {
      steps.push(parts.quality.record(record, w.quality, command.segment ?? w.segment))
    }
    const shadowTarget = features.shadowTarget
    if (shadowTarget !== undefined && result !== undefined && record.outcome === "success") {
      steps.push(parts.shadow.start(compiled, shadowTarget, command, result, inputTokens))
    }
    return steps.length === 0 ? Effect.void : steps.length === 1 ? steps[0]! : Effect.all(steps, { discard: true })
  }
})
