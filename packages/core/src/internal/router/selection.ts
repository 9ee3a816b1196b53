/**
 * The decision once the input is counted: the hard filters in route order (eligibility, size,
 * quality signals, then the breaker), the selection among the eligible (the route's order with a
 * command's escalation, or scored over route health with hysteresis and session affinity), the
 * canary's side and a warning per deprecated target routed to.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Failure, StoreError } from "../../Errors.js"
import type { ModelTarget } from "../../ModelTarget.js"
import { type Escalation, ExcludedTarget, type SelectionReason } from "../../RouteDecision.js"
import { applyCanary } from "./canary.js"
import { type Ctx, viewOf } from "./context.js"
import { Decided, type Facts, type Route } from "./decision.js"
import { escalationOf, escalationOrder } from "./escalation.js"
import {
  type Exclusion,
  isPlain,
  minimumContextOutputTokens,
  plainReasonsOf,
  qualityReason,
  requestReason,
  sizeReason,
  tenantReason
} from "./eligibility.js"
import { countSwitch } from "./metrics.js"
import { openNow, readHealth, type Records, storeFailure, withHeadroom } from "./routeHealth.js"
import { type PrefixMemo, prefixKeys, prefixTarget } from "./prefix.js"
import { type ClassTerms, classTermsOf, rank } from "./scoring.js"
import { memo, stickyTarget } from "./state.js"

/** The targets of one decision as the hard filters sort them. */
interface Pass {
  /**
   * While no target is out of the route's leading run, `list` stays empty and `run` counts them
   * (the common case: every target eligible, nothing copied); from the first break on, eligible
   * targets are listed (`list`, with their route positions in `at` under scored selection).
   */
  run: number
  readonly list: Array<ModelTarget>
  readonly at: Array<number>
  readonly excluded: Array<ExcludedTarget>
  /** Targets past every hard filter and their breaker (with or without fallback allowed). */
  passed: number
}

/** The eligible targets of a finished pass over `route`, in route order. */
const eligibleOf = (pass: Pass, route: ReadonlyArray<ModelTarget>): ReadonlyArray<ModelTarget> =>
  pass.list.length > 0 ? pass.list : pass.run === route.length ? route : route.slice(0, pass.run)

/** The route positions of {@link eligibleOf}'s targets when they are not their own (listed, scored). */
const positionsOf = (pass: Pass): ReadonlyArray<number> | undefined => (pass.list.length > 0 ? pass.at : undefined)

const exclusion = (target: ModelTarget, why: Exclusion): ExcludedTarget =>
  new ExcludedTarget({ target: target.ref, reason: why.reason, detail: why.detail }, { disableValidation: true })

const breakerOpen: Exclusion = { reason: "BREAKER_OPEN", detail: "circuit breaker open" }
const noFallback: Exclusion = { reason: "FALLBACK_NOT_ALLOWED", detail: "workflow disallows fallback" }

/** The rest of a decision, once the input tokens are known (or known not to be needed). */
export const withTokens = (ctx: Ctx, limit: number): Effect.Effect<Route, Failure> => {
  const tokens = ctx.inputTokens
  if (tokens !== undefined && tokens > limit) {
    return Effect.fail({
      _tag: "InvalidRequest",
      reason: "input_too_large",
      detail: `~${tokens} input tokens exceed the limit of ${limit}`
    })
  }
  const pass: Pass = { run: 0, list: [], at: [], excluded: [], passed: 0 }
  const waiting = filter(ctx, pass)
  return waiting === undefined ? select(ctx, pass) : Effect.flatMap(waiting, () => select(ctx, pass))
}

/**
 * One pass in route order: why a target is excluded, else its breaker. A breaker the view answers
 * synchronously (breakers off, or off for the target) is read without a fiber step; from the first one that has
 * to wait for its store, the rest of the targets are decided one by one (the Effect returned).
 */
