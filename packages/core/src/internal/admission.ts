/**
 * Admission of a call (DESIGN §4): the tenant's reservation for the worst case of its route and
 * the tenant's permit, in one path, within the call's deadline; and their settlement, once, on
 * every exit. A refused reservation re-plans the route to the targets whose worst case fits what
 * is left (`BUDGET_DOES_NOT_FIT` for the others) before it fails the call.
 *
 * In-memory stores answer at once: their synchronous answers are read through the one private
 * fast path (`fastPath.ts`), for budgets and permits in this module only, so that the happy path
 * runs no Effect for them. A shared store that can take both in one atomic operation (Redis, both
 * stores on one connection: `FastPath.JointAdmit`) does so, awaited once and with no fork; when no
 * permit is free then, nothing is held and the call takes the two steps. Otherwise the reservation
 * and the permit are asked for at once (one round trip: a tick's commands leave in one write); nothing is
 * sent before both are held.
 */
import { Effect, Exit, Fiber } from "effect"
import * as AgentRun from "../AgentRun.js"
import { BudgetExceeded, type Failure } from "../Errors.js"
import type { ModelCommand } from "../ModelCommand.js"
import type { ModelTarget } from "../ModelTarget.js"
import { costAt, outputCapAt } from "../Pricing.js"
import { affordableOutput, inputTokensAt, minimumUsefulOutputTokens } from "./affordable.js"
import { ExcludedTarget } from "../RouteDecision.js"
import { reportOverspend, settledReservation } from "./budgetReservation.js"
import { type Call, deadlineFailure, type EngineContext, type Holds, storeFailure } from "./call.js"
import * as FastPath from "./fastPath.js"
import type { PermitLimit } from "./permitTypes.js"
import { replanned, type Route } from "./router/decision.js"

/**
 * Reserves the worst case of `route` and takes the tenant's permit: the route the call runs on
 * (the affordable part of `route` when the budget refused the whole). Both are in `call.holds`
 * from the moment they are held; the exit handler settles them.
 */
export const admit = (ctx: EngineContext, call: Call, route: Route): Effect.Effect<Route, Failure> => {
  const holds = call.holds
  holds.route = route
  const amount = reservationOf(call, route)
  const cmd = call.command
  const reserveNow = FastPath.budgets(ctx.budgets)?.reserve
  if (reserveNow !== undefined) {
    let reserved = reserveNow(cmd.tenant, amount, call.clock.unsafeCurrentTimeMillis())
    let admitted = route
    if (reserved instanceof BudgetExceeded) {
      // Budget-aware: the targets whose worst case fits what is left, or why none does.
      const affordable = replanWithin(call, route, reserved)
      if (!("route" in affordable)) return Effect.fail(affordable)
      reserved =
        affordable.amount === undefined
          ? settledReservation(cmd.tenant, 0)
          : reserveNow(cmd.tenant, affordable.amount, call.clock.unsafeCurrentTimeMillis())
      if (reserved instanceof BudgetExceeded) return Effect.fail(budgetFailure(reserved))
      admitted = affordable.route
    }
    holds.reservation = reserved
    return takePermitNow(ctx, cmd, holds) ? Exit.succeed(admitted) : Effect.as(acquirePermit(ctx, call), admitted)
  }
  const joint = ctx.admitJointly
  if (joint !== undefined) return admitJointly(ctx, call, route, amount, joint)
  return admitSeparately(ctx, call, route, reserve(ctx, call, amount))
}

/**
 * The reservation and the permit in one store operation (uninterruptible, so that its outcome is
 * never lost halfway; bounded by the call's deadline); a refused reservation re-plans as below, and
 * no free permit takes the two steps.
 */
const admitJointly = (
  ctx: EngineContext,
  call: Call,
  route: Route,
  amount: number,
  joint: FastPath.JointAdmit
): Effect.Effect<Route, Failure> =>
  Effect.flatMap(
    Effect.uninterruptible(
      Effect.matchEffect(joint(call.command.tenant, amount, call.deadline), {
        onFailure: (e) => Effect.fail(storeFailure(e)),
        onSuccess: (outcome) => {
          if (outcome !== undefined && !(outcome instanceof BudgetExceeded)) {
            const holds = call.holds
            holds.reservation = outcome.reservation
            holds.permit = outcome.permit
            holds.permitWaitMs = 0
          }
          return Effect.succeed(outcome)
        }
      })
    ),
    (outcome): Effect.Effect<Route, Failure> => {
      if (outcome === undefined) return admitSeparately(ctx, call, route, reserve(ctx, call, amount))
      if (outcome instanceof BudgetExceeded) {
        return admitSeparately(ctx, call, route, Effect.fail(budgetFailure(outcome)))
      }
      return Effect.succeed(route)
    }
  )

