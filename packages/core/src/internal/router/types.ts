/**
 * Data the router's modules share, below all of them (types only).
 */
import type { ExclusionReason } from "../../RouteDecision.js"

/** Why a target is out: an exclusion code and a detail naming the values involved. */
export interface Exclusion {
  readonly reason: ExclusionReason
  readonly detail: string
}

/**
 * What scored selection and the size check read of a workflow's route targets, computed once per
 * compiled workflow (so once per configuration version) and indexed by route position: the class
 * terms under the workflow's own segment and preferred class, and each target's prices, limits and
 * flags as numbers.
 */
export interface ClassTerms {
  readonly quality: Float64Array
  readonly latency: Float64Array
  /** 1 for a target of the fast latency class. */
  readonly fast: Uint8Array
  /** 1 for a deprecated target. */
  readonly deprecated: Uint8Array
  /**
   * Each target's price sheet (index into `sheets`): targets with the same prices and limits share
   * one, so a call prices each sheet once.
   */
  readonly sheet: Int32Array
  readonly sheets: PriceSheets
  /** The largest safety factor and the smallest window of the route (the size check's bound). */
  readonly maxSafety: number
  readonly minWindow: number
  /** Whether a route target is dedicated to tenants (`ModelTarget.tenants`). */
  readonly dedicated: boolean
}

/** The distinct prices and limits of a route's targets, one entry per sheet. */
export interface PriceSheets {
  readonly count: number
  /** The tokenizer safety factor. */
  readonly safety: Float64Array
  /** The context window, tokens. */
  readonly window: Float64Array
  readonly maxOutput: Float64Array
  /** Input and output prices in store units, split into whole units per token and the rest per million (`internal/costUnits`). */
  readonly inputPerToken: Float64Array
  readonly inputRest: Float64Array
  readonly outputPerToken: Float64Array
  readonly outputRest: Float64Array
  /** Input plus output price per million tokens (`Pricing.listPrice`). */
  readonly listPrice: Float64Array
}