const filter = (ctx: Ctx, pass: Pass): Effect.Effect<void, Failure> | undefined => {
  const { compiled, command } = ctx
  const w = compiled.workflow
  // Scored: every target passing the hard filters is scored; the fallback rule applies after ranking
  // (also after an escalation reorders an ordered route).
  const scored = w.selection === "scored"
  const collectAll = scored || command.escalate === true
  const firstOnly = !w.allowFallback && !collectAll
  const route = compiled.targets
  const place = (target: ModelTarget, open: boolean, index: number) => {
    if (open) pass.excluded.push(exclusion(target, breakerOpen))
    else {
      pass.passed++
      const list = pass.list
      if (firstOnly && pass.run + list.length > 0) {
        pass.excluded.push(exclusion(target, noFallback))
      } else if (list.length === 0 && pass.run === index) pass.run++
      else {
        // The leading run is broken: list it, then this target.
        for (let k = 0; k < pass.run; k++) list.push(route[k]!)
        if (scored) for (let k = 0; k < pass.run; k++) pass.at.push(k)
        pass.run = 0
        list.push(target)
        if (scored) pass.at.push(index)
      }
    }
  }
  // A plain request reads its workflow's precomputed reasons; any other is checked in full.
  const plain =
    ctx.options.required.length === 0 && isPlain(command, ctx.mode, ctx.media)
      ? plainReasonsOf(ctx.state, compiled)
      : undefined
  const view = plain === undefined ? viewOf(ctx) : undefined
  // Quality signals (`workflow.quality`): read only by workflows that use them.
  const quality = compiled.lifecycle?.quality === true ? ctx.state.lifecycle : undefined
  const open = openNow(ctx.breakers)
  // Checks that cannot exclude any route target on this call are skipped (the workflow's bounds).
  const table = memo(ctx.state.classTerms, compiled, () => classTermsOf(compiled))
  const tenants = table.dedicated
  const sized = sizeMayExclude(ctx, table)
  /** Whether the breaker is open (or the check to run), or `undefined` when the target is excluded before (recorded). */
  const check = (target: ModelTarget, index: number): boolean | Effect.Effect<boolean, StoreError> | undefined => {
    const why =
      (tenants ? tenantReason(target, ctx.identity) : undefined) ??
      (view === undefined ? plain?.[index] : requestReason(compiled, view, target, ctx.options.required)) ??
      (sized ? sizeReason(compiled, command, target, ctx.inputTokens) : undefined) ??
      (quality === undefined ? undefined : qualityReason(quality, w, command, target))
    if (why === undefined) return open?.(target) ?? ctx.breakers.isOpen(target)
    pass.excluded.push(exclusion(target, why))
    return undefined
  }
  const targets = compiled.targets
  let i = 0
  if (plain !== undefined && open !== undefined && !tenants && !sized && quality === undefined) {
    // Every check precomputed: a target is out for its plain reason, else its breaker answers at once.
    for (; i < targets.length; i++) {
      const target = targets[i]!
      if (plain[i] !== undefined) break
      const isOpen = open(target)
      if (isOpen === undefined) break
      place(target, isOpen, i)
    }
  }
  for (; i < targets.length; i++) {
    const target = targets[i]!
    const breaker = check(target, i)
    if (breaker === undefined) continue
    if (typeof breaker === "boolean") {
      place(target, breaker, i)
      continue
    }
    const rest = targets.slice(i + 1)
    return Effect.mapError(
      Effect.flatMap(breaker, (first) => {
        place(target, first, i)
        return Effect.forEach(
          rest,
          (next, k) => {
            const index = i + 1 + k
            const later = check(next, index)
            return later === undefined
              ? Effect.void
              : typeof later === "boolean"
                ? Effect.sync(() => place(next, later, index))
                : Effect.map(later, (isOpen) => place(next, isOpen, index))
          },
          { discard: true }
        )
      }),
      storeFailure
    )
  }
  return undefined
}

/**
 * Whether the size check (`sizeReason`) may exclude a route target on this call: the input was
 * counted, and there is a cost cap or the input at the route's largest safety factor leaves less
 * than the minimum output room in its smallest window.
 */
