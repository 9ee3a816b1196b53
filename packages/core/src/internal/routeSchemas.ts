/**
 * The schemas of a route decision's parts that only the engine builds and decodes (escalation,
 * per-target score, canary assignment): their types stay public in `RouteDecision`; and the bound
 * of an excluded target's `detail`.
 */
import { Schema } from "effect"
import { TargetRef } from "../ModelTarget.js"
import * as Literals from "./literals.js"

/** The schema of `RouteDecision.HealthStatus`. */
export const HealthStatus = Schema.Literal("HEALTHY", "DEGRADED", "UNAVAILABLE")

/** The schema of `RouteDecision.EscalationSignal`. */
export const EscalationSignal = Schema.Literal("command", "invalid_output", "check")

/** The schema of `RouteDecision.Escalation`. */
export const Escalation = Schema.Struct({
  signal: EscalationSignal,
  from: TargetRef,
  fromTier: Schema.optional(Literals.QualityTier),
  to: Schema.optional(TargetRef),
  toTier: Schema.optional(Literals.QualityTier)
}).annotations({ identifier: "@modelgate/core/Escalation" })

/** The schema of `RouteDecision.TargetScore`. */
export const TargetScore = Schema.Struct({
  target: TargetRef,
  quality: Schema.Number,
  latency: Schema.Number,
  cost: Schema.Number,
  health: Schema.Number,
  /** From the route's health record; absent when the health service keeps none for the target. */
  status: Schema.optional(HealthStatus),
  /**
   * The smoothed p95 latency (TTFT for streams) the `latency` term was computed from, ms; absent
   * when the route has no observation (the latency class applied).
   */
  observedP95Ms: Schema.optional(Schema.Number),
  affinity: Schema.Number,
  /** Subtracted for a deprecated target (0 otherwise). */
  penalty: Schema.Number,
  total: Schema.Number
}).annotations({ identifier: "@modelgate/core/TargetScore" })

/** The schema of `RouteDecision.CanaryAssignment`. */
export const CanaryAssignment = Schema.Struct({
  id: Schema.String,
  side: Schema.Literal("candidate", "baseline"),
  /** Assigned to the candidate side but the candidate was not eligible (its reason is in `excluded`). */
  skipped: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "@modelgate/core/CanaryAssignment" })

/**
 * Longest `detail` of a `RouteDecision.ExcludedTarget`; a longer one (e.g. a long region list) is
 * cut and ends with the mark `…(truncated)`.
 */
export const maxDetailLength = 256

/** What ends a detail cut to {@link maxDetailLength}. */
export const truncationMark = "…(truncated)"

/** `detail` cut to {@link maxDetailLength} characters, marked as truncated when cut. */
export const boundDetail = (detail: string): string =>
  detail.length <= maxDetailLength
    ? detail
    : `${detail.slice(0, maxDetailLength - truncationMark.length)}${truncationMark}`
