/**
 * Eligibility: why a target cannot serve a request, as one exclusion code and a detail. One
 * implementation for the router (per request: the first reason wins) and for startup validation
 * (`GatewayConfig.validate` applies the rules that hold for every request of a workflow and reports
 * each, with a fix). Hot path: a rule allocates only when it excludes.
 */
import * as Embeddings from "../../Embeddings.js"
import type { ModelCommand } from "../../ModelCommand.js"
import type * as ModelOptions from "../../ModelOptions.js"
import * as Options from "../options.js"
import type { ModelTarget, QualityTier } from "../../ModelTarget.js"
import { qualityRank } from "../targetSchemas.js"
import { costAt, outputCapAt } from "../../Pricing.js"
import { inputTokensAt, minimumUsefulOutputTokens } from "../affordable.js"
import { boundDetail } from "../routeSchemas.js"
import * as TokenEstimator from "../../TokenEstimator.js"
import * as Tenancy from "../../Tenancy.js"
import type { Risk, Workflow } from "../../Workflow.js"
import type { CompiledWorkflow } from "../compiled.js"
import type * as Lifecycle from "../lifecycle.js"
import { memo, type RouterState } from "./state.js"
import type { Exclusion } from "./types.js"

export type { Exclusion } from "./types.js"

/** What of a compiled workflow the rules read (startup validation builds it before compiling). */
export type Shape = Pick<CompiledWorkflow, "workflow" | "schema" | "features">

/** The media a request carries: whether it has images, its audio formats and its file media types. */
export interface Media {
  readonly images: boolean
  readonly audio: ReadonlyArray<string>
  readonly files: ReadonlyArray<string>
}

const none: ReadonlyArray<string> = []

/** A request without media. */
export const noMedia: Media = { images: false, audio: none, files: none }

/** The media of `command`, in one pass over its messages (computed once per request). */
export const mediaOf = (command: ModelCommand): Media => {
  let images = false
  let audio: Array<string> | undefined
  let files: Array<string> | undefined
  for (const m of command.messages) {
    if (m._tag !== "user" || typeof m.content === "string") continue
    for (const p of m.content) {
      if (p._tag === "image") images = true
      else if (p._tag === "audio") {
        if (audio === undefined) audio = []
        if (!audio.includes(p.format)) audio.push(p.format)
      } else if (p._tag === "file") {
        if (files === undefined) files = []
        if (!files.includes(p.mediaType)) files.push(p.mediaType)
      }
    }
  }
  if (!images && audio === undefined && files === undefined) return noMedia
  return { images, audio: audio ?? none, files: files ?? none }
}

const hasMedia = (media: Media): boolean => media.images || media.audio.length > 0 || media.files.length > 0

/** What of a request the eligibility rules read, besides its size. */
export interface RequestView {
  readonly regions: ReadonlyArray<string>
  readonly dataClass: string
  readonly images: boolean
  /** Audio formats of the request's `audio` parts. */
  readonly audio: ReadonlyArray<string>
  /** Media types of the request's `file` parts. */
  readonly files: ReadonlyArray<string>
  readonly tools: boolean
  readonly streaming: boolean
  readonly schemaFeatures: ReadonlyArray<string> | undefined
  readonly risk: Risk | undefined
  readonly segment: string | undefined
  readonly minQualityTier: QualityTier | undefined
  /** Smallest context window the request needs (the command's `minContextTokens`). */
  readonly minContextTokens: number | undefined
}

const noOptions: ReadonlyArray<ModelOptions.OptionName> = []

/**
 * Lowest verified score on the segment a `HIGH`-risk call accepts when its workflow sets no
 * `qualityThreshold`.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultQualityThreshold = 0.8

const riskRank = (risk: Risk | undefined): number => (risk === "HIGH" ? 2 : risk === "MEDIUM" ? 1 : 0)

/** The higher of two optional quality classes. */
const higherTier = (a: QualityTier | undefined, b: QualityTier | undefined): QualityTier | undefined =>
  a === undefined ? b : b === undefined ? a : qualityRank(a) >= qualityRank(b) ? a : b

/** The request's view: the workflow's rules, narrowed (never widened) by the command; `media` found once by the caller. */
export const requestView = (
  compiled: Shape,
  command: ModelCommand,
  mode: "generate" | "stream",
  media: Media
): RequestView => {
  const w = compiled.workflow
  return {
    regions: command.regions ?? w.regions,
    dataClass: command.dataClass ?? w.dataClass,
    images: media.images,
    audio: media.audio,
    files: media.files,
    tools: (command.tools?.length ?? 0) > 0,
    streaming: mode === "stream" || command.requires?.streaming === true,
    schemaFeatures: command.requires?.schemaFeatures,
    // A command can raise the workflow's risk and minimum class, never lower them.
    risk: riskRank(command.risk) > riskRank(w.risk) ? command.risk : w.risk,
    segment: command.segment ?? w.segment,
    minQualityTier: higherTier(w.minQualityTier, command.minQualityTier),
    minContextTokens: command.minContextTokens
  }
}

