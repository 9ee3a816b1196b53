/**
 * Routing: which targets may serve a request, in which order, and why every other target of the
 * workflow's route was excluded. Deterministic: the same command and health state give the same
 * decision.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Either, Exit, Metric, Option } from "effect"
import { minimumUsefulOutputTokens } from "./Pricing.js"
import { type Failure, fromFailure, type GatewayError, type StoreError } from "./Errors.js"
import * as Embeddings from "./Embeddings.js"
import type { CompiledWorkflow } from "./GatewayConfig.js"
import * as HealthThresholds from "./Health.js"
import { Health, healthScore, noBreaker, noRecord, noSnapshot, RouteHealth, statusOf } from "./Health.js"
import type { ModelCommand } from "./ModelCommand.js"
import * as ModelOptions from "./ModelOptions.js"
import { type ModelTarget, type QualityTier, qualityRank, type TargetRef } from "./ModelTarget.js"
import { boundDetail, ExcludedTarget, RouteDecision, routeIdOf } from "./RouteDecision.js"
import type {
  CanaryAssignment,
  Escalation,
  EscalationSignal,
  ExclusionReason,
  HealthStatus,
  RouteRequirements,
  SelectionReason,
  TargetScore
} from "./RouteDecision.js"
import { metrics as telemetryMetrics } from "./Telemetry.js"
import type { CanaryPolicy, EscalationPolicy, Risk, ScoreWeights } from "./Workflow.js"
import * as TokenEstimator from "./TokenEstimator.js"
import type * as Lifecycle from "./internal/lifecycle.js"

/**
 * A decision with the resolved targets, as the engine uses it.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Route {
  /** The decision as a `RouteDecision` (built on first read). */
  readonly decision: RouteDecision
  /** Eligible target refs, in order (the decision's `eligible`). */
  readonly eligible: ReadonlyArray<TargetRef>
  /** Excluded targets with their reasons (the decision's `excluded`). */
  readonly excluded: ReadonlyArray<ExcludedTarget>
  readonly compiled: CompiledWorkflow
  /** Eligible targets, in order. */
  readonly targets: ReadonlyArray<ModelTarget>
  /**
   * Estimated input tokens before per-target safety factors; `undefined` when no limit needed a
   * count (no finite budget, cost cap or input limit, and the input certainly fits every window).
   */
  readonly inputTokens: number | undefined
  /** The call's sampling and provider options, resolved against the workflow's bounds. */
  readonly options: ModelOptions.ResolvedOptions
  /** Why the first eligible target leads (the decision's `selectionReason`). */
  readonly selectionReason?: SelectionReason
  /** Scored selection: the scores of the targets that passed the hard filters, best first. */
  readonly scores?: ReadonlyArray<TargetScore> | undefined
  /** The workflow's canary and the side the call was assigned (the decision's `canary`). */
  readonly canary?: CanaryAssignment | undefined
  /** The decision's id (`RouteDecision.routeId`), computed when first read. */
  readonly routeId: string
  /** The command's `escalate` signal and where it led (the decision's `escalation`). */
  readonly escalation?: Escalation | undefined
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly workflows: ReadonlyMap<string, CompiledWorkflow>
  readonly resolve: (command: ModelCommand, mode?: "generate" | "stream") => Effect.Effect<Route, GatewayError>
}

const noOptions: ReadonlyArray<ModelOptions.OptionName> = []

/** `command.hasImages` walks every message: once per command, not once per target. */
const imagesMemo = new WeakMap<ModelCommand, boolean>()
const hasImages = (command: ModelCommand): boolean => {
  let found = imagesMemo.get(command)
  if (found === undefined) {
    found = command.hasImages
    imagesMemo.set(command, found)
  }
  return found
}

/**
 * The value of a health check that is already settled (`Effect.succeed`, e.g. breakers off), read
 * without a generator step per target; `undefined` when it must run.
 */
const settled = (check: Effect.Effect<boolean, StoreError>): boolean | undefined =>
  check === noBreaker
    ? false
    : Exit.isExit(check) && Exit.isSuccess(check) && typeof check.value === "boolean"
      ? check.value
      : undefined

/**
 * Why `target` cannot serve `command` under `compiled`, or `undefined` when it can (health aside).
 *
 * @since 0.1.0
 * @category Utils
 */
export const checkTarget = (
  compiled: CompiledWorkflow,
  command: ModelCommand,
  target: ModelTarget,
  inputTokens: number | undefined,
  mode: "generate" | "stream",
  /** Options the target must accept (set by the command or pinned by the workflow). */
  requiredOptions: ReadonlyArray<ModelOptions.OptionName> = []
): { readonly reason: ExclusionReason; readonly detail: string } | undefined =>
  requestReason(compiled, requestView(compiled, command, mode), target, requiredOptions) ??
  sizeReason(compiled, command, target, inputTokens)

/** What of a request the eligibility rules read, besides its size. */
interface RequestView {
  readonly regions: ReadonlyArray<string>
  readonly dataClass: string
  readonly images: boolean
  readonly tools: boolean
  readonly streaming: boolean
  readonly schemaFeatures: ReadonlyArray<string> | undefined
  readonly risk: Risk | undefined
  readonly segment: string | undefined
  readonly minQualityTier: QualityTier | undefined
}

const riskRank = (risk: Risk | undefined): number => (risk === "HIGH" ? 2 : risk === "MEDIUM" ? 1 : 0)

/** The higher of two optional quality classes. */
const higherTier = (a: QualityTier | undefined, b: QualityTier | undefined): QualityTier | undefined =>
  a === undefined ? b : b === undefined ? a : qualityRank(a) >= qualityRank(b) ? a : b

const requestView = (compiled: CompiledWorkflow, command: ModelCommand, mode: "generate" | "stream"): RequestView => {
  const w = compiled.workflow
  return {
    regions: command.regions ?? w.regions,
    dataClass: command.dataClass ?? w.dataClass,
    images: hasImages(command),
    tools: (command.tools?.length ?? 0) > 0,
    streaming: mode === "stream" || command.requires?.streaming === true,
    schemaFeatures: command.requires?.schemaFeatures,
    // A command can raise the workflow's risk and minimum class, never lower them.
    risk: riskRank(command.risk) > riskRank(w.risk) ? command.risk : w.risk,
    segment: command.segment ?? w.segment,
    minQualityTier: higherTier(w.minQualityTier, command.minQualityTier)
  }
}

/** A request that asks for nothing beyond its workflow (the common case): its rules are the workflow's. */
const isPlain = (command: ModelCommand, mode: "generate" | "stream"): boolean =>
  mode === "generate" &&
  command.regions === undefined &&
  command.dataClass === undefined &&
  command.requires === undefined &&
  command.risk === undefined &&
  command.segment === undefined &&
  command.minQualityTier === undefined &&
  (command.tools?.length ?? 0) === 0 &&
  !hasImages(command)

/** Per workflow: why each route target is excluded for a plain request (computed once). */
const plainReasons = new WeakMap<
  CompiledWorkflow,
  ReadonlyArray<{ readonly reason: ExclusionReason; readonly detail: string } | undefined>
>()
const plainReasonsOf = (compiled: CompiledWorkflow) => {
  let reasons = plainReasons.get(compiled)
  if (reasons === undefined) {
    const w = compiled.workflow
    const view: RequestView = {
      regions: w.regions,
      dataClass: w.dataClass,
      images: false,
      tools: false,
      streaming: false,
      schemaFeatures: undefined,
      risk: w.risk,
      segment: w.segment,
      minQualityTier: w.minQualityTier
    }
    reasons = compiled.targets.map((t) => requestReason(compiled, view, t, noOptions))
    plainReasons.set(compiled, reasons)
  }
  return reasons
}

