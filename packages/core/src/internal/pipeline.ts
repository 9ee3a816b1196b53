/**
 * The pipeline of one call (DESIGN §4), top to bottom, one stage per module:
 *
 *   the call (`call.ts`: id, deadline, span, run)
 *   → refusals before anything (wrong mode, another tenant's run, an exhausted run)
 *   → the response cache (`cache/stage.ts`, a workflow with `cache` only: a hit answers here)
 *   → resolve (the router, within the deadline)
 *   → admission (`admission.ts`: reservation and permit, in one path)
 *   → attempts (`walk.ts`: the cursor over the route; `attempt.ts`: one attempt; the policy of
 *     both is `Disposition.ts`)
 *   → the envelope (`evidence.ts`), then settle and record.
 *
 * `settle` runs once, in the one exit handler of the call, whatever the exit: it bills an attempt
 * cut by cancellation, returns the permit, settles the reservation and hands exactly one CallRecord
 * to telemetry and the recorder. Adapters and the stream driver see an `AttemptContext`, never the
 * call.
 */
import { Cause, Clock, Context, Effect, Exit } from "effect"
import * as AgentRun from "../AgentRun.js"
import { type Failure, fromFailure, type GatewayError } from "../Errors.js"
import type { ModelCommand } from "../ModelCommand.js"
import { type Content, ModelResult } from "../ModelResult.js"
import type { Route } from "./router/decision.js"
import * as Router from "./router/engine.js"
import * as RunEvents from "../RunEvents.js"
import * as Tenancy from "../Tenancy.js"
import { admit, releasePermit, settleMoney } from "./admission.js"
import * as CacheStage from "./cache/stage.js"
import { billSent, invokeGenerate } from "./attempt.js"
import type { Invoke } from "./attemptContext.js"
import * as Call from "./call.js"
import { cancelledRecord, evidenceOf, recordCall } from "./evidence.js"
import * as Report from "./telemetry.js"
import { attempts } from "./walk.js"

export type { EngineContext, LiveConfig } from "./call.js"
export { makeCallIds, routeViewOf } from "./call.js"
export { admissionServices } from "./admission.js"

/** The tracer Effect runs with when nobody installed one: spans are then not made at all. */
const defaultTracer = Effect.runSync(Effect.tracer)

/**
 * Runs one call in `mode`, with `invoke` calling the adapters, on `config` (by default the running
 * configuration, read when the call starts). Builds exactly one CallRecord.
 */
export const execute = (
  ctx: Call.EngineContext,
  command: ModelCommand,
  mode: Call.Mode,
  invoke: Invoke,
  config?: Call.LiveConfig
): Effect.Effect<ModelResult, GatewayError> =>
  // One step reads the clock and the tracer the caller runs with.
  Effect.withFiberRuntime((fiber) => {
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    const startedAt = clock.unsafeCurrentTimeMillis()
    const start: Call.CallStart = {
      id: ctx.callIds.next(startedAt),
      startedAt,
      command,
      mode,
      config: config ?? ctx.live.current,
      clock,
      scope: fiber.getFiberRef(AgentRun.currentScope),
      identity: Context.get(fiber.currentContext, Tenancy.CurrentIdentity)
    }
    return fiber.currentTracer === defaultTracer
      ? run(ctx, Call.make(start, undefined), invoke)
      : Report.withCallSpan(
          ctx.telemetry,
          { mode, callId: start.id, workflow: command.workflow, tenant: command.tenant, requestId: command.requestId },
          (span) => run(ctx, Call.make(start, span), invoke)
        )
  })

/** Runs `generate` for one command. */
export const generate = (ctx: Call.EngineContext, command: ModelCommand): Effect.Effect<ModelResult, GatewayError> =>
  execute(ctx, command, "generate", invokeGenerate)

/**
 * The call under its one exit handler (`Effect.onExit` and `Effect.mapError` in one frame): the
 * handler runs uninterruptibly whatever the outcome; a failure reaches the caller as its typed error.
 */