/**
 * The reservation (`reserved`: its store operation, or the refusal to re-plan from) and the permit
 * in two steps, over stores with I/O.
 */
const admitSeparately = (
  ctx: EngineContext,
  call: Call,
  route: Route,
  reservedFirst: Effect.Effect<void, Failure>
): Effect.Effect<Route, Failure> => {
  const holds = call.holds
  const cmd = call.command
  const reserved = reservedFirst.pipe(
    Effect.catchIf(
      (f): f is Extract<Failure, { readonly _tag: "BudgetExceeded" }> => f._tag === "BudgetExceeded",
      (f) => {
        const affordable = replanWithin(call, route, f)
        if (!("route" in affordable)) return Effect.fail(affordable)
        if (affordable.amount !== undefined) return reserve(ctx, call, affordable.amount)
        holds.reservation = settledReservation(cmd.tenant, 0)
        return Effect.void
      }
    )
  )
  // The route the reservation settled on (`replanWithin` replaces it).
  const admitted = Effect.sync(() => holds.route ?? route)
  // A permit free at once (in memory, unbounded): taken here; the exit handler gives it back if
  // the reservation fails.
  if (takePermitNow(ctx, cmd, holds)) return Effect.zipRight(reserved, admitted)
  // The permit's fiber is awaited, not joined (`Effect.all` joins and merges fiber refs: measured
  // at twice the CPU per call of this).
  return Effect.flatMap(Effect.fork(acquirePermit(ctx, call)), (permit) =>
    Effect.matchCauseEffect(reserved, {
      onFailure: (cause) => Effect.zipRight(Fiber.interrupt(permit), Effect.failCause(cause)),
      onSuccess: () => Effect.flatten(Fiber.await(permit))
    })
  ).pipe(Effect.zipRight(admitted))
}

/**
 * The admission's services in the engine context: budgets, concurrency, and their joint admission
 * when both are over one shared store that has one (resolved once).
 */
export const admissionServices = (
  budgets: EngineContext["budgets"],
  concurrency: EngineContext["concurrency"]
): Pick<EngineContext, "budgets" | "concurrency" | "admitJointly"> => {
  const pools = FastPath.concurrencyPools(concurrency)
  const admitJointly = pools === undefined ? undefined : FastPath.budgetsJoint(budgets)?.jointWith(pools.tenants)
  return { budgets, concurrency, admitJointly }
}

/** Takes the tenant's permit when the store answers at once; `false` when it has to wait. */
const takePermitNow = (ctx: EngineContext, cmd: ModelCommand, holds: Holds): boolean => {
  const permit = FastPath.concurrency(ctx.concurrency)?.acquire(cmd.tenant, cmd.workflow)
  if (permit === undefined) return false
  holds.permit = permit
  holds.permitWaitMs = 0
  return true
}

/** Waits for the tenant's permit until the deadline; returned by the exit handler. */
const acquirePermit = (ctx: EngineContext, call: Call): Effect.Effect<void, Failure> =>
  Effect.clockWith((clock) => {
    const queuedAt = clock.unsafeCurrentTimeMillis()
    let limit: PermitLimit | undefined
    const refused = (hit: PermitLimit) => {
      limit = hit
    }
    const { tenant, workflow } = call.command
    return Effect.uninterruptibleMask((restore) =>
      Effect.matchEffect(restore(ctx.concurrency.acquire(tenant, workflow, call.deadline, refused)), {
        onFailure: (e) => Effect.fail(storeFailure(e)),
        onSuccess: (permit): Effect.Effect<void, Failure> => {
          const at = clock.unsafeCurrentTimeMillis()
          call.holds.permitWaitMs = at - queuedAt
          if (permit === undefined) {
            const failure = deadlineFailure(call, "queue", at)
            return Effect.fail(limit === undefined ? failure : { ...failure, permitLimit: limit })
          }
          call.holds.permit = permit
          return Effect.void
        }
      })
    )
  })

/** Reserves `amount` for the call; the reservation is settled by the exit handler, whatever the exit. */
const reserve = (ctx: EngineContext, call: Call, amount: number): Effect.Effect<void, Failure> =>
  Effect.uninterruptible(
    Effect.matchEffect(ctx.budgets.reserve(call.command.tenant, amount, call.deadline), {
      onFailure: (e): Effect.Effect<never, Failure> =>
        Effect.fail(e._tag === "StoreError" ? storeFailure(e) : budgetFailure(e)),
      onSuccess: (reservation) => {
        call.holds.reservation = reservation
        return Effect.void
      }
    })
  )

const budgetFailure = (e: BudgetExceeded): Failure => ({
  _tag: "BudgetExceeded",
  tenant: e.tenant,
  limit: e.limit,
  committed: e.committed,
  reserved: e.reserved,
  requested: e.requested,
  reason: e.reason,
  ...(e.fix === undefined ? {} : { fix: e.fix })
})