/** Why `target` cannot serve a request like `view` (size aside), or `undefined`. */
const requestReason = (
  compiled: CompiledWorkflow,
  view: RequestView,
  target: ModelTarget,
  requiredOptions: ReadonlyArray<ModelOptions.OptionName>
): { readonly reason: ExclusionReason; readonly detail: string } | undefined => {
  const w = compiled.workflow
  if (target.status === "disabled") return { reason: "DISABLED", detail: "target is disabled" }
  const regions = view.regions
  // Hot path (once per target per request): no allocation unless the target is excluded.
  let outside: Array<string> | undefined
  for (const r of target.regions) {
    if (regions.includes(r) && w.regions.includes(r)) continue
    if (outside === undefined) outside = []
    outside.push(r)
  }
  if (outside !== undefined) {
    return {
      reason: "DATA_REGION_MISMATCH",
      detail: `runs in [${outside.join(", ")}], allowed [${regions.join(", ")}]`
    }
  }
  // Both the workflow's class and the request's own: a request can narrow, never widen, who may see it.
  const dataClass = view.dataClass
  if (!target.dataClasses.includes(dataClass) || !target.dataClasses.includes(w.dataClass)) {
    return { reason: "DATA_CLASS_NOT_ALLOWED", detail: `data class "${dataClass}" not allowed` }
  }
  const caps = target.capabilities
  // Embedding models serve embedding workflows only, and only in the workflow's vector space.
  if (w.embedding !== undefined || caps.embeddings !== undefined) {
    const why = Embeddings.incompatibility(w.embedding, target)
    if (why !== undefined) return why
  }
  const lacksVision = !caps.vision && (w.requires.vision || view.images)
  const lacksTools = !caps.tools && (w.requires.tools || view.tools)
  const lacksStreaming = !caps.streaming && (w.requires.streaming || view.streaming)
  const lacksStructured = compiled.schema !== undefined && caps.structuredOutput.mode === "none"
  if (lacksVision || lacksTools || lacksStreaming || lacksStructured) {
    const missing: Array<string> = []
    if (lacksVision) missing.push("vision")
    if (lacksTools) missing.push("tools")
    if (lacksStreaming) missing.push("streaming")
    if (lacksStructured) missing.push("structured output")
    return { reason: "CAPABILITY_MISSING", detail: `missing: ${missing.join(", ")}` }
  }
  if (compiled.schema !== undefined || view.schemaFeatures !== undefined) {
    const supported = caps.structuredOutput.features
    // No allocation unless a feature is unsupported.
    let unsupported: Array<string> | undefined
    const check = (f: string) => {
      for (const s of supported) if (s === f) return
      if (unsupported?.includes(f)) return
      if (unsupported === undefined) unsupported = []
      unsupported.push(f)
    }
    for (const f of compiled.features) check(f)
    for (const f of view.schemaFeatures ?? []) check(f)
    if (unsupported !== undefined) {
      return { reason: "SCHEMA_FEATURE_UNSUPPORTED", detail: `unsupported: ${unsupported.sort().join(", ")}` }
    }
  }
  if (requiredOptions.length > 0) {
    const missing = ModelOptions.unsupported(requiredOptions, caps.options ?? noOptions)
    if (missing !== undefined) {
      return { reason: "OPTION_UNSUPPORTED", detail: boundDetail(`does not accept options: ${missing.join(", ")}`) }
    }
  }
  const min = view.minQualityTier
  if (min !== undefined) {
    const tier = target.qualityTier
    if (tier === undefined) return { reason: "BELOW_MIN_TIER", detail: `no quality class, ${min} required` }
    if (qualityRank(tier) < qualityRank(min)) {
      return { reason: "BELOW_MIN_TIER", detail: `quality ${tier} below ${min}` }
    }
  }
  if (view.risk === "HIGH") {
    const segment = view.segment
    if (segment === undefined) return { reason: "QUALITY_UNVERIFIED", detail: "risk HIGH needs a task segment" }
    const threshold = w.qualityThreshold ?? defaultQualityThreshold
    const verified = verifiedScore(target, segment)
    if (verified === undefined || verified < threshold) {
      return {
        reason: "QUALITY_UNVERIFIED",
        detail: boundDetail(
          verified === undefined
            ? `no verified score on segment ${segment}`
            : `verified ${verified} on segment ${segment}, below ${threshold}`
        )
      }
    }
  }
  return undefined
}

/**
 * Lowest verified score on the segment a `HIGH`-risk call accepts when its workflow sets no
 * `qualityThreshold`.
 *
 * @since 0.4.0
 * @category Constants
 */
export const defaultQualityThreshold = 0.8

/** The target's verified score on `segment` (own keys only), or `undefined`. */
const verifiedScore = (target: ModelTarget, segment: string): number | undefined => {
  const quality = target.quality
  return quality !== undefined && Object.hasOwn(quality, segment) ? quality[segment]?.score : undefined
}

/** Why the request's size excludes `target` (context window, cost cap), or `undefined`. */
const sizeReason = (
  compiled: CompiledWorkflow,
  command: ModelCommand,
  target: ModelTarget,
  inputTokens: number | undefined
): { readonly reason: ExclusionReason; readonly detail: string } | undefined => {
  // Not counted: nothing is limited and the input certainly fits every window.
  if (inputTokens === undefined) return undefined
  const caps = target.capabilities
  const tokens = Math.ceil(inputTokens * target.tokenizerSafetyFactor)
  if (tokens + 1 > caps.contextWindow) {
    return { reason: "CONTEXT_TOO_SMALL", detail: `~${tokens} input tokens, window ${caps.contextWindow}` }
  }
  const maxCost = Math.min(command.maxCost ?? Infinity, compiled.workflow.maxCost ?? Infinity)
  if (maxCost === Infinity) return undefined
  const minimumCost =
    (tokens * target.pricing.inputPerMillion + minimumUsefulOutputTokens * target.pricing.outputPerMillion) / 1_000_000
  if (minimumCost > maxCost) {
    return {
      reason: "BUDGET_DOES_NOT_FIT",
      detail: `input and ${minimumUsefulOutputTokens} output tokens cost ${minimumCost.toPrecision(3)}, maxCost ${maxCost}`
    }
  }
  return undefined
}

/**
 * What the router needs from route health: whether a target's breaker keeps it out now, and (for
 * scored selection) the route's health record.
 *
 * @since 0.2.0
 * @category Models
 */
export interface BreakerView {
  readonly isOpen: (target: ModelTarget) => Effect.Effect<boolean, StoreError>
  /** The route's health record (`Health.Service.snapshot`); omitted: every route counts as healthy. */
  readonly snapshot?: (route: string) => Effect.Effect<Option.Option<RouteHealth>, StoreError>
  /**
   * Free share (0..1) of a target's concurrency cap, `undefined` for an uncapped target (the
   * engine reads `Concurrency`); omitted: no target is capped.
   */
  readonly concurrencyHeadroom?: ((target: TargetRef) => number | undefined) | undefined
  /**
   * The seam for quality measured in production (e.g. a demotion after a regression): a value
   * added to a target's quality term on a segment ({@link qualityFit}); omitted: none.
   */
  readonly qualityAdjustment?: ((target: ModelTarget, segment: string | undefined) => number | undefined) | undefined
}

/** A health snapshot that is already settled (e.g. `Health.layerNoop`'s none): `null` for none, `undefined` when it must run. */
const settledHealth = (
  check: Effect.Effect<Option.Option<RouteHealth>, StoreError>
): RouteHealth | null | undefined => {
  if (!Exit.isExit(check) || !Exit.isSuccess(check) || !Option.isOption(check.value)) return undefined
  const found = check.value
  if (Option.isNone(found)) return null
  return found.value instanceof RouteHealth ? found.value : undefined
}

/**
 * Most session keys whose last target the router remembers per gateway (least recently used
 * forgotten first).
 *
 * @since 0.4.0
 * @category Constants
 */
export const maxSessionKeys = 10_000

/** Per gateway (its workflows map): workflow and session key → the target selected last time, in LRU order. */
const sessions = new WeakMap<ReadonlyMap<string, CompiledWorkflow>, Map<string, TargetRef>>()

const sessionId = (workflow: string, sessionKey: string) => `${workflow}\u0000${sessionKey}`

const stickyTarget = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  workflow: string,
  sessionKey: string | undefined
): TargetRef | undefined =>
  sessionKey === undefined ? undefined : sessions.get(workflows)?.get(sessionId(workflow, sessionKey))

/**
 * Session affinity: remembers that `target` served the last call of `sessionKey` on `workflow`
 * (the engine calls it with the target whose answer was used, after any fallback or escalation),
 * so the session's next scored decision gives it the affinity term while it is healthy. At most
 * {@link maxSessionKeys} keys per gateway, least recently used forgotten first.
 *
 * @since 0.6.0
 * @category Routing
 */
export const rememberServed = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  workflow: string,
  sessionKey: string,
  target: TargetRef
): void => {
  let lru = sessions.get(workflows)
  if (lru === undefined) {
    lru = new Map()
    sessions.set(workflows, lru)
  }
  const id = sessionId(workflow, sessionKey)
  lru.delete(id)
  lru.set(id, target)
  if (lru.size > maxSessionKeys) {
    const oldest = lru.keys().next()
    if (oldest.done !== true) lru.delete(oldest.value)
  }
}

/** Per gateway (its workflows map): each scored workflow's last best-scoring target. */
const leaderMaps = new WeakMap<ReadonlyMap<string, CompiledWorkflow>, Map<string, TargetRef>>()

const leadersOf = (workflows: ReadonlyMap<string, CompiledWorkflow>): Map<string, TargetRef> => {
  let leaders = leaderMaps.get(workflows)
  if (leaders === undefined) {
    leaders = new Map()
    leaderMaps.set(workflows, leaders)
  }
  return leaders
}

