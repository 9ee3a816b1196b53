/**
 * The attempt loop of a call, as a small state machine over the disposition table: a {@link Cursor}
 * (which target, which attempt on it, the messages it sends, whether it was repaired, the context
 * window a rejection ruled out, the last failure, …) and one step, {@link attemptAt}, which makes
 * one attempt and hands its failure's disposition to {@link next}. The loop itself only follows
 * the steps until an answer, a failure, or the end of the route, which the end-of-route table
 * (`Disposition.endOfRoute`) turns into a degraded answer or the call's failure.
 */
import { Clock, Duration, Effect, Either } from "effect"
import type { Reservation } from "../Budgets.js"
import * as Disposition from "../Disposition.js"
import { type Classified, type RetryFacts, type RetryProbes, retryAfterOf } from "./disposition.js"
import type { Failure } from "../Errors.js"
import type { Message } from "../ModelCommand.js"
import type { AttemptRecord } from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import { costAt, outputCapAt } from "../Pricing.js"
import { affordableOutput, inputTokensAt, minimumUsefulOutputTokens } from "./affordable.js"
import { ExcludedTarget } from "../RouteDecision.js"
import * as Router from "./router/engine.js"
import { countInput, dispatch, type Frame, type RequestBasis, requestOf } from "./attempt.js"
import { type Answer, deadlineFailure, ranOn, storeFailure, withinDeadline } from "./call.js"
import * as FastPath from "./fastPath.js"
import { validateOutput } from "./output.js"
import * as RateLimit from "./rateLimit.js"
import { nextDelay, type RetryState, retrySchedule } from "./retry.js"

/** What the loop runs with, built once per call. */
export interface Walk extends Frame, RequestBasis {
  readonly reservation: Reservation
}

/** Where the loop is. */
export interface Cursor {
  /** The target's index in the route. */
  readonly index: number
  /** The attempt on that target, from 1. */
  readonly attempt: number
  readonly messages: ReadonlyArray<Message>
  /** This target was re-asked with the validation issues. */
  readonly repaired: boolean
  /** After a context-length rejection: only a target with a larger window may be tried. */
  readonly contextLimitedAt: number | undefined
  readonly last: Failure | undefined
  /** A target was given up for lack of time. */
  readonly stoppedForTime: boolean
  /** A valid answer the workflow's check escalated from: the call's answer if no stronger one comes. */
  readonly held: Answer | undefined
  /** The retry schedule's state on this target, once a first attempt failed. */
  readonly retry: RetryState | undefined
  /** A first attempt was admitted (the health service heard of it). */
  readonly started: boolean
}

/** One step of the loop. */
type Step =
  | { readonly _tag: "Next"; readonly cursor: Cursor }
  | { readonly _tag: "End"; readonly cursor: Cursor }
  | { readonly _tag: "Answer"; readonly answer: Answer }

/** Attempts over the route's targets, as the disposition table says, within the call's deadline. */
export const attempts = (walk: Walk): Effect.Effect<Answer, Failure> => {
  const route = walk.route
  const start: Cursor = {
    index: 0,
    attempt: 1,
    messages: walk.command.messages,
    repaired: false,
    contextLimitedAt: undefined,
    last: undefined,
    stoppedForTime: false,
    held: undefined,
    retry: undefined,
    started: false
  }
  // Nothing on the route fit the tenant's budget: the degraded answer stands in for the refusal.
  const refusal = walk.call.holds.budgetRefusal
  const first =
    refusal !== undefined && route.targets.length === 0
      ? degraded(walk, { ...start, last: refusal })
      : loop(walk, route.targets.length === 0 ? { _tag: "End", cursor: start } : { _tag: "Next", cursor: start })
  // The command's escalation, counted once the call made an attempt on its target (whatever the
  // attempt's outcome): a target skipped at attempt time was not escalated to.
  const escalation = route.escalation
  const to = escalation?.to
  if (escalation === undefined || to === undefined) return first
  return Effect.ensuring(
    first,
    Effect.suspend(() =>
      ranOn(walk.call.tally.attempts, to)
        ? Router.countEscalation(route.compiled.workflow.name, escalation)
        : Effect.void
    )
  )
}

const loop = (walk: Walk, step: Step): Effect.Effect<Answer, Failure> => {
  switch (step._tag) {
    case "Answer":
      return Effect.succeed(step.answer)
    case "End":
      return step.cursor.held !== undefined ? Effect.succeed(step.cursor.held) : endOfRoute(walk, step.cursor, true)
    case "Next":
      return Effect.flatMap(attemptAt(walk, step.cursor), (s) => loop(walk, s))
  }
}