/** The worst case of `target` for an input of `estimatedInput` tokens (before its safety factor). */
export const worstCaseAt = (
  estimatedInput: number,
  route: Route,
  command: ModelCommand,
  target: ModelTarget
): number => {
  const input = inputTokensAt(estimatedInput, target)
  // The output capped to what is left of the target's window after the input (the attempt's cap).
  return costAt(
    target,
    input,
    outputCapAt(command.maxOutputTokens, route.compiled.workflow.maxOutputTokens, target, input)
  )
}

/**
 * The call's reservation for `route`: the worst case over its targets, capped by the call's and
 * the workflow's maxCost and by what is left of its run's budget (carved from the run until the
 * call settles); 0 when nothing needed a count. Sets the call's estimated cost.
 */
const reservationOf = (call: Call, route: Route): number => {
  if (route.inputTokens === undefined) return 0
  const cmd = call.command
  let worst = 0
  for (const t of route.targets) worst = Math.max(worst, worstCaseAt(route.inputTokens, route, cmd, t))
  const first = route.targets[0]
  call.holds.estimatedCost = first === undefined ? undefined : worstCaseAt(route.inputTokens, route, cmd, first)
  let amount = cappedCost(call, route, worst)
  const run = call.run
  if (run !== undefined && run.budget !== undefined) {
    run.reserved -= call.holds.runReserved
    amount = Math.min(amount, AgentRun.remainingBudget(run))
    call.holds.runReserved = amount
    run.reserved += amount
  }
  return amount
}

/** `cost` capped by the call's and the workflow's maxCost. */
const cappedCost = (call: Call, route: Route, cost: number): number =>
  Math.min(cost, call.command.maxCost ?? Infinity, route.compiled.workflow.maxCost ?? Infinity)

/** What a refused reservation re-plans to: the route and the amount to reserve for it (none: degrade). */
interface Replan {
  readonly route: Route
  /** `undefined`: nothing fits and the workflow degrades; nothing is reserved. */
  readonly amount: number | undefined
}

/**
 * Budget-aware choice, after the tenant's budget refused the reservation: what is left (read from
 * the refusal: limit − committed − reserved) keeps only the targets whose capped worst case fits;
 * the others are excluded as `BUDGET_DOES_NOT_FIT` (by target, not ref: a new model version and
 * the running one share a ref). Under `allowFallback: false` with no routed target that fits, the
 * targets the fallback rule held back are tried in their order and the first that fits serves
 * alone: picking what the budget affords is not a fallback. The call's route becomes that route
 * and the amount to reserve its worst case. When no target fits, a workflow with a degrade handler
 * degrades (an empty route, nothing reserved); otherwise `BudgetExceeded` names what the cheapest
 * would need and how to fit. An undeclared tenant is refused as it is. Runs only when a
 * reservation was refused: the happy path pays nothing for it.
 */
const replanWithin = (
  call: Call,
  route: Route,
  refused: {
    readonly limit: number
    readonly committed: number
    readonly reserved: number
    readonly requested: number
    readonly reason?: "limit" | "undeclared_tenant" | undefined
  }
): Replan | Failure => {
  const tenant = call.command.tenant
  const { limit, committed, reserved } = refused
  if (refused.reason === "undeclared_tenant") {
    return {
      _tag: "BudgetExceeded",
      tenant,
      limit,
      committed,
      reserved,
      requested: refused.requested,
      reason: "undeclared_tenant"
    }
  }
  const left = Math.max(0, limit - committed - reserved)
  const input = route.inputTokens
  const kept: Array<ModelTarget> = []
  const dropped: Array<ExcludedTarget> = []
  let cheapest: { readonly target: ModelTarget; readonly need: number } | undefined
  /** Whether `t` fits what is left; the ones that do not are dropped, the cheapest remembered. */
  const fits = (t: ModelTarget): boolean => {
    const need = input === undefined ? 0 : cappedCost(call, route, worstCaseAt(input, route, call.command, t))
    if (cheapest === undefined || need < cheapest.need) cheapest = { target: t, need }
    if (need <= left) return true
    dropped.push(budgetExclusion(route, t, need, left))
    return false
  }
  for (const t of route.targets) if (fits(t)) kept.push(t)
  let excluded = route.excluded
  if (kept.length === 0 && !route.compiled.workflow.allowFallback) {
    const considered = new Set<string>()
    for (const t of heldBack(route)) {
      considered.add(t.ref)
      if (fits(t)) {
        kept.push(t)
        break
      }
    }
    excluded = excluded.filter((e) => e.reason !== "FALLBACK_NOT_ALLOWED" || !considered.has(e.target))
  }
  if (dropped.length === 0 || kept.length === 0) {
    const requested = dropped.length === 0 || cheapest === undefined ? refused.requested : cheapest.need
    const failure: Failure = {
      _tag: "BudgetExceeded",
      tenant,
      limit,
      committed,
      reserved,
      // Nothing fits: what the cheapest would need (everything fits: the amount that was refused).
      requested,
      reason: "limit",
      fix: fixFor(route, cheapest?.target, left, requested)
    }
    if (dropped.length === 0 || route.compiled.degrade === undefined) return failure
    // Nothing fits, and the workflow has a degraded mode: it serves ("cheaper eligible model or degrade").
    const empty = replanned(route, [], [...excluded, ...dropped])
    call.holds.route = empty
    call.holds.budgetRefusal = failure
    call.holds.estimatedCost = undefined
    return { route: empty, amount: undefined }
  }
  const affordable = replanned(route, kept, [...excluded, ...dropped])
  call.holds.route = affordable
  return { route: affordable, amount: reservationOf(call, affordable) }
}

