/**
 * The summary of a CallRecord that `CallRecorder.layerLog` logs: the fields and the message.
 */
import type { CallRecord } from "../ModelResult.js"

/**
 * The fields of a record's `Info` line, logged as annotations: `workflow`, `outcome`, `error` and
 * `reason` (failures), `target` (the one that answered), `fallback`, `retries`, `degraded`,
 * `attempts`, `latencyMs` (whole), `costUsd`, `callId`. Only names from the configuration, values
 * from closed sets, numbers and the call id: never the tenant, never content.
 */
export type Summary = {
  readonly workflow: string
  readonly outcome: CallRecord["outcome"]
  readonly error?: string
  readonly reason?: string
  readonly target?: string
  /** The answer came from a later target of the route, or the call tried one. */
  readonly fallback: boolean
  /** Retries on the same target (after a backoff). */
  readonly retries: number
  readonly degraded: boolean
  readonly attempts: number
  readonly latencyMs: number
  readonly costUsd: number
  readonly callId: string
}

/**
 * The annotations of a record's `Info` line (`Summary`).
 */
export const summary = (record: CallRecord): Summary => {
  const e = record.evidence
  return {
    workflow: e.workflow,
    outcome: record.outcome,
    ...(record.errorTag !== undefined ? { error: record.errorTag } : {}),
    ...(record.errorReason !== undefined ? { reason: record.errorReason } : {}),
    ...(e.target !== undefined ? { target: e.target } : {}),
    fallback: e.fallbackUsed,
    retries: e.retryCount,
    degraded: e.degraded,
    attempts: e.attempts.length,
    latencyMs: Math.round(e.totalLatencyMs),
    costUsd: e.cost.actual,
    callId: e.callId
  }
}

/**
 * The message of a record's `Info` line: `modelgate call <outcome>`, then what was not a clean call
 * — the error tag, a fallback, retries, a degraded answer, an exhausted retry budget:
 *
 * - `modelgate call success`
 * - `modelgate call success via fallback after 2 retries` (an outage served by the fallback)
 * - `modelgate call degraded (ProviderUnavailable) via fallback`
 * - `modelgate call failed (BudgetExceeded)`
 */
export const summaryMessage = (record: CallRecord): string => {
  const e = record.evidence
  let line = `modelgate call ${record.outcome}`
  // A degraded answer stands in for a failure: the record keeps the failure's tag.
  if (record.errorTag !== undefined) line += ` (${record.errorTag})`
  if (e.fallbackUsed) line += " via fallback"
  if (e.retryCount > 0) line += ` after ${e.retryCount} ${e.retryCount === 1 ? "retry" : "retries"}`
  if (e.degraded && record.outcome !== "degraded") line += ", degraded"
  if (e.retryBudgetExhausted) line += ", retry budget exhausted"
  return line
}
