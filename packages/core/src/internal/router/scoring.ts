/**
 * Scored selection: each eligible target's terms (quality, latency, cost, health, affinity, a
 * deprecation penalty), their weighted total, and the order they give (hysteresis, session
 * affinity and a command's escalation included). Pure and deterministic; numbers stay in typed
 * arrays until the scores are read.
 */
import * as Duration from "effect/Duration"
import * as HealthThresholds from "../healthRecord.js"
import { healthScore, type RouteHealth } from "../healthRecord.js"
import type { ModelCommand } from "../../ModelCommand.js"
import type { ModelTarget, TargetRef } from "../../ModelTarget.js"
import { qualityRank } from "../targetSchemas.js"
import type { Escalation, SelectionReason, TargetScore } from "../../RouteDecision.js"
import type { ScoreWeights } from "../workflowPolicies.js"
import type { CompiledWorkflow } from "../compiled.js"
import { verifiedScore } from "./eligibility.js"
import { escalationOf, escalationOrder } from "./escalation.js"
import { LazyScores } from "./lazyScores.js"
import { rankOrder } from "./rankOrder.js"
import { classQuality, latencyClassFit, round4, type Settings, sheetsOf, termsOf, unknownFit } from "./terms.js"
import type { ClassTerms } from "./types.js"

export { LazyScores } from "./lazyScores.js"

/**
 * Default weights of the score's terms (the routing spec's): quality 0.45, latency 0.20, cost 0.15,
 * health 0.10, affinity 0.10.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultWeights = { quality: 0.45, latency: 0.2, cost: 0.15, health: 0.1, affinity: 0.1 } as const

/**
 * A call whose timeout is shorter than this (when its workflow sets no `scoring.shortDeadline`)
 * puts fast-latency targets first under scored selection.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultShortDeadline: Duration.Duration = Duration.seconds(2)

/**
 * Subtracted from a deprecated target's score when the workflow sets no `scoring.deprecatedPenalty`.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultDeprecatedPenalty = 0.2

/** Quality fit lost per class of distance from the preferred class. */
const preferenceStep = 0.1

/**
 * A scored workflow keeps its last best-scoring target first while a challenger's total is less
 * than this much higher (hysteresis against noisy health and latency), when the workflow sets no
 * `scoring.switchMargin`.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultSwitchMargin = 0.03

/**
 * The quality term of `target` before the preferred-class step: its verified score on `segment`,
 * else its class, else 0.5, plus `adjustment` (the seam for quality signals measured in production,
 * e.g. a demotion: {@link BreakerView.qualityAdjustment}), clamped to 0..1.
 *
 * @since 0.2.0
 * @category Routing
 */
export const qualityFit = (
  target: ModelTarget,
  segment: string | undefined,
  adjustment: number | undefined
): number => {
  const verified = segment === undefined ? undefined : verifiedScore(target, segment)
  const tier = target.qualityTier
  const base = verified ?? (tier === undefined ? unknownFit : classQuality[tier])
  return adjustment === undefined || adjustment === 0 ? base : Math.max(0, Math.min(1, base + adjustment))
}

/**
 * What scored selection reads besides the command: route health, session affinity, the
 * workflow's last best-scoring target, the time left and quality adjustments.
 *
 * @since 0.2.0
 * @category Models
 */
export interface ScoreContext {
  /** Health record per target (aligned with the scored targets); `undefined` where none is kept. */
  readonly health?: ReadonlyArray<RouteHealth | undefined> | undefined
  /** The target that served the call's session last time; it gets the affinity term while healthy. */
  readonly sticky?: TargetRef | undefined
  /** What made `sticky` sticky: the session (default) or the prompt's prefix (`PREFIX_AFFINITY`). */
  readonly stickyBy?: "session" | "prefix" | undefined
  /** The workflow's last best-scoring target (hysteresis: the workflow's switch margin, default 0.03). */
  readonly incumbent?: TargetRef | undefined
  /**
   * The time the call has, ms (the router passes the call's: the earliest of the command's and the
   * workflow's timeout and an enclosing agent run's remaining time); omitted: the earlier of the
   * command's and the workflow's timeout. Read by the latency fit and the short-deadline rule.
   */
  readonly timeLeftMs?: number | undefined
  /** `stream`: the latency term reads the route's TTFT. */
  readonly mode?: "generate" | "stream" | undefined
  /** Added to a target's quality term (its quality fit). */
  readonly qualityAdjustment?: ((target: ModelTarget, segment: string | undefined) => number | undefined) | undefined
}