/** The view of a request that asks for nothing beyond its workflow. */
export const workflowView = (w: Workflow): RequestView => ({
  regions: w.regions,
  dataClass: w.dataClass,
  images: false,
  audio: none,
  files: none,
  tools: false,
  streaming: false,
  schemaFeatures: undefined,
  risk: w.risk,
  segment: w.segment,
  minQualityTier: w.minQualityTier,
  minContextTokens: undefined
})

/** A request that asks for nothing beyond its workflow (the common case): its rules are the workflow's. */
export const isPlain = (command: ModelCommand, mode: "generate" | "stream", media: Media): boolean =>
  mode === "generate" &&
  command.regions === undefined &&
  command.dataClass === undefined &&
  command.requires === undefined &&
  command.risk === undefined &&
  command.segment === undefined &&
  command.minQualityTier === undefined &&
  command.minContextTokens === undefined &&
  (command.tools?.length ?? 0) === 0 &&
  !hasMedia(media)

// ---------------------------------------------------------------------------------------------
// The rules, in the order the router applies them
// ---------------------------------------------------------------------------------------------

/** One eligibility rule: why `target` cannot serve a request like `view`, or `undefined`. */
type Rule = (
  compiled: Shape,
  view: RequestView,
  target: ModelTarget,
  requiredOptions: ReadonlyArray<ModelOptions.OptionName>
) => Exclusion | undefined

const disabled: Rule = (_c, _v, target) =>
  target.status === "disabled" ? { reason: "DISABLED", detail: "target is disabled" } : undefined

const region: Rule = (compiled, view, target) => {
  const regions = view.regions
  const allowed = compiled.workflow.regions
  let outside: Array<string> | undefined
  for (const r of target.regions) {
    if (regions.includes(r) && allowed.includes(r)) continue
    if (outside === undefined) outside = []
    outside.push(r)
  }
  if (outside === undefined) return undefined
  return { reason: "DATA_REGION_MISMATCH", detail: `runs in [${outside.join(", ")}], allowed [${regions.join(", ")}]` }
}

// Both the workflow's class and the request's own: a request can narrow, never widen, who may see it.
const dataClass: Rule = (compiled, view, target) =>
  !target.dataClasses.includes(view.dataClass) || !target.dataClasses.includes(compiled.workflow.dataClass)
    ? { reason: "DATA_CLASS_NOT_ALLOWED", detail: `data class "${view.dataClass}" not allowed` }
    : undefined

// Embedding models serve embedding workflows only, and only in the workflow's vector space.
const embedding: Rule = (compiled, _v, target) => {
  const w = compiled.workflow
  return w.embedding !== undefined || target.capabilities.embeddings !== undefined
    ? Embeddings.incompatibility(w.embedding, target)
    : undefined
}

const capability: Rule = (compiled, view, target) => {
  const caps = target.capabilities
  const needs = compiled.workflow.requires
  const lacksVision = !caps.vision && (needs.vision || view.images)
  const lacksTools = !caps.tools && (needs.tools || view.tools)
  const lacksStreaming = !caps.streaming && (needs.streaming || view.streaming)
  const lacksStructured = compiled.schema !== undefined && caps.structuredOutput.mode === "none"
  if (!(lacksVision || lacksTools || lacksStreaming || lacksStructured)) return undefined
  const missing: Array<string> = []
  if (lacksVision) missing.push("vision")
  if (lacksTools) missing.push("tools")
  if (lacksStreaming) missing.push("streaming")
  if (lacksStructured) missing.push("structured output")
  return { reason: "CAPABILITY_MISSING", detail: `missing: ${missing.join(", ")}` }
}

/** What of `needed` (the request's and the workflow's) `accepted` lacks; `undefined` when nothing. */
const lacking = (
  request: ReadonlyArray<string>,
  workflow: ReadonlyArray<string> | undefined,
  accepted: ReadonlyArray<string> | undefined
): Array<string> | undefined => {
  let out: Array<string> | undefined
  const check = (x: string) => {
    if (accepted?.includes(x) === true || out?.includes(x) === true) return
    if (out === undefined) out = []
    out.push(x)
  }
  for (const x of request) check(x)
  for (const x of workflow ?? none) check(x)
  return out
}