/** The first target from `from` on that the cursor may try: a fresh start on it, or the end of the route. */
const moveTo = (walk: Walk, cursor: Cursor, from: number): Step => {
  const targets = walk.route.targets
  const limit = cursor.contextLimitedAt
  let i = from
  while (i < targets.length && limit !== undefined && targets[i]!.capabilities.contextWindow <= limit) i++
  if (i >= targets.length) return { _tag: "End", cursor }
  return {
    _tag: "Next",
    cursor: {
      ...cursor,
      index: i,
      attempt: 1,
      messages: walk.command.messages,
      repaired: false,
      retry: undefined
    }
  }
}

/** What an attempt at a target was planned with, before its rate limit and breaker were asked. */
interface Planned {
  readonly target: ModelTarget
  readonly minimumMs: number
  /** The call's time left when the attempt was planned, ms. */
  readonly remaining: number
  readonly inputTokens: number | undefined
  readonly cap: number
}

/** A step of a planned attempt that its provider rate limit let through (`rated`: what it holds, if any). */
type PlannedAttempt = (
  walk: Walk,
  cursor: Cursor,
  planned: Planned,
  rated: RateLimit.Held | undefined
) => Effect.Effect<Step, Failure>

/**
 * One attempt at the cursor: time left for it, what the reservation still pays for, the target's
 * provider rate limit and breaker, then the attempt itself; its outcome goes to {@link next}.
 * Steps that answer at once (no rate limit, breakers in memory) run no Effect.
 */
const attemptAt = (walk: Walk, cursor: Cursor): Effect.Effect<Step, Failure> => {
  const { call, route } = walk
  const target = route.targets[cursor.index]!
  const minimumMs = Duration.toMillis(target.limits.minimumAttemptTime)
  const start = call.clock.unsafeCurrentTimeMillis()
  const remaining = call.deadline - start
  if (remaining < minimumMs) return Effect.succeed(moveTo(walk, { ...cursor, stoppedForTime: true }, cursor.index + 1))
  const inputTokens = route.inputTokens === undefined ? undefined : inputTokensAt(route.inputTokens, target)
  // The output the call asks for, within the target's window after the input (input + output ≤ window).
  const wanted = outputCapAt(walk.command.maxOutputTokens, walk.compiled.workflow.maxOutputTokens, target, inputTokens)
  const cap = outputCap(walk, target, wanted, inputTokens)
  // What the reservation pays for must reach the minimum useful output, or what is asked when
  // less (a small cap or window is the caller's; an embedding produces no output: its input must fit).
  if (inputTokens !== undefined && cap < (call.mode === "embed" ? 1 : Math.min(wanted, minimumUsefulOutputTokens))) {
    return Effect.fail(unaffordable(walk, target, inputTokens))
  }
  const planned: Planned = { target, minimumMs, remaining, inputTokens, cap }
  // A provider rate limit without headroom: the target is skipped (see `RateLimits`).
  if (walk.ctx.rateLimits === undefined || target.rateLimit === undefined) return rateChecked(walk, cursor, planned)
  return Effect.flatMap(takeRateLimit(walk, target, cursor.messages, inputTokens, cap, start), (rated) =>
    rateChecked(walk, cursor, planned, rated)
  )
}

/** After the rate limit: skipped when it had no headroom, else the target's breaker. */
const rateChecked = (
  walk: Walk,
  cursor: Cursor,
  planned: Planned,
  rated?: RateLimit.Held | ExcludedTarget
): Effect.Effect<Step, Failure> => {
  const target = planned.target
  if (rated instanceof ExcludedTarget) {
    walk.call.tally.skipped.push(rated)
    return Effect.succeed(moveTo(walk, cursor, cursor.index + 1))
  }
  const onBreaker = (open: boolean): Effect.Effect<Step, Failure> => {
    if (open) return admitted(walk, cursor, planned, rated)
    if (rated !== undefined) RateLimit.settle(rated, undefined, false)
    walk.call.tally.skipped.push(breakerOpen(target))
    return Effect.succeed(moveTo(walk, cursor, cursor.index + 1))
  }
  // An answer at once (breakers off, in memory) runs no Effect; a breaker store that cannot
  // answer fails the call (closed).
  const now = FastPath.health(walk.ctx.health)?.tryAcquire?.(target)
  if (now !== undefined) return onBreaker(now)
  return Effect.flatMap(Effect.mapError(walk.ctx.health.tryAcquire(target), storeFailure), onBreaker)
}

