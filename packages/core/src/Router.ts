/**
 * Routing: which targets may serve a request, in which order, and why every other target of the
 * workflow's route was excluded. Deterministic: the same command and health state give the same
 * decision.
 *
 * @since 0.1.0
 */
import { Context, Effect, Exit } from "effect"
import { minimumUsefulOutputTokens } from "./Budgets.js"
import { InvalidRequest, NoEligibleRoute } from "./Errors.js"
import type { CompiledWorkflow } from "./GatewayConfig.js"
import { Health } from "./Health.js"
import type { ModelCommand } from "./ModelCommand.js"
import type { ModelTarget } from "./ModelTarget.js"
import { ExcludedTarget, RouteDecision } from "./RouteDecision.js"
import type { ExclusionReason } from "./RouteDecision.js"
import * as TokenEstimator from "./TokenEstimator.js"

/**
 * A decision with the resolved targets, as the engine uses it.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Route {
  readonly decision: RouteDecision
  readonly compiled: CompiledWorkflow
  /** Eligible targets, in order. */
  readonly targets: ReadonlyArray<ModelTarget>
  /** Estimated input tokens before per-target safety factors. */
  readonly inputTokens: number
}

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly workflows: ReadonlyMap<string, CompiledWorkflow>
  readonly resolve: (
    command: ModelCommand,
    mode?: "generate" | "stream"
  ) => Effect.Effect<Route, NoEligibleRoute | InvalidRequest>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Router extends Context.Tag("@modelgate/core/Router")<Router, Service>() {}

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
const settled = (check: Effect.Effect<boolean>): boolean | undefined =>
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
  inputTokens: number,
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
 * @since 0.1.0
 * @category Constructors
 */
export const make = (workflows: ReadonlyMap<string, CompiledWorkflow>) =>
  Effect.map(Health, (health) =>
    Router.of({
      workflows,
      resolve: (command, mode = "generate") =>
        Effect.gen(function* () {
          const compiled = workflows.get(command.workflow)
          if (compiled === undefined) {
            return yield* new InvalidRequest({
              reason: "unknown_workflow",
              detail: `no workflow "${command.workflow}"`
            })
          }
          const w = compiled.workflow
          if (command.regions?.some((r) => !w.regions.includes(r))) {
            return yield* new InvalidRequest({
              reason: "invalid_command",
              detail: `regions [${(command.regions ?? []).join(", ")}] are not within the workflow's [${w.regions.join(", ")}]`
            })
          }
          const inputTokens = yield* Effect.try({
            try: () =>
              TokenEstimator.estimateInput({
                messages: command.messages,
                tools: command.tools,
                outputJsonSchema: compiled.jsonSchema
              }),
            // e.g. tool parameters nested too deep to serialize: refuse the request, never crash
            catch: () => new InvalidRequest({ reason: "invalid_command", detail: "the request cannot be measured" })
          })
          const limit = Math.min(command.maxInputTokens ?? Infinity, w.maxInputTokens ?? Infinity)
          if (inputTokens > limit) {
            return yield* new InvalidRequest({
              reason: "input_too_large",
              detail: `~${inputTokens} input tokens exceed the limit of ${limit}`
            })
          }
          const eligible: Array<ModelTarget> = []
          const excluded: Array<ExcludedTarget> = []
          for (const target of compiled.targets) {
            const why = checkTarget(compiled, command, target, inputTokens, mode)
            if (why !== undefined) {
              excluded.push(new ExcludedTarget({ target: target.ref, ...why }))
              continue
            }
            const breaker = health.isOpen(target)
            if (settled(breaker) ?? (yield* breaker)) {
              excluded.push(
                new ExcludedTarget({ target: target.ref, reason: "BREAKER_OPEN", detail: "circuit breaker open" })
              )
            } else if (!w.allowFallback && eligible.length > 0) {
              excluded.push(
                new ExcludedTarget({
                  target: target.ref,
                  reason: "FALLBACK_NOT_ALLOWED",
                  detail: "workflow disallows fallback"
                })
              )
            } else {
              eligible.push(target)
            }
          }
          const decision = new RouteDecision(
            {
              workflow: w.name,
              policyVersion: w.policyVersion,
              eligible: eligible.map((t) => t.ref),
              excluded,
              estimatedInputTokens: inputTokens
            },
            { disableValidation: true }
          )
          if (eligible.length === 0) {
            return yield* new NoEligibleRoute({ workflow: w.name, excluded })
          }
          return { decision, compiled, targets: eligible, inputTokens }
        })
    })
  )