/** A record for a target the health service knows nothing about (to carry its concurrency headroom). */
const emptyHealth = (route: TargetRef) => ({
  route,
  at: 0,
  breaker: "closed" as const,
  consecutiveFailures: 0,
  samples: 0
})

/** Why a route's record says `UNAVAILABLE`. */
const unhealthyDetail = (record: RouteHealth): string => {
  if (record.breaker === "open") return "breaker open"
  const reset = record.rateLimit?.resetAt
  return reset === undefined ? "rate limit exhausted" : `rate limit exhausted for ${Math.max(0, reset - record.at)} ms`
}

const storeFailure = (e: StoreError): Failure => ({
  _tag: "StoreError",
  store: e.store,
  operation: e.operation,
  detail: e.detail
})

/**
 * Routes `command` under the compiled `workflows`: the route, or why there is none as a
 * {@link Failure} (the caller turns it into an error with its call id). Decides when called (wrap
 * it in `Effect.suspend` to decide when run); synchronous unless a breaker check has to wait for
 * its store.
 *
 * @since 0.2.0
 * @category Routing
 */
export const decide = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  breakers: BreakerView,
  command: ModelCommand,
  mode: "generate" | "stream",
  budgetLimited: boolean,
  /** The call's id: the stickiness key of a `call` (or keyless `session`) canary. */
  callId?: string
): Effect.Effect<Route, Failure> => {
  const compiled = variantOf(workflows, workflows.get(command.workflow), command, callId)
  if (compiled === undefined) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "unknown_workflow",
      detail: `no workflow "${command.workflow}"`
    })
  }
  const w = compiled.workflow
  if (command.regions?.some((r) => !w.regions.includes(r))) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "invalid_command",
      detail: boundDetail(
        `regions [${(command.regions ?? []).join(", ")}] are not within the workflow's [${w.regions.join(", ")}]`
      )
    })
  }
  const resolved = ModelOptions.resolve(w, command)
  if (Either.isLeft(resolved)) {
    return Effect.fail({ _tag: "InvalidRequest", reason: "invalid_command", detail: boundDetail(resolved.left) })
  }
  const options = resolved.right
  const fields = options.providerOptions === undefined ? undefined : providerOptionsProblem(compiled, command)
  if (fields !== undefined) {
    return Effect.fail({ _tag: "InvalidRequest", reason: "invalid_command", detail: boundDetail(fields) })
  }
  const limit = Math.min(command.maxInputTokens ?? Infinity, w.maxInputTokens ?? Infinity)
  const maxCost = Math.min(command.maxCost ?? Infinity, w.maxCost ?? Infinity)
  const input = { messages: command.messages, tools: command.tools, outputJsonSchema: compiled.jsonSchema }
  let characters: number
  let needsCount: boolean
  try {
    characters = TokenEstimator.inputCharacters(input)
    // Count only when a limit needs it, or when the input may not fit a context window.
    needsCount = budgetLimited || limit < Infinity || maxCost < Infinity || !fitsEveryWindow(compiled, input)
  } catch {
    // e.g. tool parameters nested too deep to serialize: refuse the request, never crash
    return Effect.fail({ _tag: "InvalidRequest", reason: "invalid_command", detail: "the request cannot be measured" })
  }
  const maxCharacters = w.maxInputCharacters ?? defaultMaxInputCharacters
  if (characters > maxCharacters) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "input_too_large",
      detail: `input of ${characters} characters exceeds the limit of ${maxCharacters} characters`
    })
  }
  if (!needsCount) return withTokens(workflows, compiled, breakers, command, mode, undefined, limit, options, callId)
  // Small inputs are counted at once; large ones in slices that give the event loop turns.
  if (characters <= TokenEstimator.sliceCharacters) {
    return withTokens(
      workflows,
      compiled,
      breakers,
      command,
      mode,
      TokenEstimator.estimateInput(input),
      limit,
      options,
      callId
    )
  }
  return Effect.flatMap(TokenEstimator.estimateInputYielding(input), (tokens) =>
    withTokens(workflows, compiled, breakers, command, mode, tokens, limit, options, callId)
  )
}

/**
 * The first problem of the command's provider options against the adapters' allowlists (a
 * provider without an adapter in the gateway has none), or `undefined`.
 */
const providerOptionsProblem = (compiled: CompiledWorkflow, command: ModelCommand): string | undefined => {
  const given = command.providerOptions
  if (given === undefined) return undefined
  for (const [provider, fields] of Object.entries(given)) {
    const problems = ModelOptions.providerOptionsProblems(
      provider,
      fields,
      compiled.providerOptionAllowlists.get(provider)
    )
    if (problems.length > 0) return `providerOptions: ${problems.join("; ")}`
  }
  return undefined
}

/**
 * Input-size limit of one call in characters, when its workflow sets none: about 1 M characters
 * (~250 K tokens of prose). Larger inputs are `InvalidRequest` (`input_too_large`) before anything
 * is counted, reserved or sent.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultMaxInputCharacters = 1_048_576

/**
 * Default weights of the score's terms (the routing spec's): quality 0.45, latency 0.20, cost 0.15,
 * health 0.10, affinity 0.10.
 *
 * @since 0.4.0
 * @category Constants
 */
export const defaultWeights = { quality: 0.45, latency: 0.2, cost: 0.15, health: 0.1, affinity: 0.1 } as const

/**
 * A call whose timeout is shorter than this (when its workflow sets no `scoring.shortDeadline`)
 * puts fast-latency targets first under scored selection.
 *
 * @since 0.4.0
 * @category Constants
 */
export const defaultShortDeadline: Duration.Duration = Duration.seconds(2)

/**
 * Subtracted from a deprecated target's score when the workflow sets no `scoring.deprecatedPenalty`.
 *
 * @since 0.4.0
 * @category Constants
 */
export const defaultDeprecatedPenalty = 0.2

/** Quality fit of a class when no verified score applies; a target without one scores `unknownFit`. */
const classQuality = { low: 0.5, standard: 0.75, high: 0.9 } as const
const latencyFit = { fast: 1, medium: 0.6, slow: 0.3 } as const
const unknownFit = 0.5
/** Quality fit lost per class of distance from the preferred class. */
const preferenceStep = 0.1

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000

/**
 * A scored workflow keeps its last best-scoring target first while a challenger's total is less
 * than this much higher (hysteresis against noisy health and latency), when the workflow sets no
 * `scoring.switchMargin`.
 *
 * @since 0.6.0
 * @category Constants
 */
export const defaultSwitchMargin = 0.03

/**
 * The quality term of `target` before the preferred-class step: its verified score on `segment`,
 * else its class, else 0.5, plus `adjustment` (the seam for quality signals measured in production,
 * e.g. a demotion: {@link BreakerView.qualityAdjustment}), clamped to 0..1.
 *
 * @since 0.6.0
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

/** The observed p95 the latency term reads: smoothed TTFT for streams, smoothed latency otherwise. */
const observedP95 = (record: RouteHealth | undefined, stream: boolean): number | undefined => {
  if (record === undefined) return undefined
  return stream
    ? (record.ttftP95SmoothedMs ?? record.ttftP95Ms ?? record.latencyP95SmoothedMs ?? record.latencyP95Ms)
    : (record.latencyP95SmoothedMs ?? record.latencyP95Ms)
}

/**
 * What {@link score} returns: the order, each target's score, why the first leads, whether a short
 * deadline put the fast latency class first, and the command's escalation if it asked for one.
 *
 * @since 0.6.0
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
 * - `quality`: {@link qualityFit} (the verified score on the call's segment, else the class: `low`
 *   0.5, `standard` 0.75, `high` 0.9, else 0.5, plus any quality adjustment); minus 0.1 per class of
 *   distance from the preferred class (if both are known), floored at 0.
 * - `latency`: with an observed p95 on the route (smoothed; TTFT for streams), `1 − p95 / time
 *   left` (the call's timeout), 0 when the p95 does not fit; else the latency class: `fast` 1,
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
 * workflow's weights over {@link defaultWeights}. Order: targets whose observed p95 does not fit
 * the time left come last; then total descending, ties in route order. When the call's timeout is
 * shorter than the workflow's short deadline (default 2 s), fast-latency targets that fit come
 * first (`fastTier`). Without a session, the workflow's last best-scoring target (`incumbent`)
 * stays first while the leader's total is at most the switch margin (default 0.03) higher. The
 * reason is `STICKY` when the sticky target leads only thanks to its affinity. With the command's
 * `escalate`, the targets stronger than the leader (`Router.isStronger` under the workflow's
 * `escalation` policy) move first, in that order (`ESCALATION`); without any the order stays and
 * `escalation` has no `to`.
 *
 * @since 0.4.0
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

/** Terms per target in one typed array: quality, latency, cost (the others are rarely not their default). */
const termCount = 3

/**
 * Scores of a ranking, kept as numbers and made into {@link TargetScore} objects only when read
 * (evidence, the decision value): a decision over many targets pays for the objects once, if ever.
 */