// Audio and files: each format or media type the request carries (or the workflow requires) must be accepted.
const media: Rule = (compiled, view, target) => {
  const needs = compiled.workflow.requires
  if (
    view.audio.length === 0 &&
    view.files.length === 0 &&
    needs.audioInput === undefined &&
    needs.fileInput === undefined
  )
    return undefined
  const caps = target.capabilities
  const audio = lacking(view.audio, needs.audioInput, caps.audioInput)
  const files = lacking(view.files, needs.fileInput, caps.fileInput)
  if (audio === undefined && files === undefined) return undefined
  const missing: Array<string> = []
  if (audio !== undefined) missing.push(`audio input (${audio.join(", ")})`)
  if (files !== undefined) missing.push(`file input (${files.join(", ")})`)
  return { reason: "MEDIA_UNSUPPORTED", detail: boundDetail(`does not accept ${missing.join(", ")}`) }
}

const schemaFeature: Rule = (compiled, view, target) => {
  if (compiled.schema === undefined && view.schemaFeatures === undefined) return undefined
  const structured = target.capabilities.structuredOutput
  // No structured output at all is the capability rule's (`CAPABILITY_MISSING`).
  if (compiled.schema !== undefined && structured.mode === "none") return undefined
  const supported = structured.features
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
  return unsupported === undefined
    ? undefined
    : { reason: "SCHEMA_FEATURE_UNSUPPORTED", detail: `unsupported: ${unsupported.sort().join(", ")}` }
}

const options: Rule = (_c, _v, target, requiredOptions) => {
  if (requiredOptions.length === 0) return undefined
  const missing = Options.unsupported(requiredOptions, target.capabilities.options ?? noOptions)
  return missing === undefined
    ? undefined
    : { reason: "OPTION_UNSUPPORTED", detail: boundDetail(`does not accept options: ${missing.join(", ")}`) }
}

const minTier: Rule = (_c, view, target) => {
  const min = view.minQualityTier
  if (min === undefined) return undefined
  const tier = target.qualityTier
  if (tier === undefined) return { reason: "BELOW_MIN_TIER", detail: `no quality class, ${min} required` }
  return qualityRank(tier) < qualityRank(min)
    ? { reason: "BELOW_MIN_TIER", detail: `quality ${tier} below ${min}` }
    : undefined
}

/** The target's verified score on `segment` (own keys only), or `undefined`. */
export const verifiedScore = (target: ModelTarget, segment: string): number | undefined => {
  const quality = target.quality
  return quality !== undefined && Object.hasOwn(quality, segment) ? quality[segment]?.score : undefined
}

const verifiedQuality: Rule = (compiled, view, target) => {
  if (view.risk !== "HIGH") return undefined
  const segment = view.segment
  if (segment === undefined) return { reason: "QUALITY_UNVERIFIED", detail: "risk HIGH needs a task segment" }
  const threshold = compiled.workflow.qualityThreshold ?? defaultQualityThreshold
  const verified = verifiedScore(target, segment)
  if (verified !== undefined && verified >= threshold) return undefined
  return {
    reason: "QUALITY_UNVERIFIED",
    detail: boundDetail(
      verified === undefined
        ? `no verified score on segment ${segment}`
        : `verified ${verified} on segment ${segment}, below ${threshold}`
    )
  }
}

// The request's contract on the window, whatever its input (the input's own fit is `sizeReason`'s).
const contextFloor: Rule = (_c, view, target) => {
  const min = view.minContextTokens
  const window = target.capabilities.contextWindow
  return min === undefined || window >= min
    ? undefined
    : { reason: "CONTEXT_TOO_SMALL", detail: `window ${window}, minContextTokens ${min}` }
}

/** Every rule of a request, in the order the router applies them. */
const requestRules: ReadonlyArray<Rule> = [
  disabled,
  region,
  dataClass,
  embedding,
  capability,
  media,
  contextFloor,
  schemaFeature,
  options,
  minTier,
  verifiedQuality
]

/**
 * The rules that hold for every request of a workflow and can be checked at startup (the others
 * depend on the request, the segment's scores or the tenant): `GatewayConfig.validate` reports each.
 */
const startupRules: ReadonlyArray<Rule> = [disabled, region, dataClass, capability, media, schemaFeature, options]

/** Why `target` cannot serve a request like `view` (size aside), or `undefined`: the first rule that excludes it. */
export const requestReason = (
  compiled: Shape,
  view: RequestView,
  target: ModelTarget,
  requiredOptions: ReadonlyArray<ModelOptions.OptionName>
): Exclusion | undefined => {
  for (const rule of requestRules) {
    const why = rule(compiled, view, target, requiredOptions)
    if (why !== undefined) return why
  }
  return undefined
}

