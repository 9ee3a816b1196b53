/**
 * A call's evidence on the wire: response headers (`x-modelgate-*`) for answers, and the same
 * facts as one JSON object for the final event of a stream. Versions, route, flags, attempts and
 * cost — never content.
 *
 * @internal
 */
import type { ModelResult } from "@modelgate/core"

type Evidence = ModelResult.Evidence

export const evidenceHeaders = (evidence: Evidence): Record<string, string> => {
  const headers: Record<string, string> = {
    "x-modelgate-call-id": evidence.callId,
    "x-modelgate-workflow": evidence.workflow,
    "x-modelgate-fallback": String(evidence.fallbackUsed),
    "x-modelgate-degraded": String(evidence.degraded),
    "x-modelgate-attempts": String(evidence.attempts.length),
    "x-modelgate-retries": String(evidence.retryCount),
    "x-modelgate-cost": String(evidence.cost.actual),
    "x-modelgate-cost-reserved": String(evidence.cost.reserved),
    "x-modelgate-latency-ms": String(Math.round(evidence.totalLatencyMs)),
    "x-modelgate-policy-version": evidence.policyVersion,
    "x-modelgate-prompt": `${evidence.promptId}@${evidence.promptVersion}`
  }
  if (evidence.target !== undefined) headers["x-modelgate-route"] = evidence.target
  if (evidence.schemaVersion !== undefined) headers["x-modelgate-schema-version"] = evidence.schemaVersion
  if (evidence.pricingVersion !== undefined) headers["x-modelgate-pricing-version"] = evidence.pricingVersion
  if (evidence.configVersion !== undefined) headers["x-modelgate-config-version"] = evidence.configVersion
  return headers
}

/** The evidence summary of a stream's last event (`modelgate` field of the final chunk). */
export const evidenceSummary = (evidence: Evidence) => ({
  call_id: evidence.callId,
  workflow: evidence.workflow,
  route: evidence.target ?? null,
  fallback: evidence.fallbackUsed,
  degraded: evidence.degraded,
  attempts: evidence.attempts.length,
  retries: evidence.retryCount,
  cost: evidence.cost.actual,
  cost_reserved: evidence.cost.reserved,
  latency_ms: Math.round(evidence.totalLatencyMs),
  policy_version: evidence.policyVersion,
  prompt: `${evidence.promptId}@${evidence.promptVersion}`,
  schema_version: evidence.schemaVersion ?? null,
  pricing_version: evidence.pricingVersion ?? null,
  config_version: evidence.configVersion ?? null
})