class LazyScores {
  private built: ReadonlyArray<TargetScore> | undefined
  constructor(
    private readonly targets: ReadonlyArray<ModelTarget>,
    /** quality, latency, cost per target */
    private readonly terms: Float64Array,
    /** totals × 10⁴ */
    private readonly totals: Int32Array,
    /** health terms where a record exists (else 1) */
    private readonly healths: ReadonlyArray<number | undefined> | undefined,
    private readonly statuses: ReadonlyArray<HealthStatus | undefined> | undefined,
    private readonly observed: ReadonlyArray<number | undefined> | undefined,
    private readonly stickyAt: number,
    private readonly deprecatedPenalty: number,
    private readonly order: ReadonlyArray<number> | undefined
  ) {}
  get value(): ReadonlyArray<TargetScore> {
    if (this.built === undefined) {
      const n = this.targets.length
      const out = new Array<TargetScore>(n)
      const x = this.terms
      for (let k = 0; k < n; k++) {
        const i = this.order === undefined ? k : this.order[k]!
        const o = i * termCount
        const t = this.targets[i]!
        const base = {
          target: t.ref,
          quality: x[o]!,
          latency: x[o + 1]!,
          cost: x[o + 2]!,
          health: this.healths?.[i] ?? 1
        }
        const status = this.statuses?.[i]
        const observedP95Ms = this.observed?.[i]
        const tail = {
          affinity: i === this.stickyAt ? 1 : 0,
          penalty: t.status === "deprecated" ? this.deprecatedPenalty : 0,
          total: this.totals[i]! / 10_000
        }
        out[k] =
          status === undefined
            ? { ...base, ...tail }
            : observedP95Ms === undefined
              ? { ...base, status, ...tail }
              : { ...base, status, observedP95Ms, ...tail }
      }
      this.built = out
    }
    return this.built
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

/** The latency term of a target's latency class (no observation). */
const latencyClassFit = (target: ModelTarget): number => {
  const tier = target.classes?.latency
  return tier === "fast"
    ? latencyFit.fast
    : tier === "medium"
      ? latencyFit.medium
      : tier === "slow"
        ? latencyFit.slow
        : unknownFit
}

/** Per workflow: the class terms of its route targets under its own segment and preferred class. */
const classTerms = new WeakMap<
  CompiledWorkflow,
  { readonly quality: Float64Array; readonly latency: Float64Array; readonly fast: Uint8Array }
>()
const classTermsOf = (compiled: CompiledWorkflow) => {
  let terms = classTerms.get(compiled)
  if (terms === undefined) {
    const w = compiled.workflow
    const route = compiled.targets
    const preferredRank = w.preferredTier === undefined ? -1 : qualityRank(w.preferredTier)
    const quality = new Float64Array(route.length)
    const latency = new Float64Array(route.length)
    const fast = new Uint8Array(route.length)
    for (let i = 0; i < route.length; i++) {
      const t = route[i]!
      quality[i] = qualityTerm(t, w.segment, preferredRank, undefined)
      latency[i] = latencyClassFit(t)
      fast[i] = t.classes?.latency === "fast" ? 1 : 0
    }
    terms = { quality, latency, fast }
    classTerms.set(compiled, terms)
  }
  return terms
}

/** {@link score} for the router: the scores stay numbers until read. */
const rank = (
  compiled: CompiledWorkflow,
  command: ModelCommand,
  targets: ReadonlyArray<ModelTarget>,
  inputTokens: number | undefined,
  context: ScoreContext | undefined
): {
  readonly targets: ReadonlyArray<ModelTarget>
  readonly scores: LazyScores
  readonly reason: SelectionReason
  readonly fastTier: boolean
  readonly escalation: Escalation | undefined
} => {
  const w = compiled.workflow
  const weights =
    w.scoring?.weights === undefined ? defaultWeights : { ...defaultWeights, ...definedWeights(w.scoring.weights) }
  const wq = weights.quality
  const wl = weights.latency
  const wc = weights.cost
  const wh = weights.health
  const wa = weights.affinity
  const penalty = w.scoring?.deprecatedPenalty ?? defaultDeprecatedPenalty
  const segment = command.segment ?? w.segment
  const preferred = command.preferredTier ?? w.preferredTier
  const preferredRank = preferred === undefined ? -1 : qualityRank(preferred)
  const outputCap = Math.min(command.maxOutputTokens ?? Infinity, w.maxOutputTokens ?? Infinity)
  const timeLeft = context?.timeLeftMs ?? Duration.toMillis(command.timeout ?? w.timeout)
  const stream = context?.mode === "stream"
  const adjust = context?.qualityAdjustment
  // Hot path (once per eligible target per call): numbers in one typed array, no object per
  // target, no sort when the totals are already in order.
  const n = targets.length
  const x = new Float64Array(n * termCount)
  /** Totals × 10⁴ (exact integers): the sort keys. */
  const totals = new Int32Array(n)
  let cheapest = Infinity
  for (let i = 0; i < n; i++) {
    const p = targets[i]!.pricing
    let price: number
    if (inputTokens === undefined) price = p.inputPerMillion + p.outputPerMillion
    else {
      const t = targets[i]!
      const input = Math.ceil(inputTokens * t.tokenizerSafetyFactor)
      const output = Math.min(outputCap, t.capabilities.maxOutputTokens)
      price = (input * p.inputPerMillion + output * p.outputPerMillion) / 1_000_000
    }
    // the cost slot holds the price until the cheapest is known
    x[i * termCount + 2] = price
    if (price < cheapest) cheapest = price
  }
  const deprecatedPenalty = round4(penalty)
  const healths = context?.health
  const sticky = context?.sticky
  let stickyAt = -1
  let statuses: Array<HealthStatus | undefined> | undefined
  let healthAt: Array<number | undefined> | undefined
  let observedAt: Array<number | undefined> | undefined
  let sorted = true
  let previous = Infinity
  let anyFast = false
  /** Targets whose observed p95 does not fit the time left (allocated only when one does not). */
  let slow: Array<boolean> | undefined
  // The workflow's own segment and preferred class, no quality adjustment: the class terms of its
  // route targets are computed once per workflow (`classTermsOf`).
  const cached =
    adjust === undefined && segment === w.segment && preferred === w.preferredTier ? classTermsOf(compiled) : undefined
  const routeTargets = compiled.targets
  for (let i = 0; i < n; i++) {
    const t = targets[i]!
    const o = i * termCount
    let quality: number
    let classLatency: number
    let fastClass: boolean
    if (cached !== undefined && routeTargets[i] === t) {
      quality = cached.quality[i]!
      classLatency = cached.latency[i]!
      fastClass = cached.fast[i] === 1
    } else {
      quality = qualityTerm(t, segment, preferredRank, adjust === undefined ? undefined : adjust(t, segment))
      classLatency = latencyClassFit(t)
      fastClass = t.classes?.latency === "fast"
    }
    const record = healths?.[i]
    const observed = record === undefined ? undefined : observedP95(record, stream)
    let latency: number
    if (observed === undefined) {
      latency = classLatency
    } else if (observed >= timeLeft) {
      latency = 0
      slow ??= new Array<boolean>(n).fill(false)
      slow[i] = true
    } else {
      latency = round4(1 - observed / timeLeft)
    }
    if (fastClass && slow?.[i] !== true) anyFast = true
    const price = x[o + 2]!
    const cost = price <= 0 ? 1 : round4(cheapest / price)
    const minus = t.status === "deprecated" ? deprecatedPenalty : 0
    let health = 1
    let status: HealthStatus | undefined
    if (record !== undefined) {
      health = healthScore(record)
      status = statusOf(record)
      healthAt ??= new Array<number | undefined>(n)
      healthAt[i] = health
      statuses ??= new Array<HealthStatus | undefined>(n)
      statuses[i] = status
      if (observed !== undefined) {
        observedAt ??= new Array<number | undefined>(n)
        observedAt[i] = observed
      }
    }
    const affinity = sticky !== undefined && t.ref === sticky && (status === undefined || status === "HEALTHY") ? 1 : 0
    if (affinity === 1) stickyAt = i
    const totalInt = Math.round(
      (wq * quality + wl * latency + wc * cost + wh * health + wa * affinity - minus) * 10_000
    )
    const total = totalInt / 10_000
    totals[i] = totalInt
    x[o] = quality
    x[o + 1] = latency
    x[o + 2] = cost
    if (total > previous) sorted = false
    previous = total
  }
  const totalOf = (i: number) => totals[i]! / 10_000
  const fits = (i: number) => (slow?.[i] === true ? 0 : 1)
  const isFast = (i: number) => (targets[i]!.classes?.latency === "fast" && slow?.[i] !== true ? 1 : 0)
  let fastFirst = false
  if (n > 1 && anyFast) {
    const shortDeadline = Duration.toMillis(w.scoring?.shortDeadline ?? defaultShortDeadline)
    fastFirst = Duration.toMillis(command.timeout ?? w.timeout) < shortDeadline
  }
  /** The order's group of a target: those that fit the time left first, then (short deadline) fast ones. */
  const group = (i: number) => 2 * fits(i) + (fastFirst ? isFast(i) : 0)
  let order: Array<number> | undefined
  // Group, then total descending, ties in route order (the index makes the tie-break explicit).
  if (!sorted || slow !== undefined || fastFirst) {
    order = rankOrder(n, totals, slow === undefined && !fastFirst ? undefined : group)
  }
  // Hysteresis: the last best-scoring target stays first unless clearly beaten.
  const incumbent = context?.incumbent
  if (n > 1 && incumbent !== undefined && sticky === undefined) {
    const lead = order === undefined ? 0 : order[0]!
    if (targets[lead]!.ref !== incumbent) {
      let kept = -1
      for (let i = 0; i < n; i++) {
        if (targets[i]!.ref === incumbent) {
          kept = i
          break
        }
      }
      const margin = w.scoring?.switchMargin ?? defaultSwitchMargin
      if (kept >= 0 && group(kept) === group(lead) && totalOf(kept) + margin >= totalOf(lead)) {
        const current = order ?? Array.from({ length: n }, (_, i) => i)
        current.splice(current.indexOf(kept), 1)
        current.unshift(kept)
        order = current
      }
    }
  }
  let reason: SelectionReason = n === 1 ? "ONLY_ELIGIBLE" : "BEST_SCORE"
  if (n > 1 && stickyAt >= 0 && (order === undefined ? 0 : order[0]) === stickyAt && wa > 0) {
    // Would the sticky target lead without its affinity (same order rules)? If not, affinity decided.
    const without = (i: number) => totalOf(i) - (i === stickyAt ? wa : 0)
    let lead = 0
    for (let i = 1; i < n; i++) {
      const byGroup = group(i) - group(lead)
      if (byGroup > 0 || (byGroup === 0 && round4(without(i)) > round4(without(lead)))) lead = i
    }
    if (lead !== stickyAt) reason = "STICKY"
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
  const scores = new LazyScores(targets, x, totals, healthAt, statuses, observedAt, stickyAt, deprecatedPenalty, order)
  if (order === undefined) return { targets, scores, reason, fastTier: fastFirst, escalation }
  const ranked = new Array<ModelTarget>(n)
  for (let k = 0; k < n; k++) ranked[k] = targets[order[k]!]!
  return { targets: ranked, scores, reason, fastTier: fastFirst, escalation }
}

/** Bits of a sort digit (two digits cover a 22-bit key). */
const digitBits = 11
const digitMask = (1 << digitBits) - 1
/** Keys spanning fewer values than this are sorted in one counting pass. */
const countingRange = 8192

/**
 * Indices `0..n-1` by group, then total, both descending, ties by index. Totals have 4 decimals
 * and lie within ±50 (five terms of weight ≤ 1, a penalty ≤ 1), so `group · 2^20 + total · 10⁴ +
 * 2^19` is a 22-bit integer key: a stable two-pass radix sort of the keys (O(n), no comparator
 * call per pair) gives the order.
 */
const rankOrder = (n: number, totals: Int32Array, group: ((i: number) => number) | undefined): Array<number> => {
  const top = (4 << 20) - 1
  const keys = new Int32Array(n)
  let low = top
  let high = 0
  for (let i = 0; i < n; i++) {
    // descending: the largest key sorts first
    const key = top - ((group === undefined ? 2 : group(i)) * 1_048_576 + totals[i]! + 524_288)
    keys[i] = key
    if (key < low) low = key
    if (key > high) high = key
  }
  const span = high - low
  if (n > 32 && span < countingRange) {
    // Keys close together (the usual case): one counting pass over their range.
    const counts = new Int32Array(span + 2)
    for (let i = 0; i < n; i++) counts[keys[i]! - low + 1]!++
    for (let d = 0; d <= span; d++) counts[d + 1]! += counts[d]!
    const out = new Array<number>(n)
    for (let i = 0; i < n; i++) out[counts[keys[i]! - low]!++] = i
    return out
  }
  let from = new Int32Array(n)
  let to = new Int32Array(n)
  for (let i = 0; i < n; i++) from[i] = i
  if (n <= 32) {
    // Few targets: a stable insertion sort beats the radix passes.
    for (let k = 1; k < n; k++) {
      const i = from[k]!
      let j = k - 1
      while (j >= 0 && keys[from[j]!]! > keys[i]!) {
        from[j + 1] = from[j]!
        j--
      }
      from[j + 1] = i
    }
    return copyOut(from, n)
  }
  const counts = new Int32Array(digitMask + 2)
  for (let pass = 0; pass < 2; pass++) {
    const shift = pass * digitBits
    counts.fill(0)
    for (let i = 0; i < n; i++) counts[((keys[i]! >> shift) & digitMask) + 1]!++
    for (let d = 0; d <= digitMask; d++) counts[d + 1]! += counts[d]!
    for (let k = 0; k < n; k++) {
      const i = from[k]!
      to[counts[(keys[i]! >> shift) & digitMask]!++] = i
    }
    const swap = from
    from = to
    to = swap
  }
  return copyOut(from, n)
}

/** The first `n` values of `from` as a plain array (`Array.from` walks an iterator). */
const copyOut = (from: Int32Array, n: number): Array<number> => {
  const out = new Array<number>(n)
  for (let k = 0; k < n; k++) out[k] = from[k]!
  return out
}

/**
 * What scored selection reads besides the command: route health, session affinity, the
 * workflow's last best-scoring target, the time left and quality adjustments.
 *
 * @since 0.4.0
 * @category Models
 */
export interface ScoreContext {
  /** Health record per target (aligned with the scored targets); `undefined` where none is kept. */
  readonly health?: ReadonlyArray<RouteHealth | undefined> | undefined
  /** The target that served the call's session last time; it gets the affinity term while healthy. */
  readonly sticky?: TargetRef | undefined
  /** The workflow's last best-scoring target (hysteresis: {@link defaultSwitchMargin}). */
  readonly incumbent?: TargetRef | undefined
  /** Time the call has left, ms; omitted: the command's timeout, else the workflow's. */
  readonly timeLeftMs?: number | undefined
  /** `stream`: the latency term reads the route's TTFT. */
  readonly mode?: "generate" | "stream" | undefined
  /** Added to a target's quality term (see {@link qualityFit}). */
  readonly qualityAdjustment?: ((target: ModelTarget, segment: string | undefined) => number | undefined) | undefined
}

/**
 * Scores below this `health` term are `DEGRADED` (at or above, `HEALTHY`): `Health.degradedBelow`.
 *
 * @since 0.4.0
 * @category Constants
 */
export const degradedBelow = HealthThresholds.degradedBelow

/**
 * Headroom below which the `health` term is scored down: `Health.lowHeadroom`.
 *
 * @since 0.4.0
 * @category Constants
 */
export const lowHeadroom = HealthThresholds.lowHeadroom

/**
 * The `health` term of a route: `Health.healthScore` (success rate, half-open breaker, rate-limit
 * and concurrency headroom).
 *
 * @since 0.4.0
 * @category Routing
 */
export const healthOf = (record: RouteHealth): number => healthScore(record)

/**
 * Whether `candidate` is an escalation target from `from` under `policy`: one of the policy's
 * explicit `targets` (other than `from`) when it names some; else of a stronger quality class than
 * `from` (an undeclared class is the weakest), and at least the policy's `tier` when it sets one.
 *
 * @since 0.6.0
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
const escalationOrder = <A>(
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
const escalationOf = (signal: EscalationSignal, from: ModelTarget, to: ModelTarget | undefined): Escalation => {
  const out: { -readonly [K in keyof Escalation]: Escalation[K] } = { signal, from: from.ref }
  if (from.qualityTier !== undefined) out.fromTier = from.qualityTier
  if (to !== undefined) {
    out.to = to.ref
    if (to.qualityTier !== undefined) out.toTier = to.qualityTier
  }
  return out
}

/**
 * Escalation inside a call (an answer failed validation, or the workflow's check fired on it): the
 * index of the best eligible target after `from` in the route's order that is stronger under the
 * workflow's escalation policy, and the escalation's evidence (`to` absent, index −1 when there
 * is none). The route's targets passed every hard filter and the reservation covers each of them,
 * so the escalation stays within the call's constraints, deadline and reservation.
 *
 * @since 0.6.0
 * @category Routing
 */
export const escalateFrom = (
  route: Route,
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

/**
 * Routing metrics. `targetSwitches` (`modelgate.routing.target_switches`, tagged `workflow`)
 * counts the times a scored workflow's best-scoring target changed from one decision to the next
 * (oscillation shows here). `escalations` (`modelgate.escalations`, tagged `workflow`,
 * `from_tier`, `to_tier`; a class that is not declared is `none`) counts escalations that found a
 * stronger target; the name is the routing spec's, outside the `modelgate.<area>.<name>` scheme.
 *
 * @since 0.6.0
 * @category Metrics
 */
export const metrics = {
  targetSwitches: Metric.counter("modelgate.routing.target_switches", {
    description: "Changes of a scored workflow's best-scoring target between decisions",
    incremental: true
  }),
  escalations: Metric.counter("modelgate.escalations", {
    description: "Escalations to a stronger target, by workflow and quality classes",
    incremental: true
  })
} as const

/**
 * Counts `escalation` in {@link metrics}`.escalations` when it found a stronger target.
 *
 * @since 0.6.0
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

/** Per workflow: whether a route target or its canary candidate is deprecated (computed once). */
const deprecatedIn = new WeakMap<CompiledWorkflow, boolean>()
const hasDeprecated = (compiled: CompiledWorkflow): boolean => {
  let found = deprecatedIn.get(compiled)
  if (found === undefined) {
    found = compiled.targets.some((t) => t.status === "deprecated") || compiled.canaryTarget?.status === "deprecated"
    deprecatedIn.set(compiled, found)
  }
  return found
}

/** Deprecated targets a log warning was written for (once per target value). */
const warnedDeprecated = new WeakSet<ModelTarget>()

/** What of the request a decision's `required` and `routeId` read. */
interface Facts {
  /** Absent for a route rebuilt from another `Route` implementation: its decision has no `required`. */
  readonly command: ModelCommand | undefined
  readonly mode: "generate" | "stream"
  /** A short deadline put the fast latency class first. */
  readonly fastTier: boolean
}

/** The requirements a decision applied (the decision's `required`). */
const requiredOf = (
  compiled: CompiledWorkflow,
  facts: Facts,
  inputTokens: number | undefined
): RouteRequirements | undefined => {
  const w = compiled.workflow
  const command = facts.command
  if (command === undefined) return undefined
  const view = requestView(compiled, command, facts.mode)
  const out: { -readonly [K in keyof RouteRequirements]: RouteRequirements[K] } = {
    tools: w.requires.tools || view.tools,
    vision: w.requires.vision || view.images,
    streaming: w.requires.streaming || view.streaming,
    structuredOutput: compiled.schema !== undefined,
    regions: view.regions,
    dataClass: view.dataClass,
    risk: view.risk ?? "LOW"
  }
  if (view.minQualityTier !== undefined) out.minQualityTier = view.minQualityTier
  const preferred = command.preferredTier ?? w.preferredTier
  if (preferred !== undefined) out.preferredTier = preferred
  if (facts.fastTier) out.latencyTier = "fast"
  if (inputTokens !== undefined) out.contextTokens = Math.ceil(inputTokens)
  if (view.segment !== undefined) out.segment = view.segment
  return out
}

/** A route whose `RouteDecision` value and id are built only when someone reads them. */
class Decided implements Route {
  private refs: ReadonlyArray<TargetRef> | undefined
  private built: RouteDecision | undefined
  private id: string | undefined
  constructor(
    readonly compiled: CompiledWorkflow,
    readonly targets: ReadonlyArray<ModelTarget>,
    readonly excluded: ReadonlyArray<ExcludedTarget>,
    readonly inputTokens: number | undefined,
    readonly options: ModelOptions.ResolvedOptions,
    readonly selectionReason: SelectionReason,
    private readonly scoreSource: ReadonlyArray<TargetScore> | LazyScores | undefined,
    readonly facts: Facts,
    readonly canary?: CanaryAssignment | undefined,
    readonly escalation?: Escalation | undefined
  ) {}
  /** Eligible target refs, in order (made when first read). */
  get eligible(): ReadonlyArray<TargetRef> {
    if (this.refs === undefined) this.refs = this.targets.map((t) => t.ref)
    return this.refs
  }
  /** Scored selection: the scores of the targets that passed the hard filters, best first (made when read). */
  get scores(): ReadonlyArray<TargetScore> | undefined {
    const s = this.scoreSource
    return s instanceof LazyScores ? s.value : s
  }
  /** The same decision with some of its parts replaced. */
  with(changes: {
    readonly targets?: ReadonlyArray<ModelTarget>
    readonly excluded?: ReadonlyArray<ExcludedTarget>
    readonly selectionReason?: SelectionReason
    readonly scores?: ReadonlyArray<TargetScore> | undefined
    readonly canary?: CanaryAssignment | undefined
  }): Decided {
    return new Decided(
      this.compiled,
      changes.targets ?? this.targets,
      changes.excluded ?? this.excluded,
      this.inputTokens,
      this.options,
      changes.selectionReason ?? this.selectionReason,
      "scores" in changes ? changes.scores : this.scoreSource,
      this.facts,
      "canary" in changes ? changes.canary : this.canary,
      this.escalation
    )
  }
  get routeId(): string {
    if (this.id === undefined) {
      const w = this.compiled.workflow
      const parts: Array<string> = [w.name, w.policyVersion, this.selectionReason, this.facts.fastTier ? "fast" : ""]
      for (const ref of this.eligible) parts.push(ref)
      for (const e of this.excluded) parts.push(`${e.target}!${e.reason}`)
      const x = this.escalation
      if (x !== undefined) parts.push(`^${x.signal}>${x.to ?? ""}`)
      const c = this.canary
      if (c !== undefined) parts.push(`~${c.id}:${c.side}${c.skipped === true ? ":skipped" : ""}`)
      this.id = routeIdOf(parts)
    }
    return this.id
  }
  get decision(): RouteDecision {
    if (this.built === undefined) {
      const w = this.compiled.workflow
      this.built = new RouteDecision(
        {
          routeId: this.routeId,
          workflow: w.name,
          policyVersion: w.policyVersion,
          required: requiredOf(this.compiled, this.facts, this.inputTokens),
          eligible: this.eligible,
          excluded: this.excluded,
          estimatedInputTokens: this.inputTokens,
          selectionReason: this.selectionReason,
          scores: this.scores,
          canary: this.canary,
          selected: this.eligible[0],
          escalation: this.escalation
        },
        { disableValidation: true }
      )
    }
    return this.built
  }
}

/**
 * `route` without the targets of `drop`, which join its exclusions with their reasons (the engine
 * uses it for `BUDGET_DOES_NOT_FIT` once the tenant's remaining budget is known). Scores of dropped
 * targets are left out; when the leader is dropped the reason becomes `ONLY_ELIGIBLE` (one left),
 * else `BEST_SCORE` (scored) or `PINNED_ORDER` (ordered).
 *
 * @since 0.6.0
 * @category Routing
 */
export const withoutTargets = (
  route: Route,
  drop: ReadonlyArray<{ readonly target: ModelTarget; readonly reason: ExclusionReason; readonly detail: string }>
): Route => {
  if (drop.length === 0) return route
  const gone = new Set(drop.map((d) => d.target.ref))
  const targets = route.targets.filter((t) => !gone.has(t.ref))
  const excluded = [
    ...route.excluded,
    ...drop.map(
      (d) =>
        new ExcludedTarget({ target: d.target.ref, reason: d.reason, detail: d.detail }, { disableValidation: true })
    )
  ]
  const scores = route.scores?.filter((s) => !gone.has(s.target))
  const leaderKept = targets[0] !== undefined && targets[0].ref === route.targets[0]?.ref
  const reason: SelectionReason | undefined = leaderKept
    ? route.selectionReason
    : targets.length === 1
      ? "ONLY_ELIGIBLE"
      : route.scores !== undefined
        ? "BEST_SCORE"
        : "PINNED_ORDER"
  if (route instanceof Decided) {
    return route.with({ targets, excluded, scores, ...(reason !== undefined ? { selectionReason: reason } : {}) })
  }
  return new Decided(
    route.compiled,
    targets,
    excluded,
    route.inputTokens,
    route.options,
    reason ?? "PINNED_ORDER",
    scores,
    { command: undefined, mode: "generate", fastTier: false },
    route.canary,
    route.escalation
  )
}

/** The rest of a decision, once the input tokens are known (or known not to be needed). */
const withTokens = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  compiled: CompiledWorkflow,
  breakers: BreakerView,
  command: ModelCommand,
  mode: "generate" | "stream",
  inputTokens: number | undefined,
  limit: number,
  options: ModelOptions.ResolvedOptions,
  callId: string | undefined
): Effect.Effect<Route, Failure> => {
  const w = compiled.workflow
  if (inputTokens !== undefined && inputTokens > limit) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "input_too_large",
      detail: `~${inputTokens} input tokens exceed the limit of ${limit}`
    })
  }
  // One pass in route order: why a target is excluded, else its breaker. A settled breaker answer
  // (breakers off, or a synchronous store) is read without a fiber step; from the first one that has
  // to wait for its store, the rest of the targets are decided one by one.
  const targets = compiled.targets
  // Scored: every target passing the hard filters is scored; the fallback rule applies after ranking
  // (also after an escalation reorders an ordered route).
  const scored = w.selection === "scored"
  const escalate = command.escalate === true
  const collectAll = scored || escalate
  const eligible: Array<ModelTarget> = []
  const excluded: Array<ExcludedTarget> = []
  // Targets past every hard filter and their breaker (with or without fallback allowed).
  let passed = 0
  const place = (target: ModelTarget, open: boolean) => {
    if (!open) passed++
    if (open) {
      excluded.push(
        new ExcludedTarget(
          { target: target.ref, reason: "BREAKER_OPEN", detail: "circuit breaker open" },
          { disableValidation: true }
        )
      )
    } else if (!w.allowFallback && !collectAll && eligible.length > 0) {
      excluded.push(
        new ExcludedTarget(
          { target: target.ref, reason: "FALLBACK_NOT_ALLOWED", detail: "workflow disallows fallback" },
          { disableValidation: true }
        )
      )
    } else {
      eligible.push(target)
    }
  }
  /** Why `target` is excluded before its breaker is asked (recorded), or the breaker check to run. */
  // A plain request reads its workflow's precomputed reasons; any other is checked in full.
  const plain = options.required.length === 0 && isPlain(command, mode) ? plainReasonsOf(compiled) : undefined
  let view: RequestView | undefined
  const reasonAt = (target: ModelTarget, index: number) => {
    if (plain !== undefined) return plain[index]
    view ??= requestView(compiled, command, mode)
    return requestReason(compiled, view, target, options.required)
  }
  // Quality signals (`workflow.quality`): read only by workflows that use them.
  const quality = compiled.lifecycle?.quality === true ? lifecycles.get(workflows) : undefined
  const check = (target: ModelTarget, index: number): Effect.Effect<boolean, StoreError> | undefined => {
    const reason =
      reasonAt(target, index) ??
      sizeReason(compiled, command, target, inputTokens) ??
      (quality === undefined ? undefined : qualityReason(quality, w, command, target))
    if (reason === undefined) return breakers.isOpen(target)
    excluded.push(new ExcludedTarget({ target: target.ref, ...reason }, { disableValidation: true }))
    return undefined
  }
  /** Past `allowFallback: false`: only the first of `ranked` stays, the rest are excluded. */
  const keepFirst = (ranked: ReadonlyArray<ModelTarget>): ReadonlyArray<ModelTarget> => {
    if (w.allowFallback || ranked.length <= 1) return ranked
    for (const t of ranked.slice(1)) {
      excluded.push(
        new ExcludedTarget(
          { target: t.ref, reason: "FALLBACK_NOT_ALLOWED", detail: "workflow disallows fallback" },
          { disableValidation: true }
        )
      )
    }
    return ranked.slice(0, 1)
  }
  const done = (): Effect.Effect<Route, Failure> => {
    if (eligible.length === 0) return Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded })
    if (!scored) {
      let reason: SelectionReason = passed === 1 ? "ONLY_ELIGIBLE" : "PINNED_ORDER"
      let ordered: ReadonlyArray<ModelTarget> = eligible
      let escalated: Escalation | undefined
      if (escalate) {
        const stronger = escalationOrder(eligible, (t) => t, w.escalation)
        if (stronger !== undefined) {
          ordered = stronger
          reason = "ESCALATION"
        }
        escalated = escalationOf("command", eligible[0]!, stronger?.[0])
        ordered = keepFirst(ordered)
      }
      const facts: Facts = { command, mode, fastTier: false }
      return finish(
        new Decided(compiled, ordered, excluded, inputTokens, options, reason, undefined, facts, undefined, escalated)
      )
    }
    // Route health for the health term: read without a fiber step when settled (`Health.layerNoop`).
    const snapshot = breakers.snapshot
    // No health service (or the noop's, which keeps no record): nothing to read per target.
    if (snapshot === undefined || snapshot === noSnapshot) return ranked(undefined)
    let healths: Array<RouteHealth | undefined> | undefined
    for (let i = 0; i < eligible.length; i++) {
      const check = snapshot(eligible[i]!.ref)
      if (check === noRecord) continue
      const known = settledHealth(check)
      if (known === null) continue
      if (known !== undefined) {
        healths ??= new Array<RouteHealth | undefined>(eligible.length)
        healths[i] = known
        continue
      }
      // A store to ask: the rest one by one (a failed read counts as no record; breakers fail closed).
      const before = healths
      return Effect.flatMap(
        Effect.forEach(eligible, (t, k) =>
          k < i
            ? Effect.succeed(before?.[k])
            : Effect.map(
                Effect.orElseSucceed(k === i ? check : snapshot(t.ref), () => Option.none<RouteHealth>()),
                Option.getOrUndefined
              )
        ),
        ranked
      )
    }
    return ranked(healths)
  }
  const ranked = (health: ReadonlyArray<RouteHealth | undefined> | undefined): Effect.Effect<Route, Failure> => {
    // Concurrency headroom joins the health records of capped targets; an UNAVAILABLE route is
    // excluded (only then are new arrays made).
    let pool: ReadonlyArray<ModelTarget> = eligible
    let records = health
    const headroomOf = breakers.concurrencyHeadroom
    if (health !== undefined || headroomOf !== undefined) {
      let keptTargets: Array<ModelTarget> | undefined
      let keptRecords: Array<RouteHealth | undefined> | undefined
      for (let i = 0; i < eligible.length; i++) {
        const t = eligible[i]!
        let record = health?.[i]
        const headroom = headroomOf?.(t.ref)
        if (headroom !== undefined) {
          record = new RouteHealth(
            { ...(record ?? emptyHealth(t.ref)), concurrencyHeadroom: headroom },
            { disableValidation: true }
          )
          keptRecords ??= health === undefined ? new Array<RouteHealth | undefined>(i) : health.slice(0, i)
        }
        const unavailable = record !== undefined && statusOf(record) === "UNAVAILABLE"
        if (unavailable) {
          excluded.push(
            new ExcludedTarget(
              { target: t.ref, reason: "UNHEALTHY", detail: unhealthyDetail(record!) },
              { disableValidation: true }
            )
          )
          keptTargets ??= eligible.slice(0, i)
          keptRecords ??= health === undefined ? new Array<RouteHealth | undefined>(i) : health.slice(0, i)
          continue
        }
        keptTargets?.push(t)
        keptRecords?.push(record)
      }
      if (keptTargets !== undefined) pool = keptTargets
      if (keptRecords !== undefined) records = keptRecords
      if (pool.length === 0) return Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded })
    }
    const sessionKey = command.sessionKey
    const sticky = stickyTarget(workflows, w.name, sessionKey)
    const leaders = leadersOf(workflows)
    const incumbent = leaders.get(w.name)
    const result = rank(compiled, command, pool, inputTokens, {
      health: records,
      sticky,
      incumbent,
      mode,
      qualityAdjustment:
        quality === undefined ? breakers.qualityAdjustment : demotionOf(quality, w, breakers.qualityAdjustment)
    })
    const kept = keepFirst(result.targets)
    const route = new Decided(
      compiled,
      kept,
      excluded,
      inputTokens,
      options,
      result.reason,
      result.scores,
      { command, mode, fastTier: result.fastTier },
      undefined,
      result.escalation
    )
    // The workflow's best-scoring target, for hysteresis and the switch count (sessions and
    // escalations choose for one call and leave it alone).
    const leader = kept[0]!.ref
    if (result.reason !== "BEST_SCORE" || leader === incumbent) return finish(route)
    leaders.set(w.name, leader)
    if (incumbent === undefined) return finish(route)
    return Effect.zipRight(Metric.increment(Metric.tagged(metrics.targetSwitches, "workflow", w.name)), finish(route))
  }
  /** The workflow's canary applied to the decided route: its side, and the candidate first on its side. */
  const finish = (route: Decided): Effect.Effect<Route, Failure> => {
    const canary = w.canary
    if (canary === undefined) return warnDeprecated(route)
    if (sideOf(workflows, w.name, canary, command, callId) === "baseline") {
      return assigned(route, canary, { id: canary.id, side: "baseline" })
    }
    const candidate = compiled.canaryTarget
    // A candidate policy or prompt alone: its variant of the workflow decided the route.
    if (candidate === undefined) return assigned(route, canary, { id: canary.id, side: "candidate" })
    view ??= requestView(compiled, command, mode)
    const reason =
      requestReason(compiled, view, candidate, options.required) ??
      sizeReason(compiled, command, candidate, inputTokens)
    if (reason !== undefined) return skipped(route, canary, candidate, reason)
    const breaker = breakers.isOpen(candidate)
    const open = settled(breaker)
    const onOpen = (isOpen: boolean) =>
      isOpen
        ? skipped(route, canary, candidate, { reason: "BREAKER_OPEN", detail: "circuit breaker open" })
        : assigned(candidateFirst(route, candidate), canary, { id: canary.id, side: "candidate" })
    if (open !== undefined) return onOpen(open)
    return Effect.flatMap(Effect.mapError(breaker, storeFailure), onOpen)
  }
  /** The route past the candidate side: the candidate first, then the route (or only it without fallback). */
  const candidateFirst = (route: Decided, candidate: ModelTarget): Decided => {
    // By identity: a new model version's candidate shares its ref with the baseline version.
    const rest = route.targets.filter((t) => t !== candidate)
    const kept = [candidate]
    const out = route.excluded.filter((e) => e.target !== candidate.ref)
    if (w.allowFallback) kept.push(...rest)
    else {
      for (const t of rest) {
        out.push(
          new ExcludedTarget(
            { target: t.ref, reason: "FALLBACK_NOT_ALLOWED", detail: "workflow disallows fallback" },
            { disableValidation: true }
          )
        )
      }
    }
    return route.with({ targets: kept, excluded: out, selectionReason: "CANARY" })
  }
  /** On the candidate side, but the candidate is not eligible: the baseline route, saying so. */
  const skipped = (
    route: Decided,
    canary: CanaryPolicy,
    candidate: ModelTarget,
    reason: { readonly reason: ExclusionReason; readonly detail: string }
  ): Effect.Effect<Route, Failure> => {
    const out = route.excluded.some((e) => e.target === candidate.ref)
      ? route.excluded
      : [...route.excluded, new ExcludedTarget({ target: candidate.ref, ...reason }, { disableValidation: true })]
    return assigned(route.with({ excluded: out }), canary, { id: canary.id, side: "baseline", skipped: true })
  }
  /** The route with its canary assignment, counted in `modelgate.canary.assignments`. */
  const assigned = (
    route: Decided,
    canary: CanaryPolicy,
    assignment: CanaryAssignment
  ): Effect.Effect<Route, Failure> =>
    Effect.zipRight(
      Metric.increment(
        Metric.tagged(
          Metric.tagged(Metric.tagged(telemetryMetrics.canaryAssignments, "workflow", w.name), "canary", canary.id),
          "side",
          assignment.side
        )
      ),
      warnDeprecated(route.with({ canary: assignment }))
    )
  const warnDeprecated = (route: Decided): Effect.Effect<Route, Failure> => {
    // Most workflows have no deprecated target: no walk over the route then.
    if (!hasDeprecated(compiled)) return Effect.succeed(route)
    let deprecated: Array<ModelTarget> | undefined
    for (const t of route.targets) {
      if (t.status !== "deprecated" || warnedDeprecated.has(t)) continue
      warnedDeprecated.add(t)
      if (deprecated === undefined) deprecated = []
      deprecated.push(t)
    }
    if (deprecated === undefined) return Effect.succeed(route)
    return Effect.as(
      Effect.forEach(
        deprecated,
        (t) =>
          Effect.logWarning("modelgate: routing to a deprecated target").pipe(
            Effect.annotateLogs({ target: t.ref, workflow: w.name })
          ),
        { discard: true }
      ),
      route
    )
  }
  for (let i = 0; i < targets.length; i++) {
    const target = targets[i]!
    const breaker = check(target, i)
    if (breaker === undefined) continue
    const open = settled(breaker)
    if (open !== undefined) {
      place(target, open)
      continue
    }
    const rest = targets.slice(i + 1)
    return Effect.flatMap(
      Effect.mapError(
        Effect.flatMap(breaker, (first) => {
          place(target, first)
          return Effect.forEach(
            rest,
            (next, k) => {
              const later = check(next, i + 1 + k)
              return later === undefined ? Effect.void : Effect.map(later, (isOpen) => place(next, isOpen))
            },
            { discard: true }
          )
        }),
        storeFailure
      ),
      done
    )
  }
  return done()
}

