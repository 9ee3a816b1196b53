/**
 * Routing: which targets may serve a request, in which order, and why every other target of the
 * workflow's route was excluded. Deterministic: the same command, health state and router state
 * give the same decision.
 *
 * `resolve` runs, in order: the command's own checks (workflow, regions, options), the input's
 * measure, the hard filters in route order (`internal/router/eligibility`, then the breaker), the
 * selection (the route's order, or `internal/router/scoring`), the canary's side
 * (`internal/router/canary`) and a deprecation warning. Session affinity, hysteresis leaders and
 * the lifecycle view live in a {@link RouterState} owned by the gateway (`internal/router/state`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { type Failure, fromFailure, type GatewayError, type StoreError } from "./Errors.js"
import { Health } from "./Health.js"
import type { ModelCommand } from "./ModelCommand.js"
import * as ModelOptions from "./ModelOptions.js"
import type { ModelTarget, TargetRef } from "./ModelTarget.js"
import { boundDetail, ExcludedTarget } from "./RouteDecision.js"
import type { SelectionReason } from "./RouteDecision.js"
import * as TokenEstimator from "./TokenEstimator.js"
import type { CompiledWorkflow } from "./internal/compiled.js"
import { applyCanary, variantOf } from "./internal/router/canary.js"
import type { BreakerView, Ctx } from "./internal/router/context.js"
import { viewOf } from "./internal/router/context.js"
import { Decided, type Facts, type Route } from "./internal/router/decision.js"
import { escalationOf, escalationOrder } from "./internal/router/escalation.js"
import {
  type Exclusion,
  fitsEveryWindow,
  isPlain,
  plainReasonsOf,
  qualityReason,
  requestReason,
  sizeReason
} from "./internal/router/eligibility.js"
import { countSwitch } from "./internal/router/metrics.js"
import { readHealth, type Records, settled, storeFailure, withHeadroom } from "./internal/router/routeHealth.js"
import { classTermsOf, rank } from "./internal/router/scoring.js"
import { memo, type RouterState, remember, RoutedWorkflows, stateOf, stickyTarget } from "./internal/router/state.js"

export { canaryHash, canaryKey, canarySide } from "./internal/router/canary.js"
export type { BreakerView } from "./internal/router/context.js"
export { type Route, withoutTargets } from "./internal/router/decision.js"
export { checkTarget, defaultQualityThreshold } from "./internal/router/eligibility.js"
export { escalateFrom, isStronger } from "./internal/router/escalation.js"
export { countEscalation, metrics } from "./internal/router/metrics.js"
export {
  defaultDeprecatedPenalty,
  defaultShortDeadline,
  defaultSwitchMargin,
  defaultWeights,
  degradedBelow,
  healthOf,
  lowHeadroom,
  qualityFit,
  type Ranking,
  type ScoreContext,
  score
} from "./internal/router/scoring.js"
export { makeState, maxSessionKeys, type RouterState } from "./internal/router/state.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /** The compiled workflows of the running configuration (they carry the router's state). */
  readonly workflows: ReadonlyMap<string, CompiledWorkflow>
  /** What the router remembers between decisions (owned by the gateway). */
  readonly state: RouterState
  readonly resolve: (command: ModelCommand, mode?: "generate" | "stream") => Effect.Effect<Route, GatewayError>
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
 * `workflows` routed with `state` (a fresh one when omitted): what {@link decide} and
 * {@link rememberServed} read the router's memory from. `make` does this for the gateway.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const routed = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  state: RouterState = stateOf(workflows)
): ReadonlyMap<string, CompiledWorkflow> => new RoutedWorkflows(workflows, state)

/**
 * Session affinity: remembers that `target` served the last call of `sessionKey` on `workflow`
 * (the engine calls it with the target whose answer was used, after any fallback or escalation),
 * so the session's next scored decision gives it the affinity term while it is healthy. At most
 * `maxSessionKeys` keys per gateway, least recently used forgotten first. The memory is the state
 * `workflows` carries ({@link routed}); a bare map keeps none.
 *
 * @since 0.6.0
 * @category Routing
 */
export const rememberServed = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  workflow: string,
  sessionKey: string,
  target: TargetRef
): void => remember(stateOf(workflows), workflow, sessionKey, target)

