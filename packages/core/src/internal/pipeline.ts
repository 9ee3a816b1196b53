/**
 * The pipeline of one call (DESIGN §4), as a few named steps in one fiber:
 *
 *   resolve → deadline → reserve → permit → attempts → settle and record
 *
 * Each attempt: budget cap, breaker admission, dispatch under the attempt's bound (the deadline
 * scope, `deadline.ts`), record, then the disposition table (`Disposition.ts`) says what happens
 * next. `settle` runs once, in the one exit handler of the call, whatever the exit: it bills an
 * attempt cut by cancellation, returns the permit, settles the reservation, builds the evidence
 * once and hands exactly one CallRecord to telemetry and the recorder.
 *
 * Per-call state is the `Call` value below, owned by this module; adapters and the stream driver
 * see an `AttemptContext`, never the call.
 */
import { Cause, Clock, Context, Duration, Effect, Either, Exit, Fiber, Option, type Tracer } from "effect"
import type { Budgets, Reservation, Settlement } from "../Budgets.js"
import * as AgentRun from "../AgentRun.js"
import * as RunEvents from "../RunEvents.js"
import type * as CallRecorder from "../CallRecorder.js"
import type * as Concurrency from "../Concurrency.js"
import * as Disposition from "../Disposition.js"
import {
  BudgetExceeded,
  type Failure,
  fromFailure,
  type GatewayError,
  type ProviderError,
  type StoreError
} from "../Errors.js"
import type * as Health from "../Health.js"
import type { Message, ModelCommand } from "../ModelCommand.js"
import {
  type AttemptRecord,
  CallId,
  type CallRecord,
  type Content,
  type Cost,
  type Evidence,
  type FinishReason,
  ModelResult,
  Usage
} from "../ModelResult.js"
import * as ModelOptions from "../ModelOptions.js"
import type { ModelTarget } from "../ModelTarget.js"
import { affordableOutput, costAt, costOf, inputTokensAt, minimumUsefulOutputTokens, outputCapAt } from "../Pricing.js"
import type { ProviderAdapter, ProviderRequest, ProviderResponse } from "../ProviderAdapter.js"
import { type Escalation, ExcludedTarget } from "../RouteDecision.js"
import * as TokenEstimator from "../TokenEstimator.js"
import type { Route, Service as RouterService } from "../Router.js"
import { decide as routeCommand } from "../Router.js"
import * as Router from "../Router.js"
import type * as RateLimitStore from "../RateLimitStore.js"
import type * as Telemetry from "../Telemetry.js"
import * as Report from "./telemetry.js"
import type { AttemptContext, Invoke } from "./attemptContext.js"
import { reportOverspend } from "./budgetReservation.js"
import * as FastPath from "./fastPath.js"
import * as RateLimit from "./rateLimit.js"
import { bounded } from "./deadline.js"
import { outputFormatOf, validateOutput } from "./output.js"
import { retrySchedule, type Stepper, stepper } from "./retry.js"
import type * as Lifecycle from "./lifecycle.js"

/** One running configuration: its router (compiled workflows) and its version. */
export interface LiveConfig {
  readonly router: RouterService
  readonly version: string
}

/** Services and data the pipeline runs with, resolved once when the gateway is built. */
export interface EngineContext {
  /**
   * The running configuration, swapped whole by a reload (one assignment). Each call reads it once,
   * at its start, and runs on that configuration to the end.
   */
  readonly live: { current: LiveConfig }
  readonly adapters: ReadonlyMap<string, ProviderAdapter>
  readonly budgets: Budgets["Type"]
  readonly concurrency: Concurrency.Service
  readonly recorder: CallRecorder.Service
  readonly health: Health.Service
  /** Read once when the gateway is built. */
  readonly telemetry: Telemetry.Settings
  /** Where provider rate limits are counted (`ModelTarget.rateLimit`); none: they are not enforced. */
  readonly rateLimits?: RateLimitStore.Service | undefined
  /** Canary controller, quality signals and shadow traffic: run only for workflows that use them. */
  readonly lifecycle?: Lifecycle.Hooks | undefined
}

let callSeq = 0
const nextCallId = (now: number): CallId => CallId.make(`mg_${now.toString(36)}_${(++callSeq).toString(36)}`)

/** The answer of a successful call, before it gets its evidence. */
interface Answer {
  readonly target: ModelTarget | undefined
  readonly text: string | undefined
  readonly value: unknown
  readonly toolCalls: ProviderResponse["toolCalls"]
  readonly finishReason: FinishReason
  readonly schemaValid: boolean | undefined
  readonly degraded: boolean
}

/** The state of one call: owned by this module, read once at the end to build the evidence. */
interface Call {
  readonly id: CallId
  readonly startedAt: number
  readonly command: ModelCommand
  /** `embed`: the command's messages are the inputs, each attempt calls the adapter's `embed`. */
  readonly mode: "generate" | "stream" | "embed"
  /** The configuration the call started on (read once, at its start). */
  readonly config: LiveConfig
  /** The clock the caller runs with (a `TestClock` in tests). */
  readonly clock: Clock.Clock
  route: Route | undefined
  deadline: number
  estimatedCost: number | undefined
  reservation: Reservation | undefined
  /** What settling the reservation found; set once it is settled. */
  settlement: Settlement | undefined
  permit: Concurrency.Permit | undefined
  permitWaitMs: number | undefined
  /** Immutable attempt records, in order. */
  readonly attempts: Array<AttemptRecord>
  /** Targets skipped at attempt time (a half-open breaker with no probe slot left). */
  readonly skipped: Array<ExcludedTarget>
  /** Escalations inside the call (invalid output, the workflow's check), in order; made on the first. */
  escalations: Array<Escalation> | undefined
  /** Admitted by its breaker and not yet recorded: released if the call is cancelled. */
  admitted: ModelTarget | undefined
  /** The attempt in flight, billed if the call is cancelled. */
  inFlight: AttemptContext | undefined
  spent: number
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  reasoningTokens: number
  retryCount: number
  retryBudgetExhausted: boolean
  fallbackUsed: boolean
  committed: boolean
  schemaValid: boolean | undefined
  modelVersion: string | undefined
  lastTarget: ModelTarget | undefined
  lastMaxOutputTokens: number | undefined
  /** The target whose answer was used. */
  answered: ModelTarget | undefined
  result: ModelResult | undefined
  span: Tracer.Span | undefined
  /** The agent run the call is in, if any; `runId`/`step`: the command's, else the run's. */
  readonly run: AgentRun.Run | undefined
  readonly runId: string | undefined
  readonly step: number | undefined
  /** What the call holds of its run's budget until it settles. */
  runReserved: number
}