/** Admitted by its breaker: the call's first attempt is announced to health, then the attempt is sent. */
const admitted: PlannedAttempt = (walk, cursor, planned, rated) => {
  const { ctx, call } = walk
  call.holds.admitted = planned.target
  if (cursor.started) return send(walk, cursor, planned, rated)
  const here = { ...cursor, started: true }
  // Health in memory (or off) deposits at once: nothing to run.
  const firstNow = FastPath.health(ctx.health)?.onFirstAttempt
  if (firstNow === undefined) {
    return Effect.zipRight(
      ctx.health.onFirstAttempt,
      Effect.suspend(() => send(walk, here, planned, rated))
    )
  }
  firstNow(call.clock.unsafeCurrentTimeMillis())
  return send(walk, here, planned, rated)
}

/** The attempt itself; its outcome judged. */
const send: PlannedAttempt = (walk, cursor, planned, rated) => {
  const { ctx, call } = walk
  const { target, cap, inputTokens, minimumMs } = planned
  const perAttemptMs = Duration.toMillis(target.limits.perAttemptTimeout)
  const request = requestOf(walk, target, cursor.messages, cap, Math.min(planned.remaining, perAttemptMs))
  return Effect.flatMap(
    dispatch(walk, { index: cursor.index, number: cursor.attempt, request, inputTokens, minimumMs }),
    (c): Effect.Effect<Step, Failure> => {
      if (rated !== undefined)
        RateLimit.settle(rated, c === undefined ? undefined : lastRecord(walk).usage, c !== undefined)
      if (c !== undefined) return judged(walk, cursor, target, c)
      // The target's concurrency cap stayed full until too little time was left for it.
      call.holds.admitted = undefined
      return Effect.as(ctx.health.release(target), moveTo(walk, { ...cursor, stoppedForTime: true }, cursor.index + 1))
    }
  )
}

/** The output cap of an attempt: `wanted` (the command's, the workflow's, the target's and its window's), within what the reservation still pays for. */
const outputCap = (walk: Walk, target: ModelTarget, wanted: number, inputTokens: number | undefined): number =>
  inputTokens === undefined
    ? wanted
    : Math.min(wanted, affordableOutput(walk.reservation.amount - walk.call.tally.spent, inputTokens, target))

/** The rest of the call's reservation no longer pays for an attempt at `target`. */
const unaffordable = (walk: Walk, target: ModelTarget, inputTokens: number): Failure => ({
  _tag: "BudgetExceeded",
  tenant: walk.command.tenant,
  limit: walk.reservation.amount,
  committed: walk.call.tally.spent,
  reserved: walk.reservation.amount,
  requested: costAt(target, inputTokens, minimumUsefulOutputTokens),
  reason: "limit",
  fix: `the rest of the call's reservation no longer pays for the input and ${minimumUsefulOutputTokens} output tokens on ${target.ref}: raise maxCost or the tenant's limit`
})

const takeRateLimit = (
  walk: Walk,
  target: ModelTarget,
  messages: ReadonlyArray<Message>,
  inputTokens: number | undefined,
  cap: number,
  start: number
): Effect.Effect<RateLimit.Held | ExcludedTarget | undefined, Failure> => {
  const limits = walk.ctx.rateLimits
  const limit = target.rateLimit
  if (limit === undefined || limits === undefined) return Effect.succeed(undefined)
  const take = (counted: number) =>
    Effect.mapError(RateLimit.take(limits, target, limit, counted + cap, start, walk.call.deadline), storeFailure)
  if (inputTokens !== undefined) return take(inputTokens)
  // Not counted by the router: counted once for the call, by the one sliced counter.
  return Effect.flatMap(countInput(walk.call, walk.route, messages), (n) => take(inputTokensAt(n, target)))
}

const breakerOpen = (target: ModelTarget): ExcludedTarget =>
  new ExcludedTarget(
    { target: target.ref, reason: "BREAKER_OPEN", detail: "circuit breaker open" },
    { disableValidation: true }
  )

const lastRecord = (walk: Walk): AttemptRecord => walk.call.tally.attempts[walk.call.tally.attempts.length - 1]!

/**
 * An attempt that ended: an answer is validated (and may be escalated by the workflow's check); a
 * failure, or an answer that failed validation, goes through the disposition table to {@link next}.
 */