/**
 * Routes `command` under the compiled `workflows` (with the router state they carry, see
 * {@link routed}): the route, or why there is none as a {@link Failure} (the caller turns it into
 * an error with its call id). Decides when called (wrap it in `Effect.suspend` to decide when
 * run); synchronous unless a breaker check has to wait for its store or a large input is counted
 * in slices.
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
  const state = stateOf(workflows)
  const compiled = variantOf(state, workflows.get(command.workflow), command, callId)
  if (compiled === undefined) {
    return Effect.fail({ _tag: "InvalidRequest", reason: "unknown_workflow", detail: `no workflow "${command.workflow}"` })
  }
  const checked = checkCommand(compiled, command)
  if (Either.isLeft(checked)) return Effect.fail(checked.left)
  const w = compiled.workflow
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
  const images = command.hasImages
  const options = checked.right
  const withCount = (inputTokens: number | undefined) =>
    withTokens({ state, compiled, breakers, command, mode, options, callId, images, inputTokens }, limit)
  if (!needsCount) return withCount(undefined)
  // Small inputs are counted at once; large ones in slices that give the event loop turns.
  if (characters <= TokenEstimator.sliceCharacters) return withCount(TokenEstimator.estimateInput(input))
  return Effect.flatMap(TokenEstimator.estimateInputYielding(input), withCount)
}

/** The command's own checks: regions within the workflow's, options within its bounds, provider options allowed. */
const checkCommand = (
  compiled: CompiledWorkflow,
  command: ModelCommand
): Either.Either<ModelOptions.ResolvedOptions, Failure> => {
  const w = compiled.workflow
  if (command.regions?.some((r) => !w.regions.includes(r))) {
    return Either.left({
      _tag: "InvalidRequest",
      reason: "invalid_command",
      detail: boundDetail(
        `regions [${(command.regions ?? []).join(", ")}] are not within the workflow's [${w.regions.join(", ")}]`
      )
    })
  }
  const resolved = ModelOptions.resolve(w, command)
  if (Either.isLeft(resolved)) {
    return Either.left({ _tag: "InvalidRequest", reason: "invalid_command", detail: boundDetail(resolved.left) })
  }
  const fields = resolved.right.providerOptions === undefined ? undefined : providerOptionsProblem(compiled, command)
  if (fields !== undefined) {
    return Either.left({ _tag: "InvalidRequest", reason: "invalid_command", detail: boundDetail(fields) })
  }
  return Either.right(resolved.right)
}

/**
 * The first problem of the command's provider options against the adapters' allowlists (a
 * provider without an adapter in the gateway has none), or `undefined`.
 */
const providerOptionsProblem = (compiled: CompiledWorkflow, command: ModelCommand): string | undefined => {
  const given = command.providerOptions
  if (given === undefined) return undefined
  for (const [provider, fields] of Object.entries(given)) {
    const allowlist = compiled.providerOptionAllowlists.get(provider)
    const problems = ModelOptions.providerOptionsProblems(provider, fields, allowlist)
    if (problems.length > 0) return `providerOptions: ${problems.join("; ")}`
  }
  return undefined
}

/** The targets of one decision as the hard filters sort them. */
interface Pass {
  readonly eligible: Array<ModelTarget>
  readonly excluded: Array<ExcludedTarget>
  /** Targets past every hard filter and their breaker (with or without fallback allowed). */
  passed: number
}

const exclusion = (target: ModelTarget, why: Exclusion): ExcludedTarget =>
  new ExcludedTarget({ target: target.ref, reason: why.reason, detail: why.detail }, { disableValidation: true })

const breakerOpen: Exclusion = { reason: "BREAKER_OPEN", detail: "circuit breaker open" }
const noFallback: Exclusion = { reason: "FALLBACK_NOT_ALLOWED", detail: "workflow disallows fallback" }

/** The rest of a decision, once the input tokens are known (or known not to be needed). */
const withTokens = (ctx: Ctx, limit: number): Effect.Effect<Route, Failure> => {
  const tokens = ctx.inputTokens
  if (tokens !== undefined && tokens > limit) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "input_too_large",
      detail: `~${tokens} input tokens exceed the limit of ${limit}`
    })
  }
  const pass: Pass = { eligible: [], excluded: [], passed: 0 }
  const waiting = filter(ctx, pass)
  return waiting === undefined ? select(ctx, pass) : Effect.flatMap(waiting, () => select(ctx, pass))
}

