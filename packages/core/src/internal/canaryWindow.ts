/**
 * The canary controller's window arithmetic: a settled call as a sample, one side's statistics,
 * and the thresholds a candidate breaks against its baseline.
 */
import { percentile } from "./healthWindow.js"
import type { CallRecord } from "../ModelResult.js"
import type { CanaryRollout } from "./workflowPolicies.js"

/**
 * What a canary's calls looked like on one side over one window.
 */
export interface WindowStats {
  readonly calls: number
  readonly errorRate: number
  readonly invalidOutputRate: number
  readonly p95LatencyMs: number
  readonly costPerCall: number
}

/** One observed call. */
export interface Sample {
  readonly error: boolean
  readonly invalid: boolean
  readonly latencyMs: number
  readonly cost: number
}

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

/**
 * The statistics of one side's samples.
 */
export const statsOf = (samples: ReadonlyArray<Sample>): WindowStats => {
  const n = samples.length
  if (n === 0) return { calls: 0, errorRate: 0, invalidOutputRate: 0, p95LatencyMs: 0, costPerCall: 0 }
  let errors = 0
  let invalid = 0
  let cost = 0
  for (const s of samples) {
    if (s.error) errors++
    if (s.invalid) invalid++
    cost += s.cost
  }
  return {
    calls: n,
    errorRate: round4(errors / n),
    invalidOutputRate: round4(invalid / n),
    // Nearest-rank, as route health's window.
    p95LatencyMs: percentile(Float64Array.from(samples, (s) => s.latencyMs).sort(), 0.95) ?? 0,
    costPerCall: cost / n
  }
}

/**
 * The thresholds the candidate breaks against the baseline under `rollout` (empty: acceptable).
 * Rates compare by absolute increase; p95 latency and cost per call by ratio, when the baseline
 * has calls (and, for cost, a cost).
 */
export const breaches = (rollout: CanaryRollout, candidate: WindowStats, baseline: WindowStats): Array<string> => {
  const out: Array<string> = []
  if (candidate.errorRate > baseline.errorRate + rollout.maxErrorRateIncrease) {
    out.push(`errorRate ${candidate.errorRate} > ${baseline.errorRate} + ${rollout.maxErrorRateIncrease}`)
  }
  if (candidate.invalidOutputRate > baseline.invalidOutputRate + rollout.maxInvalidOutputRateIncrease) {
    out.push(
      `invalidOutputRate ${candidate.invalidOutputRate} > ${baseline.invalidOutputRate} + ${rollout.maxInvalidOutputRateIncrease}`
    )
  }
  if (baseline.calls > 0 && candidate.p95LatencyMs > baseline.p95LatencyMs * rollout.maxP95LatencyRatio) {
    out.push(`p95LatencyMs ${candidate.p95LatencyMs} > ${baseline.p95LatencyMs} × ${rollout.maxP95LatencyRatio}`)
  }
  if (
    baseline.calls > 0 &&
    baseline.costPerCall > 0 &&
    candidate.costPerCall > baseline.costPerCall * rollout.maxCostPerCallRatio
  ) {
    out.push(`costPerCall ${candidate.costPerCall} > ${baseline.costPerCall} × ${rollout.maxCostPerCallRatio}`)
  }
  return out
}

/**
 * A settled call as a sample (cancelled calls are none of the candidate's doing). An error is a
 * call whose side did not answer it with its first choice: failed, or answered by a fallback.
 */
export const sampleOf = (record: CallRecord): Sample | undefined => {
  if (record.outcome === "cancelled") return undefined
  const e = record.evidence
  return {
    // The side's first choice did not answer: the call failed, or a fallback target answered it.
    error: record.outcome === "failed" || record.outcome === "incomplete" || e.fallbackUsed,
    invalid: e.schemaValid === false || e.attempts.some((a) => a.outcome === "invalid_output"),
    latencyMs: e.totalLatencyMs,
    cost: e.cost.actual
  }
}
