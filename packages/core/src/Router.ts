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
import type { CompiledWorkflow } from "./GatewayConfig.js"
import { Health, RouteHealth } from "./Health.js"
import type { ModelCommand } from "./ModelCommand.js"
import * as ModelOptions from "./ModelOptions.js"
import { type ModelTarget, type QualityTier, qualityRank, type TargetRef } from "./ModelTarget.js"
import { boundDetail, ExcludedTarget, RouteDecision } from "./RouteDecision.js"
import type { CanaryAssignment, ExclusionReason, HealthStatus, SelectionReason, TargetScore } from "./RouteDecision.js"
import { metrics } from "./Telemetry.js"
import type { CanaryPolicy, Risk, ScoreWeights } from "./Workflow.js"
import * as TokenEstimator from "./TokenEstimator.js"

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
  Exit.isExit(check) && Exit.isSuccess(check) && typeof check.value === "boolean" ? check.value : undefined

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

const rememberTarget = (
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
  const compiled = workflows.get(command.workflow)
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
 * Scored selection: the order of `targets` (all eligible under the hard filters, in route order)
 * with each one's score and the reason the first leads. Pure and deterministic.
 *
 * Per target, each term in 0..1 (rounded to 4 decimals):
 * - `quality`: the verified score on the call's segment, else the class (`low` 0.5, `standard`
 *   0.75, `high` 0.9), else 0.5; minus 0.1 per class of distance from the preferred class (if both
 *   are known), floored at 0.
 * - `latency`: `fast` 1, `medium` 0.6, `slow` 0.3, undeclared 0.5.
 * - `cost`: the cheapest candidate's price over this one's (1 for the cheapest). The price is the
 *   estimated worst-case cost of the call at the target when the input was counted (input tokens ×
 *   safety factor and the output-token cap), else input plus output price per million.
 * - `health`: 1 without a health record (an open breaker already excluded the target), else
 *   {@link healthOf} of the record; the score then carries `status` (`DEGRADED` below
 *   {@link degradedBelow}, else `HEALTHY`).
 * - `affinity`: 1 for `context.sticky` (the session's last target), else 0.
 * - `penalty`: the workflow's deprecated penalty (default 0.2) for a deprecated target, else 0.
 *
 * `total = wq·quality + wl·latency + wc·cost + wh·health + wa·affinity − penalty` with the
 * workflow's weights over {@link defaultWeights}. Order: total descending, ties in route order;
 * when the call's timeout is shorter than the workflow's short deadline (default 2 s), fast-latency
 * targets come first (in score order), the reason then `FAST_TIER` if that changed the leader; the
 * reason is `STICKY` when the sticky target leads only thanks to its affinity. With the command's
 * `escalate`, the targets of a stronger quality class than the leader's (an undeclared class is the
 * weakest) move first, in that order (`ESCALATED`); without any, the order stays
 * (`ESCALATION_UNAVAILABLE`).
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
): {
  readonly targets: ReadonlyArray<ModelTarget>
  readonly scores: ReadonlyArray<TargetScore>
  readonly reason: SelectionReason
} => {
  const w = compiled.workflow
  const weights = { ...defaultWeights, ...definedWeights(w.scoring?.weights) }
  const penalty = w.scoring?.deprecatedPenalty ?? defaultDeprecatedPenalty
  const segment = command.segment ?? w.segment
  const preferred = command.preferredTier ?? w.preferredTier
  const outputCap = Math.min(command.maxOutputTokens ?? Infinity, w.maxOutputTokens ?? Infinity)
  // Hot path (once per eligible target per call): one plain object per target, no sort when the
  // totals are already in order.
  const n = targets.length
  const priceOf = (t: ModelTarget): number => {
    const p = t.pricing
    if (inputTokens === undefined) return p.inputPerMillion + p.outputPerMillion
    const input = Math.ceil(inputTokens * t.tokenizerSafetyFactor)
    const output = Math.min(outputCap, t.capabilities.maxOutputTokens)
    return (input * p.inputPerMillion + output * p.outputPerMillion) / 1_000_000
  }
  let cheapest = Infinity
  for (let i = 0; i < n; i++) cheapest = Math.min(cheapest, priceOf(targets[i]!))
  const deprecatedPenalty = round4(penalty)
  const healths = context?.health
  const sticky = context?.sticky
  let stickyAt = -1
  const scores: Array<TargetScore> = []
  let sorted = true
  let previous = Infinity
  let anyFast = false
  for (let i = 0; i < n; i++) {
    const t = targets[i]!
    const verified = segment === undefined ? undefined : verifiedScore(t, segment)
    const tier = t.qualityTier
    let q = verified ?? (tier === undefined ? unknownFit : classQuality[tier])
    if (preferred !== undefined && tier !== undefined) {
      q = Math.max(0, q - preferenceStep * Math.abs(qualityRank(tier) - qualityRank(preferred)))
    }
    const quality = verified === undefined && preferred === undefined ? q : round4(q)
    const latencyTier = t.classes?.latency
    if (latencyTier === "fast") anyFast = true
    const latency = latencyTier === undefined ? unknownFit : latencyFit[latencyTier]
    const price = priceOf(t)
    const cost = price <= 0 ? 1 : round4(cheapest / price)
    const minus = t.status === "deprecated" ? deprecatedPenalty : 0
    const record = healths?.[i]
    const health = record === undefined ? 1 : healthOf(record)
    const affinity = sticky !== undefined && t.ref === sticky ? 1 : 0
    if (affinity === 1) stickyAt = i
    const total = round4(
      weights.quality * quality +
        weights.latency * latency +
        weights.cost * cost +
        weights.health * health +
        weights.affinity * affinity -
        minus
    )
    if (total > previous) sorted = false
    previous = total
    scores.push(
      record === undefined
        ? { target: t.ref, quality, latency, cost, health, affinity, penalty: minus, total }
        : { target: t.ref, quality, latency, cost, health, status: statusOf(health), affinity, penalty: minus, total }
    )
  }
  let order: Array<number> | undefined
  // Total descending, ties in route order (the index makes the tie-break explicit).
  if (!sorted) {
    order = scores.map((_, i) => i)
    order.sort((a, b) => scores[b]!.total - scores[a]!.total || a - b)
  }
  let reason: SelectionReason = n === 1 ? "ONLY_ELIGIBLE" : "BEST_SCORE"
  const isFast = (i: number) => (targets[i]!.classes?.latency === "fast" ? 1 : 0)
  let fastFirst = false
  if (n > 1 && anyFast) {
    const shortDeadline = Duration.toMillis(w.scoring?.shortDeadline ?? defaultShortDeadline)
    if (Duration.toMillis(command.timeout ?? w.timeout) < shortDeadline) {
      fastFirst = true
      const best = order === undefined ? 0 : order[0]
      order ??= scores.map((_, i) => i)
      order.sort((a, b) => isFast(b) - isFast(a) || scores[b]!.total - scores[a]!.total || a - b)
      if (order[0] !== best) reason = "FAST_TIER"
    }
  }
  if (n > 1 && stickyAt >= 0 && (order === undefined ? 0 : order[0]) === stickyAt && weights.affinity > 0) {
    // Would the sticky target lead without its affinity (same order rules)? If not, affinity decided.
    const without = (i: number) => scores[i]!.total - (i === stickyAt ? weights.affinity : 0)
    let lead = 0
    for (let i = 1; i < n; i++) {
      const byFast = fastFirst ? isFast(i) - isFast(lead) : 0
      if (byFast > 0 || (byFast === 0 && round4(without(i)) > round4(without(lead)))) lead = i
    }
    if (lead !== stickyAt) reason = "STICKY"
  }
  if (command.escalate === true) {
    const current = order ?? scores.map((_, i) => i)
    const stronger = escalation(current, (i) => targets[i]!.qualityTier)
    if (stronger === undefined) {
      reason = "ESCALATION_UNAVAILABLE"
    } else {
      order = stronger
      reason = "ESCALATED"
    }
  }
  if (order === undefined) return { targets, scores, reason }
  const ranked = order
  return { targets: ranked.map((i) => targets[i]!), scores: ranked.map((i) => scores[i]!), reason }
}