/**
 * One pass in route order: why a target is excluded, else its breaker. A settled breaker answer
 * (breakers off, or a synchronous store) is read without a fiber step; from the first one that has
 * to wait for its store, the rest of the targets are decided one by one (the Effect returned).
 */
const filter = (ctx: Ctx, pass: Pass): Effect.Effect<void, Failure> | undefined => {
  const { compiled, command } = ctx
  const w = compiled.workflow
  // Scored: every target passing the hard filters is scored; the fallback rule applies after ranking
  // (also after an escalation reorders an ordered route).
  const collectAll = w.selection === "scored" || command.escalate === true
  const place = (target: ModelTarget, open: boolean) => {
    if (open) pass.excluded.push(exclusion(target, breakerOpen))
    else {
      pass.passed++
      if (!w.allowFallback && !collectAll && pass.eligible.length > 0) pass.excluded.push(exclusion(target, noFallback))
      else pass.eligible.push(target)
    }
  }
  // A plain request reads its workflow's precomputed reasons; any other is checked in full.
  const plain =
    ctx.options.required.length === 0 && isPlain(command, ctx.mode, ctx.images)
      ? plainReasonsOf(ctx.state, compiled)
      : undefined
  const view = plain === undefined ? viewOf(ctx) : undefined
  // Quality signals (`workflow.quality`): read only by workflows that use them.
  const quality = compiled.lifecycle?.quality === true ? ctx.state.lifecycle : undefined
  /** The breaker check to run, or `undefined` when the target is excluded before (recorded). */
  const check = (target: ModelTarget, index: number): Effect.Effect<boolean, StoreError> | undefined => {
    const why =
      (view === undefined ? plain?.[index] : requestReason(compiled, view, target, ctx.options.required)) ??
      sizeReason(compiled, command, target, ctx.inputTokens) ??
      (quality === undefined ? undefined : qualityReason(quality, w, command, target))
    if (why === undefined) return ctx.breakers.isOpen(target)
    pass.excluded.push(exclusion(target, why))
    return undefined
  }
  const targets = compiled.targets
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
    return Effect.mapError(
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
    )
  }
  return undefined
}

/** Past `allowFallback: false`: only the first of `ranked` stays, the rest are excluded. */
const keepFirst = (ctx: Ctx, pass: Pass, ranked: ReadonlyArray<ModelTarget>): ReadonlyArray<ModelTarget> => {
  if (ctx.compiled.workflow.allowFallback || ranked.length <= 1) return ranked
  for (const t of ranked.slice(1)) pass.excluded.push(exclusion(t, noFallback))
  return ranked.slice(0, 1)
}

/** Selection among the eligible: the route's order (escalation aside), or scored over route health. */
const select = (ctx: Ctx, pass: Pass): Effect.Effect<Route, Failure> => {
  const w = ctx.compiled.workflow
  const eligible = pass.eligible
  if (eligible.length === 0) return Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded: pass.excluded })
  if (w.selection === "scored") {
    // Route health for the health term: read without a fiber step when settled (`Health.layerNoop`).
    const health = readHealth(ctx.breakers, eligible)
    return Effect.isEffect(health) ? Effect.flatMap(health, (h) => scored(ctx, pass, h)) : scored(ctx, pass, health)
  }
  let reason: SelectionReason = pass.passed === 1 ? "ONLY_ELIGIBLE" : "PINNED_ORDER"
  let ordered: ReadonlyArray<ModelTarget> = eligible
  let escalated
  if (ctx.command.escalate === true) {
    const stronger = escalationOrder(eligible, (t) => t, w.escalation)
    if (stronger !== undefined) {
      ordered = stronger
      reason = "ESCALATION"
    }
    escalated = escalationOf("command", eligible[0]!, stronger?.[0])
    ordered = keepFirst(ctx, pass, ordered)
  }
  const facts: Facts = { command: ctx.command, mode: ctx.mode, images: ctx.images, fastTier: false }
  const { compiled, inputTokens, options } = ctx
  return finish(
    ctx,
    new Decided(compiled, ordered, pass.excluded, inputTokens, options, reason, undefined, facts, undefined, escalated)
  )
}