const sizeMayExclude = (ctx: Ctx, table: ClassTerms): boolean => {
  const tokens = ctx.inputTokens
  if (tokens === undefined) return false
  if (Math.min(ctx.command.maxCost ?? Infinity, ctx.compiled.workflow.maxCost ?? Infinity) < Infinity) return true
  return Math.ceil(tokens * table.maxSafety) + minimumContextOutputTokens > table.minWindow
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
  const eligible = eligibleOf(pass, ctx.compiled.targets)
  if (eligible.length === 0) return Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded: pass.excluded })
  if (w.selection === "scored") {
    // Route health for the health term: none to read without a fiber step when the view keeps no records (`Health.layerOff`).
    const health = readHealth(ctx.breakers, eligible, ctx.now)
    return Effect.isEffect(health)
      ? Effect.flatMap(health, (h) => scored(ctx, pass, eligible, h))
      : scored(ctx, pass, eligible, health)
  }
  let reason: SelectionReason = pass.passed === 1 ? "ONLY_ELIGIBLE" : "PINNED_ORDER"
  let ordered: ReadonlyArray<ModelTarget> = eligible
  let escalated: Escalation | undefined
  if (ctx.command.escalate === true) {
    const stronger = escalationOrder(eligible, (t) => t, w.escalation)
    if (stronger !== undefined) {
      ordered = stronger
      reason = "ESCALATION"
    }
    escalated = escalationOf("command", eligible[0]!, stronger?.[0])
    ordered = keepFirst(ctx, pass, ordered)
  }
  const facts: Facts = { command: ctx.command, mode: ctx.mode, media: ctx.media, fastTier: false }
  const { compiled, inputTokens, options } = ctx
  return finish(
    ctx,
    new Decided(compiled, ordered, pass.excluded, inputTokens, options, reason, undefined, facts, undefined, escalated)
  )
}

/**
 * Scored selection over the eligible targets' health records; with `Workflow.prefixAffinity`, the
 * prompt's prefix keys are read against the router's memory at the clock's time.
 */
const scored = (
  ctx: Ctx,
  pass: Pass,
  eligible: ReadonlyArray<ModelTarget>,
  health: Records
): Effect.Effect<Route, Failure> => {
  const { command, compiled } = ctx
  const affinity = compiled.workflow.prefixAffinity
  if (affinity === undefined) return scoredWith(ctx, pass, eligible, health, undefined)
  const keys = prefixKeys(command, compiled.workflow.name, command.tenant, affinity.blockCharacters)
  if (keys.length === 0) return scoredWith(ctx, pass, eligible, health, undefined)
  const memo: PrefixMemo = { keys, ttlMs: Duration.toMillis(affinity.ttl) }
  return Effect.clockWith((clock) =>
    scoredWith(ctx, pass, eligible, health, { memo, now: clock.unsafeCurrentTimeMillis() })
  )
}

const scoredWith = (
  ctx: Ctx,
  pass: Pass,
  eligible: ReadonlyArray<ModelTarget>,
  health: Records,
  prefix: { readonly memo: PrefixMemo; readonly now: number } | undefined
): Effect.Effect<Route, Failure> => {
  const { compiled, command, state } = ctx
  const w = compiled.workflow
  const { pool, records } = withHeadroom(ctx.breakers, eligible, health, pass.excluded)
  if (pool.length === 0) return Effect.fail({ _tag: "NoEligibleRoute", workflow: w.name, excluded: pass.excluded })
  const incumbent = state.leaders.get(w.name)
  // A session's own target comes first; else the target that served the prompt's prefix recently.
  const session = stickyTarget(state, w.name, command.sessionKey)
  const byPrefix =
    session === undefined && prefix !== undefined ? prefixTarget(state, prefix.memo.keys, prefix.now) : undefined
  const lifecycle = compiled.lifecycle?.quality === true ? state.lifecycle : undefined
  const adjustment = ctx.breakers.qualityAdjustment
  const context = {
    health: records,
    sticky: session ?? byPrefix,
    stickyBy: session === undefined && byPrefix !== undefined ? ("prefix" as const) : ("session" as const),
    incumbent,
    mode: ctx.mode,
    timeLeftMs: ctx.timeLeftMs,
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
  // The route positions hold while no target left the pool for its health.
  const at = pool === eligible ? positionsOf(pass) : undefined
  const result = rank(compiled, command, pool, ctx.inputTokens, context, cached, at)
  const kept = keepFirst(ctx, pass, result.targets)
  const facts: Facts = {
    command,
    mode: ctx.mode,
    media: ctx.media,
    fastTier: result.fastTier,
    prefix: prefix?.memo
  }
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