const run = (ctx: Call.EngineContext, call: Call.Call, invoke: Invoke): Effect.Effect<ModelResult, GatewayError> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.matchCauseEffect(restore(stages(ctx, call, invoke)), {
      onFailure: (cause) =>
        Effect.matchCauseEffect(settle(ctx, call, Exit.failCause(cause)), {
          onFailure: (cleanup) => failWith(call, Cause.sequential(cause, cleanup)),
          onSuccess: () => failWith(call, cause)
        }),
      onSuccess: (result) => {
        const settled = settle(ctx, call, Exit.succeed(result))
        return Exit.isExit(settled) && Exit.isSuccess(settled) ? Exit.succeed(result) : Effect.as(settled, result)
      }
    })
  )

/** The call's failure as `Effect.mapError` would give it: its first typed failure as the caller's error. */
const failWith = (call: Call.Call, cause: Cause.Cause<Failure>): Effect.Effect<never, GatewayError> => {
  const failure = Cause.failureOrCause(cause)
  if (failure._tag === "Right") return Effect.failCause(failure.right)
  return Effect.fail(
    fromFailure(failure.left, {
      callId: call.id,
      attempts: call.tally.attempts.slice(),
      budgetExcluded: call.holds.route?.excluded.filter((e) => e.reason === "BUDGET_DOES_NOT_FIT")
    })
  )
}

/** refusals → the response cache (a workflow with `cache`) → resolve → admission → attempts → envelope. */
const stages = (ctx: Call.EngineContext, call: Call.Call, invoke: Invoke): Effect.Effect<ModelResult, Failure> => {
  const refused = refusalOf(call)
  if (refused !== undefined) return Effect.fail(refused)
  const cmd = call.command
  const run = call.run
  if (run?.events !== undefined) {
    run.events.unsafeOffer(
      RunEvents.preModel(call.runId ?? run.runId, call.step, call.id, cmd.workflow, call.config.version, call.startedAt)
    )
  }
  // --- response cache (internal/cache/stage.ts): only a workflow with `cache` pays for a key ---
  const w = call.compiled?.workflow
  if (w?.cache !== undefined && call.mode !== "embed") {
    return CacheStage.cached(ctx, call, w, w.cache, () => routeAndAnswer(ctx, call, invoke))
  }
  // --- end response cache ---
  return routeAndAnswer(ctx, call, invoke)
}

/** resolve → admission → attempts → envelope. */
const routeAndAnswer = (
  ctx: Call.EngineContext,
  call: Call.Call,
  invoke: Invoke
): Effect.Effect<ModelResult, Failure> => {
  const cmd = call.command
  const run = call.run
  // Input is counted only when a limit needs it: the tenant's budget or the run's.
  const limited = ctx.budgets.isLimited(cmd.tenant) || (run !== undefined && run.budget !== undefined)
  const workflows = call.config.router.workflows
  const routing = Router.decide(
    workflows,
    ctx.routeView,
    cmd,
    call.mode === "stream" ? "stream" : "generate",
    limited,
    call.id,
    // The time the call has (command, workflow and run deadline), read by every time rule.
    call.deadline - call.startedAt,
    call.identity,
    // Route health in memory is read at this instant without a fiber step.
    call.clock.unsafeCurrentTimeMillis()
  )
  // A decision that has to wait (a large input counted in slices, a breaker store round trip)
  // waits within the deadline; a settled one is read as it is.
  const routed =
    Exit.isExit(routing) || call.compiled === undefined ? routing : Call.withinDeadline(call, routing, "before_attempt")
  // A settled decision (made at once) is read as it is: no `flatMap` frame for it.
  if (!isSettled(routed)) return Effect.flatMap(routed, (route) => admitAndAnswer(ctx, call, route, invoke))
  if (Exit.isFailure(routed)) return Exit.failCause(routed.cause)
  // Called now rather than in a continuation: a defect it throws is still the step's defect (the
  // call's exit handler runs), as the continuation's would be.
  try {
    return admitAndAnswer(ctx, call, routed.value, invoke)
  } catch (defect) {
    return Effect.die(defect)
  }
}

