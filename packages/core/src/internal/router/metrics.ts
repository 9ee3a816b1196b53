/**
 * Routing metrics and the helpers that count them.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { CanaryAssignment, Escalation } from "../../RouteDecision.js"
import { metrics as telemetryMetrics } from "../../Telemetry.js"
import { counter } from "../counter.js"

/**
 * Routing metrics. `targetSwitches` (`modelgate.routing.target_switches`, tagged `workflow`)
 * counts the times a scored workflow's best-scoring target changed from one decision to the next
 * (oscillation shows here). `escalations` (`modelgate.escalations`, tagged `workflow`,
 * `from_tier`, `to_tier`; a class that is not declared is `none`) counts escalations that found a
 * stronger target; the name is the routing spec's, outside the `modelgate.<area>.<name>` scheme.
 *
 * @since 0.2.0
 * @category Metrics
 */
export const metrics = {
  targetSwitches: counter(
    "modelgate.routing.target_switches",
    "Changes of a scored workflow's best-scoring target between decisions"
  ),
  escalations: counter("modelgate.escalations", "Escalations to a stronger target, by workflow and quality classes")
} as const

/**
 * Counts `escalation` in {@link metrics}`.escalations` when it found a stronger target.
 *
 * @since 0.2.0
 * @category Metrics
 */
export const countEscalation = (workflow: string, escalation: Escalation): Effect.Effect<void> =>
  escalation.to === undefined
    ? Effect.void
    : Metric.increment(
        Metric.tagged(
          Metric.tagged(
            Metric.tagged(metrics.escalations, "workflow", workflow),
            "from_tier",
            escalation.fromTier ?? "none"
          ),
          "to_tier",
          escalation.toTier ?? "none"
        )
      )

/** Counts a change of a scored workflow's best-scoring target. */
export const countSwitch = (workflow: string): Effect.Effect<void> =>
  Metric.increment(Metric.tagged(metrics.targetSwitches, "workflow", workflow))

/** Counts a canary assignment in `modelgate.canary.assignments`. */
export const countAssignment = (workflow: string, canary: string, assignment: CanaryAssignment): Effect.Effect<void> =>
  Metric.increment(
    Metric.tagged(
      Metric.tagged(Metric.tagged(telemetryMetrics.canaryAssignments, "workflow", workflow), "canary", canary),
      "side",
      assignment.side
    )
  )