const judged = (walk: Walk, cursor: Cursor, target: ModelTarget, c: Classified): Effect.Effect<Step, Failure> => {
  const { call, compiled } = walk
  const w = compiled.workflow
  if (c.failure !== undefined) return decided(walk, cursor, target, c.failure, undefined, c)
  const response = c.response
  const validated = validateOutput(compiled, target, response)
  if (Either.isLeft(validated)) {
    call.tally.schemaValid = false
    // The attempt answered; its answer failed validation.
    const attempts = call.tally.attempts
    const invalid = Disposition.rowOf(validated.left, answeredFacts).outcome
    attempts[attempts.length - 1] = { ...lastRecord(walk), outcome: invalid, errorTag: validated.left._tag }
    return decided(walk, cursor, target, validated.left, response.text, c)
  }
  call.tally.schemaValid = validated.right.valid
  const answer: Answer = {
    target,
    text: response.text,
    value: validated.right.value,
    toolCalls: response.toolCalls,
    finishReason: response.finishReason,
    schemaValid: validated.right.valid,
    degraded: false
  }
  // The workflow's check on the validated value: a stronger target answers again.
  const check = compiled.escalationCheck
  if (check !== undefined && validated.right.valid === true && check(validated.right.value)) {
    const up = escalateFrom(walk, cursor.index, "check")
    if (up !== undefined) {
      const stronger = moveTo(walk, { ...cursor, held: answer }, up.index)
      return Effect.as(Router.countEscalation(w.name, up.escalation), stronger)
    }
  }
  return Effect.succeed({ _tag: "Answer", answer })
}

/** The disposition of a failed attempt (`repairText`: the answer that failed validation). */
const decided = (
  walk: Walk,
  cursor: Cursor,
  target: ModelTarget,
  failure: Failure,
  repairText: string | undefined,
  c: Classified
): Effect.Effect<Step, Failure> => {
  const w = walk.compiled.workflow
  const disposition = Disposition.decide(failure, {
    possiblyProcessed: c.possiblyProcessed,
    sideEffectingTools: walk.command.allowsStateChangingTools,
    committed: walk.call.tally.committed,
    repairAvailable: w.repair && !cursor.repaired && repairText !== undefined,
    cutByDeadline: c.cutByDeadline,
    escalateOnInvalidOutput: w.escalation?.onInvalidOutput
  })
  return next(walk, { ...cursor, last: failure }, target, disposition, repairText)
}

/** What is known of an attempt that answered. */
const answeredFacts: Disposition.AttemptFacts = {
  possiblyProcessed: true,
  sideEffectingTools: false,
  committed: false,
  repairAvailable: false,
  cutByDeadline: false
}

/** The cursor after a failed attempt, as its disposition says. */
const next = (
  walk: Walk,
  cursor: Cursor,
  target: ModelTarget,
  disposition: Disposition.Disposition,
  repairText: string | undefined
): Effect.Effect<Step, Failure> => {
  switch (disposition._tag) {
    case "Stop":
      // An answer the check escalated from stands when the stronger target cannot answer.
      return cursor.held !== undefined
        ? Effect.succeed({ _tag: "Answer", answer: cursor.held })
        : Effect.fail(disposition.failure)
    case "Escalate": {
      const up = escalateFrom(walk, cursor.index, "invalid_output")
      if (up === undefined) return Effect.succeed(moveTo(walk, cursor, cursor.index + 1))
      return Effect.as(
        Router.countEscalation(walk.compiled.workflow.name, up.escalation),
        moveTo(walk, cursor, up.index)
      )
    }
    case "NextTarget":
      return Effect.succeed(moveTo(walk, cursor, cursor.index + 1))
    case "NextLargerTarget":
      return Effect.succeed(
        moveTo(walk, { ...cursor, contextLimitedAt: target.capabilities.contextWindow }, cursor.index + 1)
      )
    case "Repair": {
      const issues = cursor.last?._tag === "InvalidOutput" ? cursor.last.issues : []
      const messages = repairMessages(walk.command.messages, repairText ?? "", issues)
      return Effect.succeed({
        _tag: "Next",
        cursor: { ...cursor, attempt: cursor.attempt + 1, repaired: true, messages }
      })
    }
    case "Retry":
      return retry(walk, cursor, target)
  }
}