/**
 * What scored selection reads besides the command: route health and session affinity.
 *
 * @since 0.4.0
 * @category Models
 */
export interface ScoreContext {
  /** Health record per target (aligned with the scored targets); `undefined` where none is kept. */
  readonly health?: ReadonlyArray<RouteHealth | undefined> | undefined
  /** The target the call's session was routed to last time; it gets the affinity term. */
  readonly sticky?: TargetRef | undefined
}

/**
 * Scores below this `health` term are `DEGRADED` (at or above, `HEALTHY`).
 *
 * @since 0.4.0
 * @category Constants
 */
export const degradedBelow = 0.8

/**
 * Rate-limit headroom (the smaller of remaining / limit for requests and tokens) below which the
 * `health` term is scored down.
 *
 * @since 0.4.0
 * @category Constants
 */
export const lowHeadroom = 0.1

const statusOf = (health: number): HealthStatus => (health < degradedBelow ? "DEGRADED" : "HEALTHY")

/**
 * The `health` term of a route (0..1, 4 decimals): `successRate` in the window (1 without samples)
 * × 0.5 for a half-open breaker × `min(1, 0.5 + 0.5·headroom / lowHeadroom)` while a reported
 * rate-limit headroom is below {@link lowHeadroom} and not yet reset (a 429 without headers: 0.5).
 *
 * @since 0.4.0
 * @category Routing
 */