/** Scored selection over the eligible targets' health records. */
const scored = (ctx: Ctx, pass: Pass, health: Records): Effect.Effect<Route, Failure> => {
  const { compiled, command, state } = ctx
  const w = compiled.workflow
  const { pool, records } = withHeadroom(ctx.breakers, pass.eligible, health, pass.excluded)
  if (pool.length === 0) return Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded: pass.excluded })
  const incumbent = state.leaders.get(w.name)
  const lifecycle = compiled.lifecycle?.quality === true ? state.lifecycle : undefined
  const adjustment = ctx.breakers.qualityAdjustment
  const context = {
    health: records,
    sticky: stickyTarget(state, w.name, command.sessionKey),
    incumbent,
    mode: ctx.mode,
    qualityAdjustment:
      lifecycle === undefined
        ? adjustment
        : (target: ModelTarget, segment: string | undefined): number | undefined => {
            // A demoted target's fit is scored down.
            const standing = lifecycle.quality(w, segment, target)
            const base = adjustment?.(target, segment)
            return standing === undefined ? base : (base ?? 0) - standing.demotion
          }
  }
  const cached = memo(state.classTerms, compiled, () => classTermsOf(compiled))
  const result = rank(compiled, command, pool, ctx.inputTokens, context, cached)
  const kept = keepFirst(ctx, pass, result.targets)
  const facts: Facts = { command, mode: ctx.mode, images: ctx.images, fastTier: result.fastTier }
  const route = new Decided(
    compiled,
    kept,
    pass.excluded,
    ctx.inputTokens,
    ctx.options,
    result.reason,
    result.scores,
    facts,
    undefined,
    result.escalation
  )
  // The workflow's best-scoring target, for hysteresis and the switch count (sessions and
  // escalations choose for one call and leave it alone).
  const leader = kept[0]!.ref
  if (result.reason !== "BEST_SCORE" || leader === incumbent) return finish(ctx, route)
  state.leaders.set(w.name, leader)
  if (incumbent === undefined) return finish(ctx, route)
  return Effect.zipRight(countSwitch(w.name), finish(ctx, route))
}

/** The canary's side, then the deprecation warning. */
const finish = (ctx: Ctx, route: Decided): Effect.Effect<Route, Failure> =>
  applyCanary(ctx, route, (r) => warnDeprecated(ctx, r))

/** One log warning per deprecated target value the gateway routes to. */
const warnDeprecated = (ctx: Ctx, route: Decided): Effect.Effect<Route, Failure> => {
  const { compiled, state } = ctx
  // Most workflows have no deprecated target: no walk over the route then.
  const any = memo(
    state.deprecated,
    compiled,
    () => compiled.targets.some((t) => t.status === "deprecated") || compiled.canaryTarget?.status === "deprecated"
  )
  if (!any) return Effect.succeed(route)
  let deprecated: Array<ModelTarget> | undefined
  for (const t of route.targets) {
    if (t.status !== "deprecated" || state.warned.has(t)) continue
    state.warned.add(t)
    if (deprecated === undefined) deprecated = []
    deprecated.push(t)
  }
  if (deprecated === undefined) return Effect.succeed(route)
  return Effect.as(
    Effect.forEach(
      deprecated,
      (t) =>
        Effect.logWarning("modelgate: routing to a deprecated target").pipe(
          Effect.annotateLogs({ target: t.ref, workflow: compiled.workflow.name })
        ),
      { discard: true }
    ),
    route
  )
}

/**
 * The router over the compiled `workflows`, remembering in `state` (the gateway's; a fresh one when
 * omitted).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  state: RouterState = stateOf(workflows)
): Effect.Effect<Service, never, Health> =>
  Effect.map(Health, (health): Service => {
    const table = new RoutedWorkflows(workflows, state)
    return {
      workflows: table,
      state,
      resolve: (command, mode = "generate") =>
        Effect.mapError(
          Effect.suspend(() => decide(table, health, command, mode, true)),
          (failure) => fromFailure(failure, {})
        )
    }
  })