/** A `Retry` row through the retry gate: the same target again (after its delay), or the next target. */
const retry = (walk: Walk, cursor: Cursor, target: ModelTarget): Effect.Effect<Step, Failure> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const { ctx, call } = walk
    const schedule = retrySchedule(walk.compiled.workflow.retry)
    let state: RetryState = cursor.retry ?? schedule.initial
    const probes: RetryProbes = {
      delay: Effect.map(
        nextDelay(schedule, state, now, {
          retryAfter: cursor.last === undefined ? undefined : retryAfterOf(cursor.last)
        }),
        ([stepped, delay]) => {
          state = stepped
          return delay
        }
      ),
      breakerOpen: Effect.orElseSucceed(ctx.health.isOpen(target), () => true),
      retryToken: ctx.health.tryRetry
    }
    const facts: RetryFacts = {
      attempt: cursor.attempt,
      maxAttempts: target.limits.maxAttempts,
      now,
      deadline: call.deadline,
      minimumMs: Duration.toMillis(target.limits.minimumAttemptTime)
    }
    return Effect.flatMap(Disposition.retryGate(facts, probes), (verdict): Effect.Effect<Step> => {
      if (verdict._tag === "NoRetry") {
        if (verdict.reason === "retry_budget") call.tally.retryBudgetExhausted = true
        return Effect.succeed(moveTo(walk, cursor, cursor.index + 1))
      }
      const again = Effect.sync((): Step => {
        call.tally.retryCount++
        return { _tag: "Next", cursor: { ...cursor, attempt: cursor.attempt + 1, retry: state } }
      })
      return verdict._tag === "RetryAfter"
        ? Effect.zipRight(Effect.sleep(Duration.millis(verdict.delayMs)), again)
        : again
    })
  })

/**
 * Escalates the call from target `index` on `signal` (kept for its evidence): the stronger
 * target's index and the escalation, or `undefined` when none is stronger.
 */
const escalateFrom = (walk: Walk, index: number, signal: "invalid_output" | "check") => {
  const up = Router.escalateFrom(walk.route, index, signal)
  const tally = walk.call.tally
  tally.escalations ??= []
  tally.escalations.push(up.escalation)
  return up.index < 0 ? undefined : up
}

/** Messages for a repair attempt: the invalid answer and what was wrong with it (paths only). */
const repairMessages = (
  messages: ReadonlyArray<Message>,
  text: string,
  issues: ReadonlyArray<string>
): Array<Message> => [
  ...messages,
  { _tag: "assistant", content: text },
  {
    _tag: "user",
    content: `The previous answer did not match the required JSON schema (${issues.join("; ")}). Answer again with JSON that matches the schema exactly.`
  }
]

/**
 * The route ran out of targets: the end-of-route table says how the call ends. A degrade answer
 * that fails the schema is as no degrade handler (`degrade: false`, read again).
 */
const endOfRoute = (walk: Walk, cursor: Cursor, degrade: boolean): Effect.Effect<Answer, Failure> =>
  Effect.flatMap(Clock.currentTimeMillis, (at) => {
    const { call, route, compiled } = walk
    const policyExcluded = route.excluded.filter(
      (e) => e.reason === "DATA_REGION_MISMATCH" || e.reason === "DATA_CLASS_NOT_ALLOWED"
    )
    let smallestMinimum = Infinity
    for (const t of route.targets) {
      smallestMinimum = Math.min(smallestMinimum, Duration.toMillis(t.limits.minimumAttemptTime))
    }
    const end = Disposition.endOfRoute({
      last: cursor.last,
      stoppedForTime: cursor.stoppedForTime,
      belowMinimum: call.deadline - at < smallestMinimum,
      skipped: call.tally.skipped.length > 0,
      degrade: degrade && compiled.degrade !== undefined,
      policyExcluded: policyExcluded.length > 0,
      pastDeadline: call.tally.attempts.length > 0 && at >= call.deadline
    })
    switch (end._tag) {
      case "Degrade":
        return degraded(walk, cursor)
      case "PolicyViolation":
        return Effect.fail({ _tag: "PolicyViolation", reason: policyExcluded[0]!.reason, excluded: policyExcluded })
      case "NoEligibleRoute":
        return Effect.fail({
          _tag: "NoEligibleRoute",
          workflow: compiled.workflow.name,
          excluded: [...route.excluded, ...call.tally.skipped]
        })
      case "DeadlineExceeded":
        return Effect.fail(deadlineFailure(call, end.stage, at))
      case "Fail":
        return Effect.fail(end.failure)
    }
  })

/** The workflow's degrade answer, within the deadline; validated like a model's. */
const degraded = (walk: Walk, cursor: Cursor): Effect.Effect<Answer, Failure> => {
  const { call, compiled } = walk
  const handler = compiled.degrade
  if (handler === undefined) return endOfRoute(walk, cursor, false)
  return Effect.flatMap(withinDeadline(call, handler(walk.command), "call"), (value) => {
    const valid = compiled.decode === undefined ? true : Either.isRight(compiled.decode(value))
    if (!valid) return endOfRoute(walk, cursor, false)
    call.tally.schemaValid = compiled.schema === undefined ? undefined : true
    return Effect.succeed<Answer>({
      target: undefined,
      text: typeof value === "string" ? value : undefined,
      value: typeof value === "string" ? undefined : value,
      toolCalls: [],
      finishReason: "other",
      schemaValid: call.tally.schemaValid,
      degraded: true
    })
  })
}
