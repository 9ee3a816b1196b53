/**
 * Escalation: moving a call to a stronger target, either because the command asked for it
 * (`escalate`, decided with the route) or inside a call (an answer failed validation, or the
 * workflow's check fired on it), within the route's hard filters and reservation.
 */
import type { ModelTarget } from "../../ModelTarget.js"
import { qualityRank } from "../targetSchemas.js"
import type { Escalation, EscalationSignal } from "../../RouteDecision.js"
import type { EscalationPolicy } from "../workflowPolicies.js"

/**
 * Whether `candidate` is an escalation target from `from` under `policy`: one of the policy's
 * explicit `targets` (other than `from`) when it names some; else of a stronger quality class than
 * `from` (an undeclared class is the weakest), and at least the policy's `tier` when it sets one.
 *
 * @since 0.2.0
 * @category Routing
 */
export const isStronger = (
  from: ModelTarget,
  candidate: ModelTarget,
  policy: EscalationPolicy | undefined
): boolean => {
  if (policy?.targets !== undefined) return candidate.ref !== from.ref && policy.targets.includes(candidate.ref)
  const rank = (t: ModelTarget) => (t.qualityTier === undefined ? -1 : qualityRank(t.qualityTier))
  if (rank(candidate) <= rank(from)) return false
  return policy?.tier === undefined || rank(candidate) >= qualityRank(policy.tier)
}

/**
 * Escalation: `order` with the items stronger than the first ({@link isStronger}) moved first
 * (each group keeps its order), or `undefined` when none is stronger.
 */
export const escalationOrder = <A>(
  order: ReadonlyArray<A>,
  targetOf: (a: A) => ModelTarget,
  policy: EscalationPolicy | undefined
): Array<A> | undefined => {
  const first = order[0]
  if (first === undefined) return undefined
  const from = targetOf(first)
  const stronger = order.filter((a) => isStronger(from, targetOf(a), policy))
  if (stronger.length === 0) return undefined
  return [...stronger, ...order.filter((a) => !isStronger(from, targetOf(a), policy))]
}

/** The evidence of one escalation. */
export const escalationOf = (signal: EscalationSignal, from: ModelTarget, to: ModelTarget | undefined): Escalation => {
  const out: { -readonly [K in keyof Escalation]: Escalation[K] } = { signal, from: from.ref }
  if (from.qualityTier !== undefined) out.fromTier = from.qualityTier
  if (to !== undefined) {
    out.to = to.ref
    if (to.qualityTier !== undefined) out.toTier = to.qualityTier
  }
  return out
}

/**
 * The command's escalation `decided` once the route's targets are `targets` (after some were
 * dropped, e.g. by the tenant's budget): unchanged while its `to` is still first; else to the new
 * first target when that is still stronger than `from`, else without `to` (the signal led nowhere).
 */
export const escalationWithin = (
  decided: Escalation,
  targets: ReadonlyArray<ModelTarget>,
  policy: EscalationPolicy | undefined
): Escalation => {
  const first = targets[0]
  if (decided.to === undefined || first?.ref === decided.to) return decided
  const from = targets.find((t) => t.ref === decided.from)
  if (from === undefined || first === undefined) return withoutTo(decided)
  return isStronger(from, first, policy) ? escalationOf(decided.signal, from, first) : withoutTo(decided)
}

/** `escalation` that found no stronger target (evidence of a signal that led nowhere). */
export const withoutTo = (escalation: Escalation): Escalation => {
  if (escalation.to === undefined) return escalation
  const out: { -readonly [K in keyof Escalation]: Escalation[K] } = { signal: escalation.signal, from: escalation.from }
  if (escalation.fromTier !== undefined) out.fromTier = escalation.fromTier
  return out
}

/**
 * Escalation inside a call (an answer failed validation, or the workflow's check fired on it): the
 * index of the best eligible target after `from` in the route's order that is stronger under the
 * workflow's escalation policy, and the escalation's evidence (`to` absent, index −1 when there
 * is none). The route's targets passed every hard filter and the reservation covers each of them,
 * so the escalation stays within the call's constraints, deadline and reservation.
 *
 * @since 0.2.0
 * @category Routing
 */
export const escalateFrom = (
  route: {
    readonly targets: ReadonlyArray<ModelTarget>
    readonly compiled: { readonly workflow: { readonly escalation?: EscalationPolicy | undefined } }
  },
  from: number,
  signal: EscalationSignal
): { readonly index: number; readonly escalation: Escalation } => {
  const current = route.targets[from]!
  const policy = route.compiled.workflow.escalation
  for (let j = from + 1; j < route.targets.length; j++) {
    const candidate = route.targets[j]!
    if (isStronger(current, candidate, policy))
      return { index: j, escalation: escalationOf(signal, current, candidate) }
  }
  return { index: -1, escalation: escalationOf(signal, current, undefined) }
}
