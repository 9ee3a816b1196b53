/**
 * Routing: which targets may serve a request, in which order, and why every other target of the
 * workflow's route was excluded. Deterministic: the same command and health state give the same
 * decision.
 *
 * @since 0.1.0
 */
import { Effect, Exit } from "effect"
import { minimumUsefulOutputTokens } from "./Pricing.js"
import { type Failure, fromFailure, type GatewayError, type StoreError } from "./Errors.js"
import type { CompiledWorkflow } from "./GatewayConfig.js"
import { Health } from "./Health.js"
import type { ModelCommand } from "./ModelCommand.js"
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
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly workflows: ReadonlyMap<string, CompiledWorkflow>
  readonly resolve: (command: ModelCommand, mode?: "generate" | "stream") => Effect.Effect<Route, GatewayError>
}

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
  mode: "generate" | "stream"
): { readonly reason: ExclusionReason; readonly detail: string } | undefined => {
  const w = compiled.workflow
  if (target.status === "disabled") return { reason: "DISABLED", detail: "target is disabled" }
  const regions = command.regions ?? w.regions
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
  const dataClass = command.dataClass ?? w.dataClass
  if (!target.dataClasses.includes(dataClass) || !target.dataClasses.includes(w.dataClass)) {
    return { reason: "DATA_CLASS_NOT_ALLOWED", detail: `data class "${dataClass}" not allowed` }
  }
  const caps = target.capabilities
  const lacksVision = !caps.vision && (w.requires.vision || hasImages(command))
  const lacksTools = !caps.tools && (w.requires.tools || (command.tools?.length ?? 0) > 0)
  const lacksStreaming =
    !caps.streaming && (w.requires.streaming || mode === "stream" || command.requires?.streaming === true)
  const lacksStructured = compiled.schema !== undefined && caps.structuredOutput.mode === "none"
  if (lacksVision || lacksTools || lacksStreaming || lacksStructured) {
    const missing: Array<string> = []
    if (lacksVision) missing.push("vision")
    if (lacksTools) missing.push("tools")
    if (lacksStreaming) missing.push("streaming")
    if (lacksStructured) missing.push("structured output")
    return { reason: "CAPABILITY_MISSING", detail: `missing: ${missing.join(", ")}` }
  }
  if (compiled.schema !== undefined || command.requires?.schemaFeatures !== undefined) {
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
    for (const f of command.requires?.schemaFeatures ?? []) check(f)
    if (unsupported !== undefined) {
      return { reason: "SCHEMA_FEATURE_UNSUPPORTED", detail: `unsupported: ${unsupported.sort().join(", ")}` }
    }
  }
  // Not counted: nothing is limited and the input certainly fits every window.
  if (inputTokens === undefined) return undefined
  const tokens = Math.ceil(inputTokens * target.tokenizerSafetyFactor)
  if (tokens + 1 > caps.contextWindow) {
    return { reason: "CONTEXT_TOO_SMALL", detail: `~${tokens} input tokens, window ${caps.contextWindow}` }
  }
  const maxCost = Math.min(command.maxCost ?? Infinity, w.maxCost ?? Infinity)
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
  if (!needsCount) return withTokens(compiled, breakers, command, mode, undefined, limit)
  // Small inputs are counted at once; large ones in slices that give the event loop turns.
  if (characters <= TokenEstimator.sliceCharacters) {
    return withTokens(compiled, breakers, command, mode, TokenEstimator.estimateInput(input), limit)
  }
  return Effect.flatMap(TokenEstimator.estimateInputYielding(input), (tokens) =>
    withTokens(compiled, breakers, command, mode, tokens, limit)
  )
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
    readonly inputTokens: number | undefined
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
  limit: number
): Effect.Effect<Route, Failure> => {
  const w = compiled.workflow
  if (inputTokens !== undefined && inputTokens > limit) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "input_too_large",
      detail: `~${inputTokens} input tokens exceed the limit of ${limit}`
    })
  }
  // Per target in route order: why it is excluded, else its breaker check (settled answers — breakers
  // off, or a synchronous store — are read without a fiber step).
  const targets = compiled.targets
  const why: Array<{ readonly reason: ExclusionReason; readonly detail: string } | undefined> = []
  const open: Array<boolean | Effect.Effect<boolean, StoreError>> = []
  let pending = false
  for (const target of targets) {
    const reason = checkTarget(compiled, command, target, inputTokens, mode)
    why.push(reason)
    if (reason !== undefined) {
      open.push(false)
      continue
    }
    const check = breakers.isOpen(target)
    const value = settled(check)
    if (value === undefined) pending = true
    open.push(value ?? check)
  }
  const finish = (isOpen: ReadonlyArray<boolean>): Effect.Effect<Route, Failure> => {
    const eligible: Array<ModelTarget> = []
    const excluded: Array<ExcludedTarget> = []
    for (let i = 0; i < targets.length; i++) {
      const target = targets[i]!
      const reason = why[i]
      if (reason !== undefined) {
        excluded.push(new ExcludedTarget({ target: target.ref, ...reason }, { disableValidation: true }))
      } else if (isOpen[i]) {
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
    if (eligible.length === 0) return Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded })
    return Effect.succeed(new Decided(compiled, eligible, excluded, inputTokens))
  }
  if (!pending) return finish(open.map((v) => v === true))
  return Effect.flatMap(
    Effect.mapError(Effect.all(open.map((v) => (typeof v === "boolean" ? Effect.succeed(v) : v))), storeFailure),
    finish
  )
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
