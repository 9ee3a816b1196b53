/**
 * The router's engine side in one namespace: what the pipeline, the gateway and the tests use
 * besides the public `Router` service — `decide` (the routing decision over compiled workflows and
 * a breaker view), the router state it reads (`routed`, `rememberServed`, `makeState`), and the
 * helpers of the stages (canary sides, eligibility, escalation, the health term). Private by path.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { Failure } from "../../Errors.js"
import type { ModelCommand } from "../../ModelCommand.js"
import * as ModelOptions from "../../ModelOptions.js"
import type { TargetRef } from "../../ModelTarget.js"
import type * as Tenancy from "../../Tenancy.js"
import { type PrefixMemo, rememberPrefix } from "./prefix.js"
import { boundDetail } from "../routeSchemas.js"
import * as TokenEstimator from "../../TokenEstimator.js"
import type { CompiledWorkflow } from "../compiled.js"
import * as Options from "../options.js"
import { variantOf } from "./canary.js"
import type { BreakerView } from "./context.js"
import type { Route } from "./decision.js"
import { fitsEveryWindow, mediaOf } from "./eligibility.js"
import { withTokens } from "./selection.js"
import { type RouterState, remember, RoutedWorkflows, stateOf } from "./state.js"
import { sliceCharacters } from "../tokenLimits.js"

export { canaryKey, canarySide } from "./canary.js"
export type { BreakerView } from "./context.js"
export { withoutTargets } from "./decision.js"
export { checkTarget, defaultQualityThreshold, minimumContextOutputTokens } from "./eligibility.js"
export { escalateFrom } from "./escalation.js"
export { countEscalation } from "./metrics.js"
export { healthOf } from "./scoring.js"
export { makeState, maxSessionKeys } from "./state.js"

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
 */
export const rememberServed = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  workflow: string,
  sessionKey: string,
  target: TargetRef
): void => remember(stateOf(workflows), workflow, sessionKey, target)

/**
 * Prompt-prefix affinity: remembers that `target` answered the prompt whose prefix keys `prefix`
 * holds (the engine calls it with the target whose answer was used), until `now` plus the
 * workflow's `prefixAffinity.ttl`. At most `maxPrefixKeys` keys per gateway, least recently used
 * forgotten first.
 */
export const rememberPrefixServed = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  prefix: PrefixMemo,
  target: TargetRef,
  now: number
): void => rememberPrefix(stateOf(workflows), prefix.keys, target, now + prefix.ttlMs)

/** The token counts' cache of the gateway that routes `workflows` (its router state's). */
export const tokensOf = (workflows: ReadonlyMap<string, CompiledWorkflow>): TokenEstimator.Cache =>
  stateOf(workflows).tokens

/**
 * Routes `command` under the compiled `workflows` (with the router state they carry, see
 * {@link routed}): the route, or why there is none as a {@link Failure} (the caller turns it into
 * an error with its call id). Decides when called (wrap it in `Effect.suspend` to decide when
 * run); synchronous unless a breaker check has to wait for its store or a large input is counted
 * in slices.
 */
export const decide = (
  workflows: ReadonlyMap<string, CompiledWorkflow>,
  breakers: BreakerView,
  command: ModelCommand,
  mode: "generate" | "stream",
  budgetLimited: boolean,
  /** The call's id: the stickiness key of a `call` (or keyless `session`) canary. */
  callId?: string,
  /**
   * The time the call has, ms: the earliest of the command's timeout, the workflow's and what is
   * left of an enclosing agent run (the engine passes its call's deadline). Omitted: the command's
   * and the workflow's timeout. Every time rule (the short-deadline fast class, the latency fit)
   * reads this one value.
   */
  timeLeftMs?: number,
  /** The tenant the host vouched for (`Tenancy`): only it opens tenant-dedicated targets. */
  identity?: Tenancy.Identity,
  /** The caller's clock reading now (epoch ms): route health in memory is read at it, at once. */
  now?: number
): Effect.Effect<Route, Failure> => {
  const state = stateOf(workflows)
  const compiled = variantOf(state, workflows.get(command.workflow), command, callId)
  if (compiled === undefined) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "unknown_workflow",
      detail: `no workflow "${command.workflow}"`
    })
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
    characters = TokenEstimator.inputCharacters(input, state.tokens)
    // Count only when a limit needs it, or when the input may not fit a context window.
    needsCount =
      budgetLimited ||
      limit < Infinity ||
      maxCost < Infinity ||
      !fitsEveryWindow(compiled, command, input, state.tokens)
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
  const media = mediaOf(command)
  const options = checked.right
  const withCount = (inputTokens: number | undefined) =>
    withTokens(
      {
        state,
        compiled,
        breakers,
        command,
        mode,
        options,
        callId,
        media,
        inputTokens,
        identity,
        timeLeftMs: timeLeftMs ?? timeoutOf(command, w),
        now
      },
      limit
    )
  if (!needsCount) return withCount(undefined)
  // Small inputs are counted at once; large ones in slices that give the event loop turns.
  if (characters <= sliceCharacters) return withCount(TokenEstimator.estimateInput(input, state.tokens))
  return Effect.flatMap(TokenEstimator.estimateInputYielding(input, state.tokens), withCount)
}

/** The time a call has when nothing but its command and workflow bound it: the earlier timeout, ms. */
const timeoutOf = (command: ModelCommand, w: CompiledWorkflow["workflow"]): number =>
  Math.min(command.timeout === undefined ? Infinity : Duration.toMillis(command.timeout), Duration.toMillis(w.timeout))

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
  const resolved = Options.resolve(w, command)
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
