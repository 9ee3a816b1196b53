/**
 * What the shadow tests read back: the in-memory shadow records and the dropped-shadow counter of
 * `ticket.classify`'s candidate.
 */
import { Shadow } from "@modelgate/core"
import { Effect, Metric } from "effect"
import { candidateRef } from "./lifecycleFixtures.js"
import { shadowMetrics } from "../src/internal/metrics.js"

/** The shadow records kept so far. */
export const shadowRecords = Effect.flatMap(Shadow.MemoryShadowRecorder, (m) => m.records)

/** Shadow calls of `ticket.classify` to the candidate dropped for `reason`. */
export const dropped = (reason: string) =>
  Effect.map(
    Metric.value(
      Metric.tagged(
        Metric.tagged(Metric.tagged(shadowMetrics.dropped, "workflow", "ticket.classify"), "candidate", candidateRef),
        "reason",
        reason
      )
    ),
    (c) => c.count
  )