const newCall = (
  command: ModelCommand,
  mode: "generate" | "stream" | "embed",
  config: LiveConfig,
  clock: Clock.Clock,
  scope: AgentRun.Scope | undefined
): Call => {
  const now = clock.unsafeCurrentTimeMillis()
  const run = scope?.run
  if (run !== undefined) run.calls++
  return {
    id: nextCallId(now),
    startedAt: now,
    command,
    mode,
    config,
    clock,
    route: undefined,
    deadline: now,
    estimatedCost: undefined,
    reservation: undefined,
    settlement: undefined,
    permit: undefined,
    permitWaitMs: undefined,
    attempts: [],
    skipped: [],
    escalations: undefined,
    admitted: undefined,
    inFlight: undefined,
    spent: 0,
    inputTokens: 0,
    cachedInputTokens: 0,
    outputTokens: 0,
    reasoningTokens: 0,
    retryCount: 0,
    retryBudgetExhausted: false,
    fallbackUsed: false,
    committed: false,
    schemaValid: undefined,
    modelVersion: undefined,
    lastTarget: undefined,
    lastMaxOutputTokens: undefined,
    answered: undefined,
    result: undefined,
    span: undefined,
    run,
    runId: command.runId ?? run?.runId,
    step: command.step ?? (run === undefined ? undefined : (scope?.step ?? run.calls)),
    runReserved: 0
  }
}

/** Input tokens of `request` before the target's safety factor (counted when nothing limited the call). */
const estimateInput = (route: Route, request: ProviderRequest): number =>
  TokenEstimator.estimateInput({
    messages: request.messages,
    tools: request.tools,
    outputJsonSchema: route.compiled.jsonSchema
  })

/**
 * Bills an attempt that was sent and reported no usage of its own (cut by its timeout, a defect or
 * the caller's cancellation): its input, and the output delivered so far.
 */
const billSent = (call: Call, attempt: AttemptContext): { readonly usage: Usage; readonly cost: number } => {
  const usage = new Usage(
    { inputTokens: attempt.inputTokens(), outputTokens: attempt.progress.outputTokens },
    { disableValidation: true }
  )
  return { usage, cost: addUsage(call, attempt.target, usage) }
}

/** Adds an attempt's usage to the call; returns its cost. */
const addUsage = (call: Call, target: ModelTarget, usage: Usage | undefined): number => {
  if (usage === undefined) return 0
  const cost = costOf(target, usage)
  call.inputTokens += usage.inputTokens
  call.cachedInputTokens += usage.cachedInputTokens
  call.outputTokens += usage.outputTokens
  call.reasoningTokens += usage.reasoningTokens
  call.spent += cost
  return cost
}

/** The tracer Effect runs with when nobody installed one: spans are then not made at all. */
const defaultTracer = Effect.runSync(Effect.tracer)

/** The current time from the fiber's `Clock` (a `TestClock` in tests). */
const now = Clock.currentTimeMillis

/**
 * Runs one call in `mode`, with `invoke` calling the adapters, on `config` (by default the running
 * configuration, read when the call starts). Builds exactly one CallRecord.
 */
export const execute = (
  ctx: EngineContext,
  command: ModelCommand,
  mode: "generate" | "stream" | "embed",
  invoke: Invoke,
  config?: LiveConfig
): Effect.Effect<ModelResult, GatewayError> =>
  // One step reads the clock and the tracer the caller runs with.
  Effect.withFiberRuntime((fiber) => {
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const live = config ?? ctx.live.current
    const call = newCall(command, mode, live, clock, fiber.getFiberRef(AgentRun.currentScope))
    const run = pipeline(ctx, call, invoke).pipe(
      Effect.onExit((exit) => settle(ctx, call, exit)),
      Effect.mapError((failure) => fromFailure(failure, { callId: call.id, attempts: call.attempts.slice() }))
    )
    return fiber.currentTracer === defaultTracer
      ? run
      : Report.withCallSpan(
          ctx.telemetry,
          { mode, callId: call.id, workflow: command.workflow, tenant: command.tenant },
          (span) => {
            call.span = span
            return run
          }
        )
  })

/** Runs `generate` for one command. */
export const generate = (ctx: EngineContext, command: ModelCommand): Effect.Effect<ModelResult, GatewayError> =>
  execute(ctx, command, "generate", invokeGenerate)

const invokeGenerate: Invoke = (adapter, request, attempt) => bounded(adapter.generate(request), attempt.until)

// ---------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------

const storeFailure = (e: {
  readonly store: StoreError["store"]
  readonly operation: string
  readonly detail: string
}): Failure => ({ _tag: "StoreError", store: e.store, operation: e.operation, detail: e.detail })

