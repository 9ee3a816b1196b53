/**
 * Data the router's modules share, below all of them (types only).
 */
import type { ExclusionReason } from "../../RouteDecision.js"

/** Why a target is out: an exclusion code and a detail naming the values involved. */
export interface Exclusion {
  readonly reason: ExclusionReason
  readonly detail: string
}

/** The class terms of a workflow's route targets under its own segment and preferred class. */
export interface ClassTerms {
  readonly quality: Float64Array
  readonly latency: Float64Array
  readonly fast: Uint8Array
}