/**
 * Scores below this `health` term are `DEGRADED` (at or above, `HEALTHY`): `degradedBelow` of `internal/healthRecord`.
 *
 * @since 0.2.0
 * @category Constants
 */
export const degradedBelow = HealthThresholds.degradedBelow

/**
 * Headroom below which the `health` term is scored down: `lowHeadroom` of `internal/healthRecord`.
 *
 * @since 0.2.0
 * @category Constants
 */
export const lowHeadroom = HealthThresholds.lowHeadroom

/**
 * The `health` term of a route: `Health.healthScore` (success rate, half-open breaker, rate-limit
 * and concurrency headroom).
 *
 * @since 0.2.0
 * @category Routing
 */
export const healthOf = (record: RouteHealth): number => healthScore(record)

/**
 * What {@link score} returns: the order, each target's score, why the first leads, whether a short
 * deadline put the fast latency class first, and the command's escalation if it asked for one.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Ranking {
  readonly targets: ReadonlyArray<ModelTarget>
  readonly scores: ReadonlyArray<TargetScore>
  readonly reason: SelectionReason
  readonly fastTier: boolean
  readonly escalation: Escalation | undefined
}

/**
 * Scored selection: the order of `targets` (all eligible under the hard filters, in route order)
 * with each one's score and the reason the first leads. Pure and deterministic.
 *
 * Per target, each term in 0..1 (rounded to 4 decimals):
 * - `quality`: the quality fit (the verified score on the call's segment, else the class: `low`
 *   0.5, `standard` 0.75, `high` 0.9, else 0.5, plus any quality adjustment); minus 0.1 per class of
 *   distance from the preferred class (if both are known), floored at 0.
 * - `latency`: with an observed p95 on the route (smoothed; TTFT for streams), `1 − p95 / time
 *   left` (the time the call has: `timeLeftMs` of the score context), 0 when the p95 does not fit; else the latency class: `fast` 1,
 *   `medium` 0.6, `slow` 0.3, undeclared 0.5.
 * - `cost`: the cheapest candidate's price over this one's (1 for the cheapest). The price is the
 *   estimated worst-case cost of the call at the target when the input was counted (input tokens ×
 *   safety factor and the output-token cap), else input plus output price per million.
 * - `health`: 1 without a health record (an open breaker already excluded the target), else
 *   `Health.healthScore` of the record; the score then carries `status` (`Health.statusOf`).
 * - `affinity`: 1 for `context.sticky` (the session's last serving target) while it is `HEALTHY`
 *   (or has no record), else 0.
 * - `penalty`: the workflow's deprecated penalty (default 0.2) for a deprecated target, else 0.
 *
 * `total = wq·quality + wl·latency + wc·cost + wh·health + wa·affinity − penalty` with the
 * workflow's weights over the default weights (quality 0.45, latency 0.20, cost 0.15, health
 * 0.10, affinity 0.10). Order: targets whose observed p95 does not fit
 * the time left come last; then total descending, ties in route order. When the time the call has
 * is shorter than the workflow's short deadline (default 2 s), fast-latency targets that fit come
 * first (`fastTier`). Without a session, the workflow's last best-scoring target (`incumbent`)
 * stays first while the leader's total is at most the switch margin (default 0.03) higher. The
 * reason is `STICKY` when the sticky target leads only thanks to its affinity. With the command's
 * `escalate`, the targets stronger than the leader (`isStronger` under the workflow's
 * `escalation` policy) move first, in that order (`ESCALATION`); without any the order stays and
 * `escalation` has no `to`.
 *
 * @since 0.2.0
 * @category Routing
 */
export const score = (
  compiled: CompiledWorkflow,
  command: ModelCommand,
  targets: ReadonlyArray<ModelTarget>,
  inputTokens: number | undefined,
  context?: ScoreContext
): Ranking => {
  const r = rank(compiled, command, targets, inputTokens, context)
  return {
    targets: r.targets,
    scores: r.scores.value,
    reason: r.reason,
    fastTier: r.fastTier,
    escalation: r.escalation
  }
}

/**
 * The quality term of `target`: {@link qualityFit} (verified score on `segment`, else the class,
 * plus `adjustment`), minus {@link preferenceStep} per class of distance from the preferred class
 * (rank `preferredRank`, −1 for none); 4 decimals.
 */
const qualityTerm = (
  target: ModelTarget,
  segment: string | undefined,
  preferredRank: number,
  adjustment: number | undefined
): number => {
  const q = qualityFit(target, segment, adjustment)
  const tier = target.qualityTier
  return preferredRank >= 0 && tier !== undefined
    ? round4(Math.max(0, q - preferenceStep * Math.abs(qualityRank(tier) - preferredRank)))
    : round4(q)
}