/**
 * FNV-1a (32-bit) of `text`, with a final avalanche step so that nearby keys spread over the whole
 * range; an unsigned 32-bit integer.
 *
 * @since 0.5.0
 * @category Canary
 */
export const canaryHash = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/**
 * The side of `canary` a stickiness key lands on: `candidate` when the hash of the canary id and
 * the key, as a bucket in [0, 1), is below the share. The same key always lands on the same side.
 *
 * @since 0.5.0
 * @category Canary
 */
export const canarySide = (canary: Pick<CanaryPolicy, "id" | "share">, key: string): "candidate" | "baseline" =>
  canaryHash(`${canary.id}\u0000${key}`) / 4_294_967_296 < canary.share ? "candidate" : "baseline"

/**
 * The stickiness key of a command under `canary`: its `sessionKey` (else the call id), its tenant,
 * or the call id; `undefined` (the baseline) when there is none (a call id is unknown outside a call).
 *
 * @since 0.5.0
 * @category Canary
 */
export const canaryKey = (
  canary: Pick<CanaryPolicy, "stickiness">,
  command: ModelCommand,
  callId: string | undefined
): string | undefined =>
  canary.stickiness === "tenant"
    ? command.tenant
    : canary.stickiness === "session"
      ? (command.sessionKey ?? callId)
      : callId