/** admission → attempts → envelope, on the route the router decided. */
const admitAndAnswer = (
  ctx: Call.EngineContext,
  call: Call.Call,
  route: Route,
  invoke: Invoke
): Effect.Effect<ModelResult, Failure> => {
  const admitted = admit(ctx, call, route)
  // A settled admission (in-memory stores) is read as it is: no `flatMap` frame for it.
  if (!isSettled(admitted)) return Effect.flatMap(admitted, (r) => answer(ctx, call, r, invoke))
  return Exit.isSuccess(admitted) ? answer(ctx, call, admitted.value, invoke) : Exit.failCause(admitted.cause)
}

/** Whether a step is settled already (an `Exit`, read as it is). */
const isSettled = <A, E, R>(self: Effect.Effect<A, E, R>): self is Exit.Exit<A, E> => Exit.isExit(self)

/** What the call is refused for before it is routed: the wrong mode, another tenant's run, an exhausted run. */
const refusalOf = (call: Call.Call): Failure | undefined => {
  const w = call.compiled?.workflow
  // An embedding workflow is served by `embed` only, and `embed` serves nothing else.
  if (w !== undefined && (call.mode === "embed") !== (w.embedding !== undefined)) {
    return {
      _tag: "InvalidRequest",
      reason: "invalid_command",
      detail: w.embedding !== undefined ? "an embedding workflow: use embed" : "not an embedding workflow"
    }
  }
  const tenancy = tenancyRefusal(call)
  if (tenancy !== undefined) return tenancy
  const run = call.run
  if (run === undefined) return undefined
  // A run is one tenant's: another tenant's call inside it is refused before anything else.
  if (call.command.tenant !== run.tenant) {
    return {
      _tag: "InvalidRequest",
      reason: "run_tenant",
      detail: "the call's tenant is not the tenant of its agent run"
    }
  }
  // No call of a run starts once its time or money is gone; the others end by its deadline.
  const exhausted = AgentRun.exhaustedAt(run, call.startedAt)
  return exhausted === undefined
    ? undefined
    : {
        _tag: "RunExhausted",
        runId: run.runId,
        reason: exhausted,
        steps: AgentRun.completedSteps(run),
        records: run.records.slice()
      }
}

const tenancyFailure = (reason: "TENANT_MISMATCH" | "TENANT_NOT_VOUCHED" | "TENANT_NOT_ALLOWED"): Failure => ({
  _tag: "PolicyViolation",
  reason,
  excluded: []
})

/**
 * The call's tenant against the one the host vouched for (`Tenancy`): a command cannot name another
 * tenant; a workflow bound to tenants (or a gateway that requires it) needs a vouched one of them.
 */
const tenancyRefusal = (call: Call.Call): Failure | undefined => {
  const identity = call.identity
  if (identity !== undefined && identity.tenant !== call.command.tenant) return tenancyFailure("TENANT_MISMATCH")
  const compiled = call.compiled
  if (compiled === undefined || !compiled.vouchedOnly) return undefined
  if (identity === undefined) return tenancyFailure("TENANT_NOT_VOUCHED")
  const bound = compiled.workflow.tenants
  return bound === undefined || bound.includes(identity.tenant) ? undefined : tenancyFailure("TENANT_NOT_ALLOWED")
}

/**
 * The attempts on the admitted route, then the envelope. The permit and the reservation are
 * settled before the envelope is built, so that its evidence says what the settlement found (no
 * provider work is left: on a shared store both leave in one round trip).
 */