export const healthOf = (record: RouteHealth): number => {
  let health = record.samples > 0 ? (record.successRate ?? 1) : 1
  if (record.breaker === "half_open") health *= 0.5
  const limits = record.rateLimit
  if (limits !== undefined && (limits.resetAt === undefined || limits.resetAt > record.at)) {
    let headroom = 1
    const share = (remaining: number | undefined, limit: number | undefined) => {
      if (remaining === undefined) return
      const s = limit === undefined || limit <= 0 ? (remaining <= 0 ? 0 : 1) : Math.max(0, remaining / limit)
      headroom = Math.min(headroom, s)
    }
    share(limits.remainingRequests, limits.limitRequests)
    share(limits.remainingTokens, limits.limitTokens)
    if (headroom < lowHeadroom) health *= Math.min(1, 0.5 + (0.5 * headroom) / lowHeadroom)
  }
  return round4(Math.max(0, Math.min(1, health)))
}

/**
 * Escalation: `order` with the items of a stronger quality class than the first's moved first (each
 * group keeps its order), or `undefined` when none is stronger. An undeclared class is the weakest.
 */
const escalation = <A>(order: ReadonlyArray<A>, tierOf: (a: A) => QualityTier | undefined): Array<A> | undefined => {
  const rank = (a: A) => {
    const tier = tierOf(a)
    return tier === undefined ? -1 : qualityRank(tier)
  }
  const first = order[0]
  if (first === undefined) return undefined
  const floor = rank(first)
  const stronger = order.filter((a) => rank(a) > floor)
  if (stronger.length === 0) return undefined
  return [...stronger, ...order.filter((a) => rank(a) <= floor)]
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

/** Deprecated targets a log warning was written for (once per target value). */
const warnedDeprecated = new WeakSet<ModelTarget>()

/** A route whose `RouteDecision` value is built only when someone reads it (a stream event, `resolve`). */
class Decided implements Route {
  readonly eligible: ReadonlyArray<TargetRef>
  private built: RouteDecision | undefined
  constructor(
    readonly compiled: CompiledWorkflow,
    readonly targets: ReadonlyArray<ModelTarget>,
    readonly excluded: ReadonlyArray<ExcludedTarget>,
    readonly inputTokens: number | undefined,
    readonly options: ModelOptions.ResolvedOptions,
    readonly selectionReason: SelectionReason,
    readonly scores: ReadonlyArray<TargetScore> | undefined,
    readonly canary?: CanaryAssignment | undefined
  ) {
    this.eligible = targets.map((t) => t.ref)
  }
  get decision(): RouteDecision {
    if (this.built === undefined) {
      const w = this.compiled.workflow
      this.built = new RouteDecision(
        {
          workflow: w.name,
          policyVersion: w.policyVersion,
          eligible: this.eligible,
          excluded: this.excluded,
          estimatedInputTokens: this.inputTokens,
          selectionReason: this.selectionReason,
          scores: this.scores,
          canary: this.canary
        },
        { disableValidation: true }
      )
    }
    return this.built
  }
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
  const check = (target: ModelTarget, index: number): Effect.Effect<boolean, StoreError> | undefined => {
    const reason = reasonAt(target, index) ?? sizeReason(compiled, command, target, inputTokens)
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
      if (escalate) {
        const stronger = escalation(eligible, (t) => t.qualityTier)
        if (stronger === undefined) {
          reason = "ESCALATION_UNAVAILABLE"
        } else {
          ordered = stronger
          reason = "ESCALATED"
        }
        ordered = keepFirst(ordered)
      }
      return finish(new Decided(compiled, ordered, excluded, inputTokens, options, reason, undefined))
    }
    // Route health for the health term: read without a fiber step when settled (`Health.layerNoop`).
    const snapshot = breakers.snapshot
    if (snapshot === undefined) return ranked(undefined)
    let healths: Array<RouteHealth | undefined> | undefined
    for (let i = 0; i < eligible.length; i++) {
      const check = snapshot(eligible[i]!.ref)
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
    const sessionKey = command.sessionKey
    const sticky = stickyTarget(workflows, w.name, sessionKey)
    const result = score(compiled, command, eligible, inputTokens, { health, sticky })
    const kept = keepFirst(result.targets)
    if (sessionKey !== undefined && kept[0] !== undefined) rememberTarget(workflows, w.name, sessionKey, kept[0].ref)
    return finish(new Decided(compiled, kept, excluded, inputTokens, options, result.reason, result.scores))
  }
  /** The workflow's canary applied to the decided route: its side, and the candidate first on its side. */
  const finish = (route: Decided): Effect.Effect<Route, Failure> => {
    const canary = w.canary
    const candidate = compiled.canaryTarget
    if (canary === undefined || candidate === undefined) return warnDeprecated(route)
    const key = canaryKey(canary, command, callId)
    if (key === undefined || canarySide(canary, key) === "baseline") {
      return assigned(route, canary, { id: canary.id, side: "baseline" })
    }
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
    const rest = route.targets.filter((t) => t.ref !== candidate.ref)
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
    return new Decided(compiled, kept, out, inputTokens, options, "CANARY", route.scores)
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
    const baseline = new Decided(
      compiled,
      route.targets,
      out,
      inputTokens,
      options,
      route.selectionReason,
      route.scores
    )
    return assigned(baseline, canary, { id: canary.id, side: "baseline", skipped: true })
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
          Metric.tagged(Metric.tagged(metrics.canaryAssignments, "workflow", w.name), "canary", canary.id),
          "side",
          assignment.side
        )
      ),
      warnDeprecated(
        new Decided(
          compiled,
          route.targets,
          route.excluded,
          inputTokens,
          options,
          route.selectionReason,
          route.scores,
          assignment
        )
      )
    )
  const warnDeprecated = (route: Decided): Effect.Effect<Route, Failure> => {
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