/** Per configuration (its workflows map): what routing reads of the model lifecycle. */
const lifecycles = new WeakMap<ReadonlyMap<string, CompiledWorkflow>, Lifecycle.View>()

/**
 * Attaches the lifecycle view (canary controller, quality signals) the router reads for
 * `workflows`; the gateway calls it once per configuration.
 *
 * @internal
 */
export const attachLifecycle = (workflows: ReadonlyMap<string, CompiledWorkflow>, view: Lifecycle.View): void => {
  lifecycles.set(workflows, view)
}

/** The side of the workflow's canary a command lands on, with the controller's share when it has one. */
const sideOf = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  workflow: string,
  canary: CanaryPolicy,
  command: ModelCommand,
  callId: string | undefined
): "candidate" | "baseline" => {
  const key = canaryKey(canary, command, callId)
  if (key === undefined) return "baseline"
  const share = canary.rollout === undefined ? undefined : lifecycles.get(workflows)?.canaryShare(workflow, canary)
  return canarySide(share === undefined ? canary : { id: canary.id, share }, key)
}

/** A policy or prompt canary's workflow variant on the candidate side; otherwise `compiled`. */
const variantOf = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  compiled: CompiledWorkflow | undefined,
  command: ModelCommand,
  callId: string | undefined
): CompiledWorkflow | undefined => {
  const variant = compiled?.canaryVariant
  if (compiled === undefined || variant === undefined) return compiled
  const canary = compiled.workflow.canary
  if (canary === undefined) return compiled
  return sideOf(workflows, compiled.workflow.name, canary, command, callId) === "candidate" ? variant : compiled
}