/**
 * The targets the fallback rule held back (`FALLBACK_NOT_ALLOWED`): past every hard filter and
 * their breaker, so each may serve alone. In the selection's order: by score when scored, else in
 * route order (a new version's canary held back the running version of its ref: it comes first).
 */
const heldBack = (route: Route): Array<ModelTarget> => {
  const out: Array<ModelTarget> = []
  const { targets } = route.compiled
  for (const e of route.excluded) {
    if (e.reason !== "FALLBACK_NOT_ALLOWED") continue
    const t = targets.find((c) => c.ref === e.target)
    if (t !== undefined && !route.targets.includes(t) && !out.includes(t)) out.push(t)
  }
  const scores = route.scores
  const rank = (t: ModelTarget) => {
    const scored = scores === undefined ? -1 : scores.findIndex((s) => s.target === t.ref)
    return scored >= 0 ? scored : targets.indexOf(t)
  }
  return out.sort((a, b) => rank(a) - rank(b))
}

/** `BUDGET_DOES_NOT_FIT` for `t`; naming its model when another version shares its ref. */
const budgetExclusion = (route: Route, t: ModelTarget, need: number, left: number): ExcludedTarget => {
  const other = (o: ModelTarget | undefined) => o !== undefined && o !== t && o.ref === t.ref
  const shared = route.targets.some(other) || route.compiled.targets.some(other) || other(route.compiled.canaryTarget)
  const detail = `worst case ${money(need)} exceeds the ${money(left)} left of the tenant's budget${shared ? ` (model ${t.model})` : ""}`
  return new ExcludedTarget({ target: t.ref, reason: "BUDGET_DOES_NOT_FIT", detail }, { disableValidation: true })
}

/**
 * How a refused call could fit: the output cap the `left` amount pays for on the cheapest target
 * after its input, when that is still a useful answer; else a limit that covers `requested`.
 */
const fixFor = (route: Route, cheapest: ModelTarget | undefined, left: number, requested: number): string => {
  const raise = `raise the tenant's limit by at least ${money(Math.max(0, requested - left))}`
  const input = route.inputTokens
  if (cheapest === undefined || input === undefined) return raise
  const tokens = Math.min(
    affordableOutput(left, inputTokensAt(input, cheapest), cheapest),
    cheapest.capabilities.maxOutputTokens
  )
  return tokens >= minimumUsefulOutputTokens
    ? `lower maxOutputTokens to ${tokens} (what the ${money(left)} left pays for on ${cheapest.ref} after its input), or ${raise}`
    : `the input and ${minimumUsefulOutputTokens} output tokens cost more than the ${money(left)} left: ${raise}, or shorten the input`
}

/** A cost in evidence details: at most 6 significant digits. */
const money = (x: number): string => `${Number(x.toPrecision(6))}`

/** Gives the call's permit back, once. */
export const releasePermit = (holds: Holds): void => {
  if (holds.permit !== undefined) {
    holds.permit.release()
    holds.permit = undefined
  }
}

/** Settles the reservation once (commit of `spent`, or release), keeping what it found. */
export const settleMoney = (holds: Holds, spent: number): Effect.Effect<void> => {
  const reservation = holds.reservation
  if (reservation === undefined || holds.settlement !== undefined) return Effect.void
  const settleNow = FastPath.reservation(reservation)?.settle
  if (settleNow !== undefined) {
    // An in-memory store settles at once; only an overspend still has a warning and a metric to report.
    const settlement = settleNow(spent)
    holds.settlement = settlement
    return settlement.overspent > 0 ? Effect.asVoid(reportOverspend(reservation.tenant, settlement)) : Effect.void
  }
  return Effect.map(reservation.settle(spent), (settlement) => {
    holds.settlement = settlement
  })
}
