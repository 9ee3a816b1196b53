/**
 * Routing: which targets may serve a request, in which order, and why every other target of the
 * workflow's route was excluded. Deterministic: the same command and health state give the same
 * decision.
 *
 * @since 0.1.0
 */
import { Effect, Either, Exit } from "effect"
import { minimumUsefulOutputTokens } from "./Pricing.js"
import { type Failure, fromFailure, type GatewayError, type StoreError } from "./Errors.js"
import type { CompiledWorkflow } from "./GatewayConfig.js"
import { Health } from "./Health.js"
import type { ModelCommand } from "./ModelCommand.js"
import * as ModelOptions from "./ModelOptions.js"
import type { ModelTarget, TargetRef } from "./ModelTarget.js"
import { boundDetail, ExcludedTarget, RouteDecision } from "./RouteDecision.js"
import type { ExclusionReason } from "./RouteDecision.js"
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
}

const requestView = (compiled: CompiledWorkflow, command: ModelCommand, mode: "generate" | "stream"): RequestView => {
  const w = compiled.workflow
  return {
    regions: command.regions ?? w.regions,
    dataClass: command.dataClass ?? w.dataClass,
    images: hasImages(command),
    tools: (command.tools?.length ?? 0) > 0,
    streaming: mode === "stream" || command.requires?.streaming === true,
    schemaFeatures: command.requires?.schemaFeatures
  }
}

/** A request that asks for nothing beyond its workflow (the common case): its rules are the workflow's. */
const isPlain = (command: ModelCommand, mode: "generate" | "stream"): boolean =>
  mode === "generate" &&
  command.regions === undefined &&
  command.dataClass === undefined &&
  command.requires === undefined &&
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
      schemaFeatures: undefined
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
  return undefined
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
 * What the router needs from route health: whether a target's breaker keeps it out now.
 *
 * @since 0.2.0
 * @category Models
 */
export interface BreakerView {
  readonly isOpen: (target: ModelTarget) => Effect.Effect<boolean, StoreError>
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
  budgetLimited: boolean
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
  if (!needsCount) return withTokens(compiled, breakers, command, mode, undefined, limit, options)
  // Small inputs are counted at once; large ones in slices that give the event loop turns.
  if (characters <= TokenEstimator.sliceCharacters) {
    return withTokens(compiled, breakers, command, mode, TokenEstimator.estimateInput(input), limit, options)
  }
  return Effect.flatMap(TokenEstimator.estimateInputYielding(input), (tokens) =>
    withTokens(compiled, breakers, command, mode, tokens, limit, options)
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

/** A route whose `RouteDecision` value is built only when someone reads it (a stream event, `resolve`). */
class Decided implements Route {
  readonly eligible: ReadonlyArray<TargetRef>
  private built: RouteDecision | undefined
  constructor(
    readonly compiled: CompiledWorkflow,
    readonly targets: ReadonlyArray<ModelTarget>,
    readonly excluded: ReadonlyArray<ExcludedTarget>,
    readonly inputTokens: number | undefined,
    readonly options: ModelOptions.ResolvedOptions
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
          estimatedInputTokens: this.inputTokens
        },
        { disableValidation: true }
      )
    }
    return this.built
  }
}

/** The rest of a decision, once the input tokens are known (or known not to be needed). */
const withTokens = (
  compiled: CompiledWorkflow,
  breakers: BreakerView,
  command: ModelCommand,
  mode: "generate" | "stream",
  inputTokens: number | undefined,
  limit: number,
  options: ModelOptions.ResolvedOptions
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
  const eligible: Array<ModelTarget> = []
  const excluded: Array<ExcludedTarget> = []
  const place = (target: ModelTarget, open: boolean) => {
    if (open) {
      excluded.push(
        new ExcludedTarget(
          { target: target.ref, reason: "BREAKER_OPEN", detail: "circuit breaker open" },
          { disableValidation: true }
        )
      )
    } else if (!w.allowFallback && eligible.length > 0) {
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
  const done = (): Effect.Effect<Route, Failure> =>
    eligible.length === 0
      ? Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded })
      : Effect.succeed(new Decided(compiled, eligible, excluded, inputTokens, options))
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