/** `QUALITY_REGRESSION` when the target's quality on the workflow is past its exclusion threshold. */
const qualityReason = (
  view: Lifecycle.View,
  w: CompiledWorkflow["workflow"],
  command: ModelCommand,
  target: ModelTarget
): { readonly reason: ExclusionReason; readonly detail: string } | undefined => {
  const standing = view.quality(w, command.segment ?? w.segment, target)
  return standing?.level === "excluded"
    ? { reason: "QUALITY_REGRESSION", detail: boundDetail(standing.detail) }
    : undefined
}

/** The quality adjustment of a workflow with quality signals: a demoted target's fit scored down. */
const demotionOf =
  (
    view: Lifecycle.View,
    w: CompiledWorkflow["workflow"],
    other: ((target: ModelTarget, segment: string | undefined) => number | undefined) | undefined
  ) =>
  (target: ModelTarget, segment: string | undefined): number | undefined => {
    const standing = view.quality(w, segment, target)
    const base = other?.(target, segment)
    return standing === undefined ? base : (base ?? 0) - standing.demotion
  }

/** Whether an upper bound of the input's tokens fits the context window of every target. */
const fitsEveryWindow = (compiled: CompiledWorkflow, input: Parameters<typeof TokenEstimator.upperBound>[0]) => {
  const bound = TokenEstimator.upperBound(input)
  for (const t of compiled.targets) {
    if (Math.ceil(bound * t.tokenizerSafetyFactor) + 1 > t.capabilities.contextWindow) return false
  }
  return true
}

/**
 * @since 0.1.0
 * @category Constructors
 */
export const make = (workflows: ReadonlyMap<string, CompiledWorkflow>): Effect.Effect<Service, never, Health> =>
  Effect.map(
    Health,
    (health): Service => ({
      workflows,
      resolve: (command, mode = "generate") =>
        Effect.mapError(
          Effect.suspend(() => decide(workflows, health, command, mode, true)),
          (failure) => fromFailure(failure, {})
        )
    })
  )