/** The weights a workflow sets (omitted ones left out, so the defaults stay). */
const definedWeights = (weights: ScoreWeights | undefined) => {
  const out: { quality?: number; latency?: number; cost?: number; health?: number; affinity?: number } = {}
  if (weights === undefined) return out
  if (weights.quality !== undefined) out.quality = weights.quality
  if (weights.latency !== undefined) out.latency = weights.latency
  if (weights.cost !== undefined) out.cost = weights.cost
  if (weights.health !== undefined) out.health = weights.health
  if (weights.affinity !== undefined) out.affinity = weights.affinity
  return out
}

export type { ClassTerms } from "./types.js"

/** {@link ClassTerms} of `compiled` (the router keeps them per workflow in its state). */
export const classTermsOf = (compiled: CompiledWorkflow): ClassTerms => {
  const w = compiled.workflow
  const route = compiled.targets
  const n = route.length
  const preferredRank = w.preferredTier === undefined ? -1 : qualityRank(w.preferredTier)
  const quality = new Float64Array(n)
  const latency = new Float64Array(n)
  const fast = new Uint8Array(n)
  const deprecated = new Uint8Array(n)
  for (let i = 0; i < n; i++) {
    const t = route[i]!
    quality[i] = qualityTerm(t, w.segment, preferredRank, undefined)
    latency[i] = latencyClassFit(t)
    fast[i] = t.classes?.latency === "fast" ? 1 : 0
    deprecated[i] = t.status === "deprecated" ? 1 : 0
  }
  return {
    quality,
    latency,
    fast,
    deprecated,
    ...sheetsOf(route),
    dedicated: route.some((t) => t.tenants !== undefined)
  }
}

/** {@link score}'s result for the router: the scores stay numbers until read. */
export interface Ranked {
  readonly targets: ReadonlyArray<ModelTarget>
  readonly scores: LazyScores
  readonly reason: SelectionReason
  readonly fastTier: boolean
  readonly escalation: Escalation | undefined
}

const settingsOf = (compiled: CompiledWorkflow, command: ModelCommand, context: ScoreContext | undefined): Settings => {
  const w = compiled.workflow
  const weights =
    w.scoring?.weights === undefined ? defaultWeights : { ...defaultWeights, ...definedWeights(w.scoring.weights) }
  const preferred = command.preferredTier ?? w.preferredTier
  return {
    wq: weights.quality,
    wl: weights.latency,
    wc: weights.cost,
    wh: weights.health,
    wa: weights.affinity,
    deprecatedPenalty: round4(w.scoring?.deprecatedPenalty ?? defaultDeprecatedPenalty),
    segment: command.segment ?? w.segment,
    preferredRank: preferred === undefined ? -1 : qualityRank(preferred),
    timeLeft:
      context?.timeLeftMs ??
      Math.min(
        command.timeout === undefined ? Infinity : Duration.toMillis(command.timeout),
        Duration.toMillis(w.timeout)
      ),
    stream: context?.mode === "stream",
    adjust: context?.qualityAdjustment
  }
}

/** Hysteresis: `order` with the workflow's last best-scoring target first unless it is clearly beaten. */
const keepIncumbent = (
  compiled: CompiledWorkflow,
  targets: ReadonlyArray<ModelTarget>,
  totalOf: (i: number) => number,
  group: (i: number) => number,
  order: Array<number> | undefined,
  incumbent: TargetRef
): Array<number> | undefined => {
  const n = targets.length
  const lead = order === undefined ? 0 : order[0]!
  if (targets[lead]!.ref === incumbent) return order
  let kept = -1
  for (let i = 0; i < n; i++) {
    if (targets[i]!.ref === incumbent) {
      kept = i
      break
    }
  }
  const margin = compiled.workflow.scoring?.switchMargin ?? defaultSwitchMargin
  if (kept < 0 || group(kept) !== group(lead) || totalOf(kept) + margin < totalOf(lead)) return order
  const current = order ?? Array.from({ length: n }, (_, i) => i)
  current.splice(current.indexOf(kept), 1)
  current.unshift(kept)
  return current
}