/** resolve → deadline → reserve → permit → attempts → result. */
const pipeline = (ctx: EngineContext, call: Call, invoke: Invoke): Effect.Effect<ModelResult, Failure> => {
  const cmd = call.command
  const workflows = call.config.router.workflows
  const compiled = workflows.get(cmd.workflow)
  if (compiled !== undefined) {
    const w = compiled.workflow
    // An embedding workflow is served by `embed` only, and `embed` serves nothing else.
    if ((call.mode === "embed") !== (w.embedding !== undefined)) {
      return Effect.fail({
        _tag: "InvalidRequest",
        reason: "invalid_command",
        detail: w.embedding !== undefined ? "an embedding workflow: use embed" : "not an embedding workflow"
      })
    }
    const timeoutMs = Math.min(
      cmd.timeout !== undefined ? Duration.toMillis(cmd.timeout) : Infinity,
      Duration.toMillis(w.timeout)
    )
    call.deadline = call.startedAt + timeoutMs
  }
  const run = call.run
  if (run !== undefined) {
    // A run is one tenant's: another tenant's call inside it is refused before anything else.
    if (cmd.tenant !== run.tenant) {
      return Effect.fail({
        _tag: "InvalidRequest",
        reason: "run_tenant",
        detail: "the call's tenant is not the tenant of its agent run"
      })
    }
    // No call of a run starts once its time or money is gone; the others end by its deadline.
    const exhausted = AgentRun.exhaustedAt(run, call.startedAt)
    if (exhausted !== undefined) {
      return Effect.fail({
        _tag: "RunExhausted",
        runId: run.runId,
        reason: exhausted,
        steps: AgentRun.completedSteps(run),
        records: run.records.slice()
      })
    }
    if (compiled !== undefined) call.deadline = Math.min(call.deadline, run.deadlineAt)
    if (run.events !== undefined) {
      const pre = RunEvents.preModel(
        call.runId ?? run.runId,
        call.step,
        call.id,
        cmd.workflow,
        call.config.version,
        call.startedAt
      )
      run.events.unsafeOffer(pre)
    }
  }
  // Input is counted only when a limit needs it: the tenant's budget or the run's.
  const limited = ctx.budgets.isLimited(cmd.tenant) || (run !== undefined && run.budget !== undefined)
  const routing = routeCommand(
    workflows,
    routeViewOf(ctx),
    cmd,
    call.mode === "stream" ? "stream" : "generate",
    limited,
    call.id
  )
  return Effect.flatMap(
    // A decision that has to wait (a large input counted in slices, a breaker store round trip)
    // waits within the deadline; a settled one is read as it is.
    Exit.isExit(routing) || compiled === undefined ? routing : withinDeadline(call, routing, "before_attempt"),
    (route) => {
      call.route = route
      // Worst case over every target the call may still use, capped by the call's maxCost. Without
      // a count nothing is limited: the (unlimited) reservation is 0 and output caps do not shrink.
      const amount = reservationOf(call, route)
      const workOn = (r: Route) =>
        attempts(ctx, call, r, invoke).pipe(
          // Settled before the envelope is built, so that its evidence says what the settlement found.
          // The permit goes back with the settle (no provider work is left): on a shared store both
          // leave in one round trip.
          Effect.tap(() => {
            releasePermit(call)
            return settleMoney(call)
          }),
          Effect.flatMap((answer) => result(call, answer))
        )
      let work = workOn(route)
      // In-memory stores answer at once: reservation and permit taken here, without running an Effect.
      const reserveNow = FastPath.budgets(ctx.budgets)?.reserve
      if (reserveNow !== undefined) {
        let reserved = reserveNow(cmd.tenant, amount, call.clock.unsafeCurrentTimeMillis())
        if (reserved instanceof BudgetExceeded) {
          // Budget-aware: the targets whose worst case fits what is left, or why none does.
          const affordable = replanWithin(call, route, reserved)
          if (!("route" in affordable)) return Effect.fail(affordable)
          reserved = reserveNow(cmd.tenant, affordable.amount, call.clock.unsafeCurrentTimeMillis())
          if (reserved instanceof BudgetExceeded) return Effect.fail(budgetFailure(reserved))
          work = workOn(affordable.route)
        }
        call.reservation = reserved
        const permit = FastPath.concurrency(ctx.concurrency)?.acquire(cmd.tenant)
        if (permit !== undefined) {
          call.permit = permit
          call.permitWaitMs = 0
          return work
        }
        return Effect.zipRight(acquirePermit(ctx, call), work)
      }
      const reserved = reserve(ctx, call, amount).pipe(
        Effect.catchIf(
          (f): f is Extract<Failure, { readonly _tag: "BudgetExceeded" }> => f._tag === "BudgetExceeded",
          (f) => {
            // The call's route becomes the affordable one (`replanWithin`), which `work` then runs.
            const affordable = replanWithin(call, route, f)
            return "route" in affordable ? reserve(ctx, call, affordable.amount) : Effect.fail(affordable)
          }
        )
      )
      const afterReserve = Effect.suspend(() => (call.route === route ? work : workOn(call.route!)))
      // A permit that is free at once (an in-memory or unbounded concurrency store): taken here,
      // no fiber for it; `settle` gives it back if the reservation fails.
      const permitNow = FastPath.concurrency(ctx.concurrency)?.acquire(cmd.tenant)
      if (permitNow !== undefined) {
        call.permit = permitNow
        call.permitWaitMs = 0
        return Effect.zipRight(reserved, afterReserve)
      }
      // A shared store: the reservation and the permit are asked for at once (one round trip on an
      // auto-pipelined connection); nothing is sent before both are held. The permit's fiber is
      // awaited, not joined (`Effect.all` joins and merges fiber refs: measured at twice the CPU
      // per call of this).
      return Effect.flatMap(Effect.fork(acquirePermit(ctx, call)), (permit) =>
        Effect.matchCauseEffect(reserved, {
          onFailure: (cause) => Effect.zipRight(Fiber.interrupt(permit), Effect.failCause(cause)),
          onSuccess: () => Effect.flatten(Fiber.await(permit))
        })
      ).pipe(Effect.zipRight(afterReserve))
    }
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
  call.estimatedCost = worstCaseAt(route.inputTokens, route, cmd, route.targets[0]!)
  let amount = cappedCost(call, route, worst)
  const run = call.run
  if (run !== undefined && run.budget !== undefined) {
    run.reserved -= call.runReserved
    amount = Math.min(amount, AgentRun.remainingBudget(run))
    call.runReserved = amount
    run.reserved += amount
  }
  return amount
}

/** `cost` capped by the call's and the workflow's maxCost. */
const cappedCost = (call: Call, route: Route, cost: number): number =>
  Math.min(cost, call.command.maxCost ?? Infinity, route.compiled.workflow.maxCost ?? Infinity)

/**
 * Budget-aware choice, after the tenant's budget refused the reservation: what is left (read from
 * the refusal: limit − committed − reserved) keeps only the targets whose capped worst case fits;
 * the others are excluded as `BUDGET_DOES_NOT_FIT`. The call's route becomes that route and the
 * amount to reserve its worst case; when no target fits, `BudgetExceeded` names what the cheapest
 * would need. Runs only when a reservation was refused: the happy path pays nothing for it.
 */
const replanWithin = (
  call: Call,
  route: Route,
  refused: {
    readonly limit: number
    readonly committed: number
    readonly reserved: number
    readonly requested: number
  }
): { readonly route: Route; readonly amount: number } | Failure => {
  const left = Math.max(0, refused.limit - refused.committed - refused.reserved)
  const input = route.inputTokens
  const needs = route.targets.map((t) =>
    input === undefined ? 0 : cappedCost(call, route, worstCaseAt(input, route, call.command, t))
  )
  const drop: Array<{ target: ModelTarget; reason: "BUDGET_DOES_NOT_FIT"; detail: string }> = []
  let cheapest = Infinity
  route.targets.forEach((t, i) => {
    const need = needs[i]!
    cheapest = Math.min(cheapest, need)
    if (need > left) {
      drop.push({
        target: t,
        reason: "BUDGET_DOES_NOT_FIT",
        detail: `worst case ${money(need)} exceeds the ${money(left)} left of the tenant's budget`
      })
    }
  })
  if (drop.length === route.targets.length || drop.length === 0) {
    return {
      _tag: "BudgetExceeded",
      tenant: call.command.tenant,
      limit: refused.limit,
      committed: refused.committed,
      reserved: refused.reserved,
      // Nothing fits: what the cheapest would need (everything fits: the amount that was refused).
      requested: drop.length === 0 ? refused.requested : cheapest
    }
  }
  const affordable = Router.withoutTargets(route, drop)
  call.route = affordable
  return { route: affordable, amount: reservationOf(call, affordable) }
}

/** A cost in evidence details: at most 6 significant digits. */
const money = (x: number): string => `${Number(x.toPrecision(6))}`

/** The router's view of route health per engine: the health service, plus capped targets' concurrency headroom. */
const routeViews = new WeakMap<EngineContext, Router.BreakerView>()
const routeViewOf = (ctx: EngineContext): Router.BreakerView => {
  let view = routeViews.get(ctx)
  if (view === undefined) {
    const headroom = ctx.concurrency.targetHeadroom
    view =
      headroom === undefined
        ? ctx.health
        : { isOpen: ctx.health.isOpen, snapshot: ctx.health.snapshot, concurrencyHeadroom: headroom }
    routeViews.set(ctx, view)
  }
  return view
}

/** Runs `self` within the call's deadline; `DeadlineExceeded` at `stage` when the deadline comes first. */
const withinDeadline = <A>(
  call: Call,
  self: Effect.Effect<A, Failure>,
  stage: "before_attempt" | "call"
): Effect.Effect<A, Failure> =>
  Effect.flatMap(bounded(self, call.deadline), (done) =>
    Option.isSome(done)
      ? Effect.succeed(done.value)
      : Effect.flatMap(now, (at) => Effect.fail(deadlineFailure(call, stage, at)))
  )

const worstCaseAt = (estimatedInput: number, route: Route, command: ModelCommand, target: ModelTarget): number =>
  costAt(
    target,
    inputTokensAt(estimatedInput, target),
    outputCapAt(command.maxOutputTokens, route.compiled.workflow.maxOutputTokens, target)
  )

/** Reserves the call's worst case; the reservation is settled by `settle`, whatever the exit. */
const reserve = (ctx: EngineContext, call: Call, amount: number): Effect.Effect<void, Failure> =>
  Effect.uninterruptible(
    Effect.matchEffect(ctx.budgets.reserve(call.command.tenant, amount, call.deadline), {
      onFailure: (e): Effect.Effect<never, Failure> =>
        Effect.fail(e._tag === "StoreError" ? storeFailure(e) : budgetFailure(e)),
      onSuccess: (reservation) => {
        call.reservation = reservation
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
  requested: e.requested
})

/** Waits for the tenant's permit until the deadline; returned by `settle`. */
const acquirePermit = (ctx: EngineContext, call: Call): Effect.Effect<void, Failure> =>
  Effect.clockWith((clock) => {
    const queuedAt = clock.unsafeCurrentTimeMillis()
    return Effect.uninterruptibleMask((restore) =>
      Effect.matchEffect(restore(ctx.concurrency.acquire(call.command.tenant, call.command.workflow, call.deadline)), {
        onFailure: (e) => Effect.fail(storeFailure(e)),
        onSuccess: (permit): Effect.Effect<void, Failure> => {
          const at = clock.unsafeCurrentTimeMillis()
          call.permitWaitMs = at - queuedAt
          if (permit === undefined) return Effect.fail(deadlineFailure(call, "queue", at))
          call.permit = permit
          return Effect.void
        }
      })
    )
  })

const deadlineFailure = (call: Call, stage: "queue" | "before_attempt" | "attempt" | "call", at: number): Failure => ({
  _tag: "DeadlineExceeded",
  stage,
  timeoutMs: call.deadline - call.startedAt,
  elapsedMs: at - call.startedAt
})

/** The envelope of a successful call, with its evidence (built once, here). */
const result = (call: Call, answer: Answer): Effect.Effect<ModelResult> =>
  Effect.clockWith((clock) => {
    const r = new ModelResult(
      {
        content: { text: answer.text, value: answer.value, toolCalls: answer.toolCalls } satisfies Content,
        finishReason: answer.finishReason,
        evidence: evidenceOf(call, answer, clock.unsafeCurrentTimeMillis())
      },
      { disableValidation: true }
    )
    call.answered = answer.target
    call.result = r
    // Session affinity follows the target that served the call (after any fallback or escalation).
    const sessionKey = call.command.sessionKey
    if (
      sessionKey !== undefined &&
      answer.target !== undefined &&
      call.route?.compiled.workflow.selection === "scored"
    ) {
      Router.rememberServed(call.config.router.workflows, call.command.workflow, sessionKey, answer.target.ref)
    }
    return Effect.succeed(r)
  })

// ---------------------------------------------------------------------------------------------
// Attempts
// ---------------------------------------------------------------------------------------------

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

/** How one dispatched attempt ended. */
type AttemptEnd =
  | { readonly _tag: "Answered"; readonly response: ProviderResponse }
  | {
      readonly _tag: "Failed"
      readonly failure: Failure
      readonly possiblyProcessed: boolean
      readonly cutByDeadline: boolean
    }

/**
 * Escalates the call from target `i` of `route` on `signal` (kept for its evidence): the stronger
 * target's index and the escalation, or `undefined` when none is stronger.
 */
const escalateFrom = (call: Call, route: Route, i: number, signal: "invalid_output" | "check") => {
  const up = Router.escalateFrom(route, i, signal)
  call.escalations ??= []
  call.escalations.push(up.escalation)
  return up.index < 0 ? undefined : up
}

/**
 * Attempts over the eligible targets in order, each retried as the disposition table and the
 * retry schedule allow, all within the call's deadline.
 */
const attempts = (ctx: EngineContext, call: Call, route: Route, invoke: Invoke): Effect.Effect<Answer, Failure> =>
  Effect.gen(function* () {
    const { compiled } = route
    const w = compiled.workflow
    const cmd = call.command
    const reservation = call.reservation!
    let last: Failure | undefined
    let stoppedForTime = false
    let contextLimitedAt: number | undefined
    let first = true
    // The command's escalation signal, counted once the call runs.
    if (route.escalation?.to !== undefined) yield* Router.countEscalation(w.name, route.escalation)
    /** A valid answer the workflow's check escalated from: the call's answer if no stronger one comes. */
    let held: Answer | undefined
    targets: for (let i = 0; i < route.targets.length; i++) {
      const target = route.targets[i]!
      // After a context-length rejection only a larger-context target may be tried.
      if (contextLimitedAt !== undefined && target.capabilities.contextWindow <= contextLimitedAt) continue
      // The retry schedule exists only once a first attempt failed.
      let schedule: Stepper | undefined
      const limits = target.limits
      const minimumMs = Duration.toMillis(limits.minimumAttemptTime)
      const perAttemptMs = Duration.toMillis(limits.perAttemptTimeout)
      let messages: ReadonlyArray<Message> = cmd.messages
      let repaired = false
      for (let attemptNo = 1; attemptNo <= limits.maxAttempts + (repaired ? 1 : 0); attemptNo++) {
        const start = yield* now
        const remaining = call.deadline - start
        if (remaining < minimumMs) {
          stoppedForTime = true
          break
        }
        const inputTokens = route.inputTokens === undefined ? undefined : inputTokensAt(route.inputTokens, target)
        const outputCap = outputCapAt(cmd.maxOutputTokens, w.maxOutputTokens, target)
        const cap =
          inputTokens === undefined
            ? outputCap
            : Math.min(outputCap, affordableOutput(reservation.amount - call.spent, inputTokens, target))
        // An embedding produces no output: only its input must fit.
        if (inputTokens !== undefined && cap < (call.mode === "embed" ? 1 : minimumUsefulOutputTokens)) {
          return yield* Effect.fail<Failure>({
            _tag: "BudgetExceeded",
            tenant: cmd.tenant,
            limit: reservation.amount,
            committed: call.spent,
            reserved: reservation.amount,
            requested: costAt(target, inputTokens, minimumUsefulOutputTokens)
          })
        }
        // A provider rate limit without headroom: the target is skipped (see `RateLimits`).
        let rated: RateLimit.Held | undefined
        if (target.rateLimit !== undefined && ctx.rateLimits !== undefined) {
          const tokens =
            (inputTokens ??
              inputTokensAt(
                TokenEstimator.estimateInput({ messages, tools: cmd.tools, outputJsonSchema: compiled.jsonSchema }),
                target
              )) + cap
          const taken = yield* Effect.mapError(
            RateLimit.take(ctx.rateLimits, target, target.rateLimit, tokens, start),
            storeFailure
          )
          if (taken instanceof ExcludedTarget) {
            call.skipped.push(taken)
            break
          }
          rated = taken
        }
        if (!(yield* admit(ctx, target))) {
          if (rated !== undefined) RateLimit.settle(rated, undefined, false)
          call.skipped.push(
            new ExcludedTarget(
              { target: target.ref, reason: "BREAKER_OPEN", detail: "circuit breaker open" },
              { disableValidation: true }
            )
          )
          break
        }
        call.admitted = target
        if (first) {
          first = false
          // Health in memory (or off) deposits at once: nothing to run.
          const firstNow = FastPath.health(ctx.health)?.onFirstAttempt
          if (firstNow !== undefined) firstNow(call.clock.unsafeCurrentTimeMillis())
          else yield* ctx.health.onFirstAttempt
        }
        const request: ProviderRequest = {
          target,
          messages,
          tools: cmd.tools ?? [],
          toolChoice: cmd.toolChoice,
          output: outputFormatOf(compiled, target),
          maxOutputTokens: cap,
          timeout: Duration.millis(Math.min(remaining, perAttemptMs)),
          options: ModelOptions.forTarget(route.options, target.capabilities.options),
          providerOptions: ModelOptions.forProvider(route.options, target.provider)
        }
        const end = yield* dispatch(ctx, call, route, i, attemptNo, request, inputTokens, minimumMs, invoke)
        if (rated !== undefined) {
          RateLimit.settle(
            rated,
            end === undefined ? undefined : call.attempts[call.attempts.length - 1]?.usage,
            end !== undefined
          )
        }
        if (end === undefined) {
          // The target's concurrency cap stayed full until too little time was left for it.
          call.admitted = undefined
          yield* ctx.health.release(target)
          stoppedForTime = true
          break
        }
        let failure: Failure
        let possiblyProcessed = true
        let cutByDeadline = false
        let repairText: string | undefined
        if (end._tag === "Answered") {
          const validated = validateOutput(compiled, target, end.response)
          if (Either.isRight(validated)) {
            call.schemaValid = validated.right.valid
            const answer: Answer = {
              target,
              text: end.response.text,
              value: validated.right.value,
              toolCalls: end.response.toolCalls,
              finishReason: end.response.finishReason,
              schemaValid: validated.right.valid,
              degraded: false
            }
            // The workflow's check on the validated value: a stronger target answers again.
            const check = compiled.escalationCheck
            if (check !== undefined && validated.right.valid === true && check(validated.right.value)) {
              const up = escalateFrom(call, route, i, "check")
              if (up !== undefined) {
                held = answer
                yield* Router.countEscalation(w.name, up.escalation)
                i = up.index - 1
                continue targets
              }
            }
            return answer
          }
          failure = validated.left
          call.schemaValid = false
          // The attempt answered; its answer failed validation.
          const answered = call.attempts[call.attempts.length - 1]!
          call.attempts[call.attempts.length - 1] = {
            ...answered,
            outcome: "invalid_output",
            errorTag: "InvalidOutput"
          } satisfies AttemptRecord
          repairText = end.response.text
        } else {
          failure = end.failure
          possiblyProcessed = end.possiblyProcessed
          cutByDeadline = end.cutByDeadline
        }
        last = failure
        const next = Disposition.decide(failure, {
          possiblyProcessed,
          sideEffectingTools: cmd.allowsStateChangingTools,
          committed: call.committed,
          repairAvailable: w.repair && !repaired && repairText !== undefined,
          cutByDeadline,
          escalateOnInvalidOutput: w.escalation?.onInvalidOutput
        })
        switch (next._tag) {
          case "Stop":
            // An answer the check escalated from stands when the stronger target cannot answer.
            if (held !== undefined) return held
            return yield* Effect.fail(next.failure)
          case "Escalate": {
            const up = escalateFrom(call, route, i, "invalid_output")
            if (up === undefined) continue targets
            yield* Router.countEscalation(w.name, up.escalation)
            i = up.index - 1
            continue targets
          }
          case "NextTarget":
            continue targets
          case "NextLargerTarget":
            contextLimitedAt = target.capabilities.contextWindow
            continue targets
          case "Repair":
            repaired = true
            messages = repairMessages(
              cmd.messages,
              repairText ?? "",
              failure._tag === "InvalidOutput" ? failure.issues : []
            )
            continue
          case "Retry": {
            if (attemptNo >= limits.maxAttempts) continue targets
            const at = yield* now
            if (schedule === undefined) schedule = stepper(retrySchedule(w.retry))
            const delay = yield* schedule.next(at, { retryAfter: Disposition.retryAfterOf(failure) })
            // No sleep that would leave too little time for the retry: next target, or stop.
            if (Option.isNone(delay) || at + delay.value + minimumMs > call.deadline) continue targets
            // A breaker this failure opened: no retry token spent on a route that will not be tried.
            if (yield* Effect.orElseSucceed(ctx.health.isOpen(target), () => true)) continue targets
            if (!(yield* ctx.health.tryRetry)) {
              call.retryBudgetExhausted = true
              continue targets
            }
            if (delay.value > 0) yield* Effect.sleep(Duration.millis(delay.value))
            call.retryCount++
          }
        }
      }
    }
    if (held !== undefined) return held
    return yield* exhausted(call, route, last, stoppedForTime)
  })

/** Breaker admission; a breaker store that cannot answer fails the call (closed). */
const admit = (ctx: EngineContext, target: ModelTarget): Effect.Effect<boolean, Failure> => {
  // An answer at once (breakers off) needs no error mapping.
  const now = FastPath.health(ctx.health)?.tryAcquire?.(target)
  if (now !== undefined) return now ? admitted : refused
  return Effect.mapError(ctx.health.tryAcquire(target), storeFailure)
}
const admitted: Effect.Effect<boolean> = Effect.succeed(true)
const refused: Effect.Effect<boolean> = Effect.succeed(false)

/**
 * Every eligible route failed, or there was no time to try: a degraded answer, a policy error
 * naming the targets policy kept out, or the failure that ends the call.
 */
const exhausted = (
  call: Call,
  route: Route,
  last: Failure | undefined,
  stoppedForTime: boolean
): Effect.Effect<Answer, Failure> =>
  Effect.gen(function* () {
    const { compiled } = route
    if (last !== undefined && Disposition.isAvailability(last)) {
      if (compiled.degrade !== undefined) {
        const value = yield* withinDeadline(call, compiled.degrade(call.command), "call")
        const valid = compiled.decode === undefined ? true : Either.isRight(compiled.decode(value))
        if (valid) {
          call.schemaValid = compiled.schema === undefined ? undefined : true
          return {
            target: undefined,
            text: typeof value === "string" ? value : undefined,
            value: typeof value === "string" ? undefined : value,
            toolCalls: [],
            finishReason: "other",
            schemaValid: call.schemaValid,
            degraded: true
          }
        }
      }
      const policyExcluded = route.excluded.filter(
        (e) => e.reason === "DATA_REGION_MISMATCH" || e.reason === "DATA_CLASS_NOT_ALLOWED"
      )
      if (policyExcluded.length > 0) {
        return yield* Effect.fail<Failure>({
          _tag: "PolicyViolation",
          reason: policyExcluded[0]!.reason,
          excluded: policyExcluded
        })
      }
    }
    const at = yield* now
    let smallestMinimum = Infinity
    for (const t of route.targets)
      smallestMinimum = Math.min(smallestMinimum, Duration.toMillis(t.limits.minimumAttemptTime))
    const outOfTime = stoppedForTime || call.deadline - at < smallestMinimum
    if (last === undefined && !stoppedForTime && call.skipped.length > 0) {
      return yield* Effect.fail<Failure>({
        _tag: "NoEligibleRoute",
        workflow: compiled.workflow.name,
        excluded: [...route.excluded, ...call.skipped]
      })
    }
    if (last === undefined || (outOfTime && Disposition.isAvailability(last))) {
      return yield* Effect.fail(
        deadlineFailure(call, call.attempts.length > 0 && at >= call.deadline ? "attempt" : "before_attempt", at)
      )
    }
    return yield* Effect.fail(last)
  })

/**
 * Dispatches one attempt (holding the target's permit when it has a concurrency cap) and records
 * it. `undefined` when the target's permit did not come before too little time was left.
 */
const dispatch = (
  ctx: EngineContext,
  call: Call,
  route: Route,
  index: number,
  attemptNo: number,
  request: ProviderRequest,
  inputTokens: number | undefined,
  minimumMs: number,
  invoke: Invoke
): Effect.Effect<AttemptEnd | undefined, Failure> => {
  const target = request.target
  if (!ctx.concurrency.isCapped(target.ref))
    return run(ctx, call, route, index, attemptNo, request, inputTokens, invoke)
  return Effect.clockWith((clock) => {
    const start = clock.unsafeCurrentTimeMillis()
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        Effect.mapError(restore(ctx.concurrency.acquireTarget(target.ref, call.deadline - minimumMs)), storeFailure),
        (permit) => {
          if (permit === undefined) return Effect.succeed(undefined)
          const at = clock.unsafeCurrentTimeMillis()
          // Time spent waiting for the target's permit comes off the attempt's timeout.
          const waited =
            at === start
              ? request
              : { ...request, timeout: Duration.min(request.timeout, Duration.millis(call.deadline - at)) }
          return Effect.ensuring(
            restore(run(ctx, call, route, index, attemptNo, waited, inputTokens, invoke)),
            Effect.sync(permit.release)
          )
        }
      )
    )
  })
}

/** Runs one provider call for `request.target`, records it, and reports its outcome to health. */
const run = (
  ctx: EngineContext,
  call: Call,
  route: Route,
  index: number,
  attemptNo: number,
  request: ProviderRequest,
  inputTokens: number | undefined,
  invoke: Invoke
): Effect.Effect<AttemptEnd> => {
  const target = request.target
  const body = (span: Tracer.Span | undefined) =>
    Effect.clockWith((clock) => {
      const adapter = ctx.adapters.get(target.provider)!
      const start = clock.unsafeCurrentTimeMillis()
      const timeoutMs = Duration.toMillis(request.timeout)
      let counted = inputTokens
      const attempt: AttemptContext = {
        target,
        startedAt: start,
        attempt: attemptNo,
        fallback: index > 0,
        get decision() {
          return route.decision
        },
        inputTokens: () => {
          if (counted === undefined) counted = inputTokensAt(estimateInput(route, request), target)
          return counted
        },
        until: start + timeoutMs,
        progress: { ttftMs: undefined, outputTokens: 0, committed: false }
      }
      // Only an attempt actually dispatched to a later target makes this a fallback.
      if (index > 0) call.fallbackUsed = true
      call.inFlight = attempt
      call.lastTarget = target
      call.lastMaxOutputTokens = request.maxOutputTokens
      const invoked = invoke(adapter, request, attempt)
      // Traced: a cancelled attempt's span says so before it ends (`settle` records the attempt).
      const traced =
        span === undefined
          ? invoked
          : Effect.onInterrupt(invoked, () =>
              Effect.clockWith((c) =>
                Effect.sync(() =>
                  Report.annotateAttempt(span, cancelledRecord(call, attempt, c.unsafeCurrentTimeMillis()))
                )
              )
            )
      return Effect.flatMap(Effect.exit(traced), (exit) => {
        call.inFlight = undefined
        call.admitted = undefined
        const end = clock.unsafeCurrentTimeMillis()
        const [record, outcome, breaker, rateLimit] = recordAttempt(call, attempt, request, end, exit)
        call.attempts.push(record)
        const defect =
          outcome._tag === "Failed" &&
          outcome.failure._tag === "ProviderUnavailable" &&
          outcome.failure.reason === "adapter_defect"
        if (span !== undefined) Report.annotateAttempt(span, record)
        // Health without route state (off) records at once: nothing to run.
        const recordNow = FastPath.health(ctx.health)?.record
        if (recordNow !== undefined) recordNow()
        const reported =
          recordNow !== undefined
            ? Effect.succeed(outcome)
            : Effect.as(
                ctx.health.record(target, {
                  outcome: record.outcome,
                  availabilityFailure: breaker,
                  latencyMs: record.latencyMs,
                  ttftMs: record.ttftMs,
                  errorTag: record.errorTag,
                  retryAfterMs: record.retryAfterMs,
                  rateLimit
                }),
                outcome
              )
        // A bug, reported loudly; by the defect's kind only (its message may quote content).
        return defect && Exit.isFailure(exit)
          ? Effect.zipRight(
              Effect.logError(
                `modelgate: adapter defect on ${target.ref} (${defectKind(Cause.squash(exit.cause))}); attempt recorded as unavailable`
              ),
              reported
            )
          : reported
      })
    })
  return call.span === undefined
    ? body(undefined)
    : Report.withAttemptSpan(target, attemptNo, request.maxOutputTokens, (span) => body(span))
}

/** The kind of a defect (`RangeError`, …), never its message. */
const defectKind = (defect: unknown): string => (defect instanceof Error ? defect.name : typeof defect)

/**
 * The record of a finished attempt (an answer, a timeout or a classified failure), how it ended,
 * whether it counts against the target's breaker, and the rate-limit headroom it reported.
 */
const recordAttempt = (
  call: Call,
  attempt: AttemptContext,
  request: ProviderRequest,
  end: number,
  exit: Exit.Exit<Option.Option<ProviderResponse>, ProviderError>
): readonly [AttemptRecord, AttemptEnd, boolean, ProviderResponse["rateLimit"]] => {
  const target = attempt.target
  const timeoutMs = attempt.until - attempt.startedAt
  // A timeout the call's deadline imposed (shorter than the target's own limit) is not the target's fault.
  const cutByDeadline =
    timeoutMs < Duration.toMillis(target.limits.perAttemptTimeout) && end - attempt.startedAt >= timeoutMs
  const cap = request.maxOutputTokens
  if (attempt.progress.committed) call.committed = true
  if (Exit.isSuccess(exit) && Option.isSome(exit.value)) {
    const r = exit.value.value
    const cost = addUsage(call, target, r.usage)
    if (r.modelVersion !== undefined) call.modelVersion = r.modelVersion
    if (r.refusal) {
      const failure: Failure = {
        _tag: "Refusal",
        target: target.ref,
        source: r.finishReason === "content_filter" ? "safety_filter" : "model"
      }
      return [
        attemptRecord(
          call,
          attempt,
          end,
          cap,
          "refusal",
          "Refusal",
          r.httpStatus,
          r.requestId,
          undefined,
          undefined,
          r.usage,
          cost,
          r.modelVersion
        ),
        { _tag: "Failed", failure, possiblyProcessed: true, cutByDeadline },
        false,
        r.rateLimit
      ]
    }
    return [
      attemptRecord(
        call,
        attempt,
        end,
        cap,
        "success",
        undefined,
        r.httpStatus,
        r.requestId,
        undefined,
        undefined,
        r.usage,
        cost,
        r.modelVersion
      ),
      { _tag: "Answered", response: r },
      false,
      r.rateLimit
    ]
  }
  // Sent and never answered in time: the provider has likely billed the input, so settle it.
  if (Exit.isSuccess(exit)) return sentWithoutAnswer(call, attempt, end, cap, "timeout", cutByDeadline)
  const classified = Cause.failureOption(exit.cause)
  // A defect in the adapter (a bug, not a provider answer): the attempt is recorded with the input
  // it may have been billed, and the call goes on as after a transport failure.
  if (Option.isNone(classified)) return sentWithoutAnswer(call, attempt, end, cap, "adapter_defect", false)
  const pe = classified.value
  const failure = Disposition.failureOf(target.ref, pe)
  const possiblyProcessed = pe.processed === "maybe"
  const cost = addUsage(call, target, pe.usage)
  const row = Disposition.rowOf(failure, {
    possiblyProcessed,
    sideEffectingTools: false,
    committed: false,
    repairAvailable: false,
    cutByDeadline
  })
  const retryAfterMs = pe.retryAfter !== undefined ? Duration.toMillis(pe.retryAfter) : undefined
  return [
    attemptRecord(
      call,
      attempt,
      end,
      cap,
      row.outcome,
      failure._tag,
      pe.httpStatus,
      pe.requestId,
      retryAfterMs,
      possiblyProcessed,
      pe.usage,
      pe.usage ? cost : undefined,
      undefined
    ),
    { _tag: "Failed", failure, possiblyProcessed, cutByDeadline },
    row.breaker,
    undefined
  ]
}

/** An attempt that was sent and ended without an answer (its timeout, or an adapter defect), billed what was sent. */
const sentWithoutAnswer = (
  call: Call,
  attempt: AttemptContext,
  end: number,
  cap: number,
  reason: "timeout" | "adapter_defect",
  cutByDeadline: boolean
): readonly [AttemptRecord, AttemptEnd, boolean, ProviderResponse["rateLimit"]] => {
  const failure: Failure = { _tag: "ProviderUnavailable", target: attempt.target.ref, reason }
  const { usage, cost } = billSent(call, attempt)
  const outcome = reason === "timeout" ? "timeout" : "unavailable"
  return [
    attemptRecord(
      call,
      attempt,
      end,
      cap,
      outcome,
      failure._tag,
      undefined,
      undefined,
      undefined,
      true,
      usage,
      cost,
      undefined
    ),
    { _tag: "Failed", failure, possiblyProcessed: true, cutByDeadline },
    // A timeout the call's deadline imposed is not the target's fault; a defect counts against it.
    !cutByDeadline,
    undefined
  ]
}

/**
 * One attempt record, every field present in one order: records then share one object shape
 * (spreading partial objects into records made them slow to build and to read).
 */
const attemptRecord = (
  call: Call,
  attempt: AttemptContext,
  end: number,
  maxOutputTokens: number | undefined,
  outcome: AttemptRecord["outcome"],
  errorTag: string | undefined,
  httpStatus: number | undefined,
  providerRequestId: string | undefined,
  retryAfterMs: number | undefined,
  possiblyProcessed: boolean | undefined,
  usage: Usage | undefined,
  cost: number | undefined,
  modelVersion: string | undefined
): AttemptRecord => ({
  target: attempt.target.ref,
  attempt: attempt.attempt,
  outcome,
  errorTag,
  httpStatus,
  providerRequestId,
  startOffsetMs: attempt.startedAt - call.startedAt,
  latencyMs: end - attempt.startedAt,
  timeoutMs: attempt.until - attempt.startedAt,
  ttftMs: attempt.progress.ttftMs,
  retryAfterMs,
  possiblyProcessed,
  maxOutputTokens,
  usage,
  cost,
  modelVersion
})

// ---------------------------------------------------------------------------------------------
// Settle and record
// ---------------------------------------------------------------------------------------------

const evidenceOf = (call: Call, answer: Answer | undefined, at: number): Evidence => {
  const route = call.route
  const w = route?.compiled.workflow
  const t = answer?.target
  return {
    callId: call.id,
    workflow: call.command.workflow,
    policyVersion: w?.policyVersion ?? "",
    promptId: w?.prompt.id ?? "",
    promptVersion: w?.prompt.version ?? "",
    schemaVersion: w?.output?.schemaVersion,
    pricingVersion: t?.pricing.pricingVersion ?? route?.targets[0]?.pricing.pricingVersion,
    catalogueVersion: t !== undefined ? t.catalogueVersion : route?.targets[0]?.catalogueVersion,
    configVersion: call.config.version,
    target: t?.ref,
    model: t?.model,
    modelVersion: call.modelVersion,
    eligible: route?.eligible ?? [],
    excluded: call.skipped.length === 0 ? (route?.excluded ?? []) : [...(route?.excluded ?? []), ...call.skipped],
    routeId: route?.routeId,
    selectionReason: route?.selectionReason,
    escalations: escalationsOf(call),
    scores: route?.scores,
    canary: route?.canary,
    fallbackUsed: call.fallbackUsed,
    degraded: answer?.degraded ?? false,
    attempts: call.attempts.slice(),
    retryCount: call.retryCount,
    retryBudgetExhausted: call.retryBudgetExhausted,
    startedAt: call.startedAt,
    totalLatencyMs: at - call.startedAt,
    usage: new Usage(
      {
        inputTokens: call.inputTokens,
        cachedInputTokens: call.cachedInputTokens,
        outputTokens: call.outputTokens,
        reasoningTokens: call.reasoningTokens
      },
      { disableValidation: true }
    ),
    cost: {
      currency: "USD",
      estimated: call.estimatedCost,
      reserved: call.reservation?.amount ?? 0,
      actual: call.spent,
      overspent: call.settlement !== undefined && call.settlement.overspent > 0 ? call.settlement.overspent : undefined
    } satisfies Cost,
    schemaValid: answer !== undefined ? answer.schemaValid : call.schemaValid,
    options: ModelOptions.evidenceOf(route?.options, t),
    runId: call.runId,
    step: call.step,
    embedding: call.mode === "embed" ? embeddingEvidenceOf(call) : undefined
  } satisfies Evidence
}

/** An embedding call's space and input count (its command's messages are its inputs). */
const embeddingEvidenceOf = (call: Call): Evidence["embedding"] => {
  const space = call.config.router.workflows.get(call.command.workflow)?.workflow.embedding
  return space === undefined
    ? undefined
    : { family: space.family, dimensions: space.dimensions, inputs: call.command.messages.length }
}

/** The call's escalations for its evidence: the command's (in the decision), then those inside the call. */
const escalationsOf = (call: Call): ReadonlyArray<Escalation> | undefined => {
  const decided = call.route?.escalation
  const inside = call.escalations
  if (decided === undefined) return inside === undefined ? undefined : inside.slice()
  return inside === undefined ? [decided] : [decided, ...inside]
}

/** The record of an attempt cut by the caller's cancellation at `at`. */
const cancelledRecord = (call: Call, attempt: AttemptContext, at: number): AttemptRecord =>
  attemptRecord(
    call,
    attempt,
    at,
    call.lastMaxOutputTokens,
    "cancelled",
    undefined,
    undefined,
    undefined,
    undefined,
    true,
    undefined,
    undefined,
    undefined
  )

const reasonOf = (f: Failure): string | undefined => {
  switch (f._tag) {
    case "ProviderUnavailable":
    case "InvalidRequest":
    case "ProviderRejected":
    case "PolicyViolation":
      return f.reason
    case "Refusal":
      return f.source
    case "DeadlineExceeded":
      return f.stage
    case "StoreError":
      return f.store
    default:
      return undefined
  }
}

/**
 * The one exit handler of a call: bills an attempt cut by cancellation, returns the permit,
 * settles the reservation, and hands the call's one CallRecord to telemetry and the recorder.
 */
const settle = (ctx: EngineContext, call: Call, exit: Exit.Exit<ModelResult, Failure>): Effect.Effect<void> =>
  Effect.clockWith((clock) => {
    const at = clock.unsafeCurrentTimeMillis()
    const interrupted = Exit.isInterrupted(exit)
    const flight = call.inFlight
    if (interrupted && flight !== undefined) {
      // Cancelled with an attempt in flight: its input was likely billed.
      call.inFlight = undefined
      billSent(call, flight)
      if (flight.progress.committed) call.committed = true
      call.attempts.push(cancelledRecord(call, flight, at))
    }
    // Admitted by its breaker but never recorded: give the probe slot back.
    const admitted = call.admitted
    call.admitted = undefined
    releasePermit(call)
    // Money first, so that the record says what the settlement found (an overspend).
    const money = settleMoney(call)
    const bookkeeping = admitted === undefined ? money : Effect.zipRight(ctx.health.release(admitted), money)
    return Effect.zipRight(
      bookkeeping,
      Effect.suspend(() => record(ctx, call, exit, interrupted, at))
    )
  })

/** Gives the call's permit back, once. */
const releasePermit = (call: Call): void => {
  if (call.permit !== undefined) {
    call.permit.release()
    call.permit = undefined
  }
}

/** Settles the reservation once (commit of the actual spend, or release), keeping what it found. */
const settleMoney = (call: Call): Effect.Effect<void> => {
  const reservation = call.reservation
  if (reservation === undefined || call.settlement !== undefined) return Effect.void
  const settleNow = FastPath.reservation(reservation)?.settle
  if (settleNow !== undefined) {
    // An in-memory store settles at once; only an overspend still has a warning and a metric to report.
    const settlement = settleNow(call.spent)
    call.settlement = settlement
    return settlement.overspent > 0 ? Effect.asVoid(reportOverspend(reservation.tenant, settlement)) : Effect.void
  }
  return Effect.map(reservation.settle(call.spent), (settlement) => {
    call.settlement = settlement
  })
}

/** Builds the call's one CallRecord and hands it to telemetry and the recorder. */
const record = (
  ctx: EngineContext,
  call: Call,
  exit: Exit.Exit<ModelResult, Failure>,
  interrupted: boolean,
  at: number
): Effect.Effect<void> => {
  const failure = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
  const success = Exit.isSuccess(exit)
  const evidence = success && call.result !== undefined ? call.result.evidence : evidenceOf(call, undefined, at)
  const callRecord = {
    tenant: call.command.tenant,
    mode: call.mode,
    outcome: success
      ? evidence.degraded
        ? "degraded"
        : "success"
      : interrupted
        ? "cancelled"
        : call.committed
          ? "incomplete"
          : "failed",
    errorTag: failure?._tag,
    errorReason: failure !== undefined ? reasonOf(failure) : undefined,
    finishReason: success ? exit.value.finishReason : undefined,
    evidence,
    settlement: call.settlement?.pending === true ? "pending" : undefined
  } satisfies CallRecord
  const run = call.run
  if (run !== undefined) {
    // The run's money: what the call held goes back, what it spent is spent. A call refused by
    // the run is not one of its steps.
    run.reserved -= call.runReserved
    call.runReserved = 0
    run.spent += call.spent
    // Refused by the run (exhausted, another tenant's): not one of its steps, no PostModel.
    const refused =
      failure?._tag === "RunExhausted" || (failure?._tag === "InvalidRequest" && failure.reason === "run_tenant")
    if (!refused) {
      run.records.push(callRecord)
      if (run.events !== undefined)
        run.events.unsafeOffer(RunEvents.postModel(callRecord, success ? exit.value : undefined, at))
    }
  }
  Report.unsafeEndCall(call.span, callRecord, {
    target: call.answered ?? call.lastTarget ?? call.route?.targets[0],
    workflow: call.route?.compiled.workflow.name,
    maxOutputTokens: call.lastMaxOutputTokens,
    permitWaitMs: call.permitWaitMs
  })
  // The recorder is the application's: whatever it does, it never changes the call's outcome.
  const recorded = Effect.catchAllCause(ctx.recorder.record(callRecord), (cause) =>
    Effect.logError(`modelgate: the call recorder failed for ${call.id} (${defectKind(Cause.squash(cause))})`)
  )
  // Lifecycle features (canary controller, quality signals, shadow): one hook per settled call,
  // only for a workflow that uses one; it never changes the call's outcome either.
  const compiled = call.route?.compiled
  const lifecycle = ctx.lifecycle
  const observed =
    compiled?.lifecycle === undefined || lifecycle === undefined
      ? recorded
      : Effect.zipRight(
          recorded,
          Effect.catchAllCause(lifecycle.settled(compiled, callRecord, call.command, call.result), (cause) =>
            Effect.logError(`modelgate: a lifecycle hook failed for ${call.id} (${defectKind(Cause.squash(cause))})`)
          )
        )
  return Report.outsideCallSpanEvents(call.span, observed)
}
