/**
 * Canary assignment: which side of a workflow's canary a command lands on (a hash of the canary id
 * and the command's stickiness key against the share, the controller's when it has a rollout),
 * the candidate variant of a policy or prompt canary, and the decided route on the candidate side
 * (the candidate first while it is eligible; else the baseline, saying it was skipped).
 */
import * as Effect from "effect/Effect"
import type { Failure } from "../../Errors.js"
import type { ModelCommand } from "../../ModelCommand.js"
import type { ModelTarget } from "../../ModelTarget.js"
import { type CanaryAssignment, ExcludedTarget } from "../../RouteDecision.js"
import type { CanaryPolicy } from "../workflowPolicies.js"
import type { CompiledWorkflow } from "../compiled.js"
import { type Ctx, viewOf } from "./context.js"
import type { Decided, Route } from "./decision.js"
import { type Exclusion, requestReason, sizeReason, tenantReason } from "./eligibility.js"
import { countAssignment } from "./metrics.js"
import { openNow, storeFailure } from "./routeHealth.js"
import type { RouterState } from "./state.js"

/**
 * FNV-1a (32-bit) of `text`, with a final avalanche step so that nearby keys spread over the whole
 * range; an unsigned 32-bit integer.
 *
 * @since 0.2.0
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
 * @since 0.2.0
 * @category Canary
 */
export const canarySide = (canary: Pick<CanaryPolicy, "id" | "share">, key: string): "candidate" | "baseline" =>
  canaryHash(`${canary.id}\u0000${key}`) / 4_294_967_296 < canary.share ? "candidate" : "baseline"

/**
 * The stickiness key of a command under `canary`: its `sessionKey` (else the call id), its tenant,
 * or the call id; `undefined` (the baseline) when there is none (a call id is unknown outside a call).
 *
 * @since 0.2.0
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

/** The side of the workflow's canary a command lands on, with the controller's share when it has one. */
export const sideOf = (
  state: RouterState,
  workflow: string,
  canary: CanaryPolicy,
  command: ModelCommand,
  callId: string | undefined
): "candidate" | "baseline" => {
  const key = canaryKey(canary, command, callId)
  if (key === undefined) return "baseline"
  const share = canary.rollout === undefined ? undefined : state.lifecycle?.canaryShare(workflow, canary)
  return canarySide(share === undefined ? canary : { id: canary.id, share }, key)
}

/** A policy or prompt canary's workflow variant on the candidate side; otherwise `compiled`. */
export const variantOf = (
  state: RouterState,
  compiled: CompiledWorkflow | undefined,
  command: ModelCommand,
  callId: string | undefined
): CompiledWorkflow | undefined => {
  const variant = compiled?.canaryVariant
  if (compiled === undefined || variant === undefined) return compiled
  const canary = compiled.workflow.canary
  if (canary === undefined) return compiled
  return sideOf(state, compiled.workflow.name, canary, command, callId) === "candidate" ? variant : compiled
}

/** What runs after the canary step (the deprecation warning). */
type Then = (route: Decided) => Effect.Effect<Route, Failure>

/** The workflow's canary applied to the decided route: its side, and the candidate first on its side. */
export const applyCanary = (ctx: Ctx, route: Decided, then: Then): Effect.Effect<Route, Failure> => {
  const w = ctx.compiled.workflow
  const canary = w.canary
  if (canary === undefined) return then(route)
  if (sideOf(ctx.state, w.name, canary, ctx.command, ctx.callId) === "baseline") {
    return assigned(ctx, route, canary, { id: canary.id, side: "baseline" }, then)
  }
  const candidate = ctx.compiled.canaryTarget
  // A candidate policy or prompt alone: its variant of the workflow decided the route.
  if (candidate === undefined) return assigned(ctx, route, canary, { id: canary.id, side: "candidate" }, then)
  const reason =
    tenantReason(candidate, ctx.identity) ??
    requestReason(ctx.compiled, viewOf(ctx), candidate, ctx.options.required) ??
    sizeReason(ctx.compiled, ctx.command, candidate, ctx.inputTokens)
  if (reason !== undefined) return skipped(ctx, route, canary, candidate, reason, then)
  const onOpen = (isOpen: boolean) =>
    isOpen
      ? skipped(ctx, route, canary, candidate, { reason: "BREAKER_OPEN", detail: "circuit breaker open" }, then)
      : assigned(ctx, candidateFirst(ctx, route, candidate), canary, { id: canary.id, side: "candidate" }, then)
  const open = openNow(ctx.breakers)?.(candidate)
  if (open !== undefined) return onOpen(open)
  return Effect.flatMap(Effect.mapError(ctx.breakers.isOpen(candidate), storeFailure), onOpen)
}

/** The route past the candidate side: the candidate first, then the route (or only it without fallback). */
const candidateFirst = (ctx: Ctx, route: Decided, candidate: ModelTarget): Decided => {
  // By identity: a new model version's candidate shares its ref with the baseline version.
  const rest = route.targets.filter((t) => t !== candidate)
  const kept = [candidate]
  const out = route.excluded.filter((e) => e.target !== candidate.ref)
  if (ctx.compiled.workflow.allowFallback) kept.push(...rest)
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
  ctx: Ctx,
  route: Decided,
  canary: CanaryPolicy,
  candidate: ModelTarget,
  reason: Exclusion,
  then: Then
): Effect.Effect<Route, Failure> => {
  const out = route.excluded.some((e) => e.target === candidate.ref)
    ? route.excluded
    : [...route.excluded, new ExcludedTarget({ target: candidate.ref, ...reason }, { disableValidation: true })]
  return assigned(ctx, route.with({ excluded: out }), canary, { id: canary.id, side: "baseline", skipped: true }, then)
}

/** The route with its canary assignment, counted in `modelgate.canary.assignments`. */
const assigned = (
  ctx: Ctx,
  route: Decided,
  canary: CanaryPolicy,
  assignment: CanaryAssignment,
  then: Then
): Effect.Effect<Route, Failure> =>
  Effect.zipRight(
    countAssignment(ctx.compiled.workflow.name, canary.id, assignment),
    then(route.with({ canary: assignment }))
  )