/** Whether the sticky target leads only thanks to its affinity (it would not without it, same order rules). */
const ledByAffinity = (
  n: number,
  stickyAt: number,
  wa: number,
  totalOf: (i: number) => number,
  group: (i: number) => number
): boolean => {
  const without = (i: number) => totalOf(i) - (i === stickyAt ? wa : 0)
  let lead = 0
  for (let i = 1; i < n; i++) {
    const byGroup = group(i) - group(lead)
    if (byGroup > 0 || (byGroup === 0 && round4(without(i)) > round4(without(lead)))) lead = i
  }
  return lead !== stickyAt
}

/**
 * {@link score} for the router: the scores stay numbers until read. `cached`: the workflow's
 * {@link ClassTerms}, read for targets of its route (its class terms when the call's segment and
 * preferred class are the workflow's and no quality adjustment applies); `at`: the route position
 * of each of `targets` (−1: not a route target), else a target is the route's at its own position.
 */
export const rank = (
  compiled: CompiledWorkflow,
  command: ModelCommand,
  targets: ReadonlyArray<ModelTarget>,
  inputTokens: number | undefined,
  context: ScoreContext | undefined,
  cached?: ClassTerms,
  at?: ArrayLike<number>
): Ranked => {
  const w = compiled.workflow
  const s = settingsOf(compiled, command, context)
  const n = targets.length
  const t = termsOf(targets, s, {
    route: compiled.targets,
    table: cached,
    classes:
      s.adjust === undefined &&
      s.segment === w.segment &&
      (command.preferredTier ?? w.preferredTier) === w.preferredTier,
    at,
    inputTokens,
    outputCap: Math.min(command.maxOutputTokens ?? Infinity, w.maxOutputTokens ?? Infinity),
    health: context?.health,
    sticky: context?.sticky,
    qualityOf: (target) =>
      qualityTerm(target, s.segment, s.preferredRank, s.adjust === undefined ? undefined : s.adjust(target, s.segment))
  })
  const totalOf = (i: number) => t.totals[i]! / 10_000
  const slow = t.slow
  const fits = (i: number) => (slow?.[i] === true ? 0 : 1)
  const isFast = (i: number) => (targets[i]!.classes?.latency === "fast" && slow?.[i] !== true ? 1 : 0)
  let fastFirst = false
  if (n > 1 && t.anyFast) {
    const shortDeadline = Duration.toMillis(w.scoring?.shortDeadline ?? defaultShortDeadline)
    fastFirst = s.timeLeft < shortDeadline
  }
  /** The order's group of a target: those that fit the time left first, then (short deadline) fast ones. */
  const group = (i: number) => 2 * fits(i) + (fastFirst ? isFast(i) : 0)
  let order: Array<number> | undefined
  // Group, then total descending, ties in route order (the index makes the tie-break explicit).
  if (!t.sorted || slow !== undefined || fastFirst) {
    order = rankOrder(n, t.totals, slow === undefined && !fastFirst ? undefined : group)
  }
  const incumbent = context?.incumbent
  const sticky = context?.sticky
  if (n > 1 && incumbent !== undefined && sticky === undefined) {
    order = keepIncumbent(compiled, targets, totalOf, group, order, incumbent)
  }
  let reason: SelectionReason = n === 1 ? "ONLY_ELIGIBLE" : "BEST_SCORE"
  const stickyAt = t.stickyAt
  if (n > 1 && stickyAt >= 0 && (order === undefined ? 0 : order[0]) === stickyAt && s.wa > 0) {
    if (ledByAffinity(n, stickyAt, s.wa, totalOf, group)) {
      reason = context?.stickyBy === "prefix" ? "PREFIX_AFFINITY" : "STICKY"
    }
  }
  let escalation: Escalation | undefined
  if (command.escalate === true) {
    const current = order ?? Array.from({ length: n }, (_, i) => i)
    const from = targets[current[0]!]!
    const stronger = escalationOrder(current, (i) => targets[i]!, w.escalation)
    if (stronger !== undefined) {
      order = stronger
      reason = "ESCALATION"
    }
    escalation = escalationOf("command", from, stronger === undefined ? undefined : targets[stronger[0]!])
  }
  // Affinity counts only where it was given (a sticky target that is not healthy gets none).
  const scores = new LazyScores(
    targets,
    t.x,
    t.totals,
    t.healthAt,
    t.statuses,
    t.observedAt,
    stickyAt,
    s.deprecatedPenalty,
    order
  )
  if (order === undefined) return { targets, scores, reason, fastTier: fastFirst, escalation }
  const ranked = new Array<ModelTarget>(n)
  for (let k = 0; k < n; k++) ranked[k] = targets[order[k]!]!
  return { targets: ranked, scores, reason, fastTier: fastFirst, escalation }
}