/**
 * Every reason a route target of `compiled` is out for any request of its workflow (the startup
 * rules, each reported), with the options the workflow pins.
 */
export const startupReasons = (
  compiled: Shape,
  target: ModelTarget,
  pinned: ReadonlyArray<ModelOptions.OptionName>
): Array<Exclusion> => {
  const view = workflowView(compiled.workflow)
  const out: Array<Exclusion> = []
  for (const rule of startupRules) {
    const why = rule(compiled, view, target, pinned)
    if (why !== undefined) out.push(why)
  }
  return out
}

/** Per workflow (in `state`): why each route target is excluded for a plain request (computed once). */
export const plainReasonsOf = (state: RouterState, compiled: CompiledWorkflow): ReadonlyArray<Exclusion | undefined> =>
  memo(state.plainReasons, compiled, () => {
    const view = workflowView(compiled.workflow)
    return compiled.targets.map((t) => requestReason(compiled, view, t, noOptions))
  })

/**
 * Fewest output tokens a context window must hold after the input for its target to stay eligible:
 * the output of a call is capped to what is left of the window (`input + output ≤ window`), and a
 * target with less room than this is excluded (`CONTEXT_TOO_SMALL`). A caller that needs more room
 * states it with the command's `minContextTokens` (a hard filter on the window) or a larger input
 * margin of its own.
 *
 * @since 0.2.0
 * @category Constants
 */
export const minimumContextOutputTokens = 1

/** Why the request's size excludes `target` (context window, cost cap), or `undefined`. */
export const sizeReason = (
  compiled: CompiledWorkflow,
  command: ModelCommand,
  target: ModelTarget,
  inputTokens: number | undefined
): Exclusion | undefined => {
  // Not counted: nothing is limited and the input and its output cap certainly fit every window.
  if (inputTokens === undefined) return undefined
  const window = target.capabilities.contextWindow
  const tokens = inputTokensAt(inputTokens, target)
  if (tokens + minimumContextOutputTokens > window) {
    return { reason: "CONTEXT_TOO_SMALL", detail: `~${tokens} input tokens, window ${window}` }
  }
  const maxCost = Math.min(command.maxCost ?? Infinity, compiled.workflow.maxCost ?? Infinity)
  if (maxCost === Infinity) return undefined
  const minimumCost = costAt(target, tokens, minimumUsefulOutputTokens)
  if (minimumCost <= maxCost) return undefined
  return {
    reason: "BUDGET_DOES_NOT_FIT",
    detail: `input and ${minimumUsefulOutputTokens} output tokens cost ${minimumCost.toPrecision(3)}, maxCost ${maxCost}`
  }
}

const notAllowed: Exclusion = { reason: "TENANT_NOT_ALLOWED", detail: "dedicated to other tenants" }

/**
 * `TENANT_NOT_ALLOWED` for a target dedicated to tenants (`ModelTarget.tenants`) unless the call's
 * tenant was vouched for and is one of them. The detail never names the other tenants.
 */
export const tenantReason = (target: ModelTarget, identity: Tenancy.Identity | undefined): Exclusion | undefined =>
  Tenancy.serves(target.tenants, identity) ? undefined : notAllowed

/** `QUALITY_REGRESSION` when the target's quality on the workflow is past its exclusion threshold. */
export const qualityReason = (
  view: Lifecycle.View,
  w: Workflow,
  command: ModelCommand,
  target: ModelTarget
): Exclusion | undefined => {
  const standing = view.quality(w, command.segment ?? w.segment, target)
  return standing?.level === "excluded"
    ? { reason: "QUALITY_REGRESSION", detail: boundDetail(standing.detail) }
    : undefined
}

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
): Exclusion | undefined =>
  requestReason(compiled, requestView(compiled, command, mode, mediaOf(command)), target, requiredOptions) ??
  sizeReason(compiled, command, target, inputTokens)

/**
 * Whether an upper bound of the input's tokens and the call's output cap fit the context window of
 * every target (then nothing needs counting for the windows, and no output is capped by one).
 */
export const fitsEveryWindow = (
  compiled: CompiledWorkflow,
  command: ModelCommand,
  input: TokenEstimator.Input,
  cache?: TokenEstimator.Cache
): boolean => {
  const bound = TokenEstimator.upperBound(input, cache)
  const w = compiled.workflow
  const fits = (t: ModelTarget) =>
    inputTokensAt(bound, t) + Math.max(outputCapAt(command.maxOutputTokens, w.maxOutputTokens, t), 1) <=
    t.capabilities.contextWindow
  for (const t of compiled.targets) if (!fits(t)) return false
  return compiled.canaryTarget === undefined || fits(compiled.canaryTarget)
}