const answer = (
  ctx: Call.EngineContext,
  call: Call.Call,
  route: Route,
  invoke: Invoke
): Effect.Effect<ModelResult, Failure> =>
  attempts({
    ctx,
    call,
    route,
    invoke,
    compiled: route.compiled,
    command: call.command,
    options: route.options,
    // Admission holds it from here on.
    reservation: call.holds.reservation!
  }).pipe(
    Effect.flatMap((answer) => {
      releasePermit(call.holds)
      const settled = settleMoney(call.holds, call.tally.spent)
      // Settled at once (an in-memory store): the envelope is built in this step.
      return Exit.isExit(settled) && Exit.isSuccess(settled)
        ? result(call, answer)
        : Effect.flatMap(settled, () => result(call, answer))
    })
  )

/** The envelope of a successful call, with its evidence (built once, here). */
const result = (call: Call.Call, answer: Call.Answer): Effect.Effect<ModelResult> => {
  const clock = call.clock
  const r = new ModelResult(
    {
      content: { text: answer.text, value: answer.value, toolCalls: answer.toolCalls } satisfies Content,
      finishReason: answer.finishReason,
      evidence: evidenceOf(call, answer, clock.unsafeCurrentTimeMillis())
    },
    { disableValidation: true }
  )
  call.holds.answered = answer.target
  call.holds.result = r
  // Session affinity follows the target that served the call (after any fallback or escalation).
  const sessionKey = call.command.sessionKey
  if (
    sessionKey !== undefined &&
    answer.target !== undefined &&
    call.holds.route?.compiled.workflow.selection === "scored"
  ) {
    Router.rememberServed(call.config.router.workflows, call.command.workflow, sessionKey, answer.target.ref)
  }
  // Prompt-prefix affinity too (the decision carries the prefix keys when the workflow has it).
  const prefix = call.holds.route?.prefix
  if (prefix !== undefined && answer.target !== undefined) {
    Router.rememberPrefixServed(
      call.config.router.workflows,
      prefix,
      answer.target.ref,
      clock.unsafeCurrentTimeMillis()
    )
  }
  return Effect.succeed(r)
}

/**
 * The one exit handler of a call: bills an attempt cut by cancellation, returns the permit,
 * settles the reservation, and hands the call's one CallRecord to telemetry and the recorder.
 */
const settle = (
  ctx: Call.EngineContext,
  call: Call.Call,
  exit: Exit.Exit<ModelResult, Failure>
): Effect.Effect<void> => {
  const at = call.clock.unsafeCurrentTimeMillis()
  const interrupted = Exit.isInterrupted(exit)
  const flight = call.holds.inFlight
  if (!interrupted || flight === undefined) return settleHeld(ctx, call, exit, interrupted, at)
  // Cancelled with an attempt in flight: its input was likely billed (counted, when the router
  // did not count, by the one sliced counter).
  call.holds.inFlight = undefined
  return Effect.flatMap(billSent(call.tally, flight), () => {
    if (flight.progress.committed) call.tally.committed = true
    call.tally.attempts.push(cancelledRecord(call, flight, at))
    return settleHeld(ctx, call, exit, interrupted, at)
  })
}

/** The rest of the exit handler: the breaker slot, the permit, the reservation, the record. */
const settleHeld = (
  ctx: Call.EngineContext,
  call: Call.Call,
  exit: Exit.Exit<ModelResult, Failure>,
  interrupted: boolean,
  at: number
): Effect.Effect<void> => {
  const { tally, holds } = call
  // Admitted by its breaker but never recorded: give the probe slot back.
  const admitted = holds.admitted
  holds.admitted = undefined
  releasePermit(holds)
  // Money first, so that the record says what the settlement found (an overspend).
  const money = settleMoney(holds, tally.spent)
  const bookkeeping = admitted === undefined ? money : Effect.zipRight(ctx.health.release(admitted), money)
  // Settled at once (in memory): the record is handed over in this step.
  return Exit.isExit(bookkeeping) && Exit.isSuccess(bookkeeping)
    ? recordCall(ctx, call, exit, interrupted, at)
    : Effect.zipRight(
        bookkeeping,
        Effect.suspend(() => recordCall(ctx, call, exit, interrupted, at))
      )
}
