/**
 * The context of one agent run: a deadline and a budget of its own that every gateway call inside
 * it inherits. Each call's deadline is the earlier of its own and the run's; what it reserves is
 * capped by what is left of the run's budget; its `runId` and step go into its evidence. Once the
 * run's time or money is gone, the next call does not start: it fails with `RunExhausted`, which
 * carries the steps that completed and their CallRecords, so the caller can return a partial
 * result or hand off. A run belongs to one tenant: a call for another tenant inside it fails with
 * `InvalidRequest` (`run_tenant`) before anything else. With `events` the run publishes hook events
 * (module `RunEvents`); the tool loop over a run is module `ToolLoop`.
 *
 * ```ts
 * AgentRun.run({ runId: "r-1", deadline: "30 seconds", budget: 0.5, tenant }, Effect.gen(function* () {
 *   const plan = yield* AgentRun.step(1, ModelGateway.generate(planCommand))
 *   const reply = yield* AgentRun.step(2, ModelGateway.generate(replyCommand))
 * }))
 * ```
 *
 * @since 0.2.0
 */
import { Clock, Duration, Effect, FiberRef, Option } from "effect"
import { dual } from "effect/Function"
import type { TenantId } from "./ModelCommand.js"
import type { CallRecord, CompletedStep } from "./ModelResult.js"
import type * as RunEvents from "./RunEvents.js"

/**
 * What a run is made from.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Options {
  readonly runId: string
  /** Time the whole run may take, from {@link make}. */
  readonly deadline: Duration.DurationInput
  /** Money the whole run may spend (the gateway's currency); unlimited when absent. */
  readonly budget?: number | undefined
  /** Every call of the run must be for this tenant (else `InvalidRequest`, reason `run_tenant`). */
  readonly tenant: TenantId
  /** Where the run publishes its hook events (see module `RunEvents`); none when absent. */
  readonly events?: RunEvents.Hub | undefined
  /** Let `PreTool`/`PostTool` events carry tool arguments and results (default: no content). */
  readonly eventContent?: boolean | undefined
}

/**
 * The state of one run, shared by every call inside it (also calls made from forked fibers).
 * Updated by the gateway when a call starts and settles; read it, do not write it.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Run {
  readonly runId: string
  readonly tenant: TenantId
  /** Epoch millis, from the `Clock` when the run was made. */
  readonly startedAt: number
  /** Epoch millis after which no call of the run starts. */
  readonly deadlineAt: number
  /** `undefined`: unlimited. */
  readonly budget: number | undefined
  /** Actual cost of the run's settled calls. */
  spent: number
  /** Held by the run's calls in flight (their reservations), released as they settle. */
  reserved: number
  /** Calls started in the run (numbers steps set by neither the command nor {@link step}). */
  calls: number
  /** The CallRecords of the run's calls that started, in the order they settled. */
  readonly records: Array<CallRecord>
  /** Where hook events go (`undefined`: nowhere, and nothing is built for them). */
  readonly events: RunEvents.Hub | undefined
  readonly eventContent: boolean
}

/**
 * The run a fiber is in, and the step set by {@link step}.
 *
 * @internal
 */
export interface Scope {
  readonly run: Run
  readonly step: number | undefined
}

/**
 * The run the current fiber is in (none outside {@link run} / {@link within}).
 *
 * @internal
 */
export const currentScope: FiberRef.FiberRef<Scope | undefined> = FiberRef.unsafeMake<Scope | undefined>(undefined)

/**
 * Makes a run: its start from the `Clock`, its deadline `options.deadline` later.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Run> =>
  Effect.map(Clock.currentTimeMillis, (now) => ({
    runId: options.runId,
    tenant: options.tenant,
    startedAt: now,
    deadlineAt: now + Duration.toMillis(options.deadline),
    budget: options.budget,
    spent: 0,
    reserved: 0,
    calls: 0,
    records: [],
    events: options.events,
    eventContent: options.eventContent ?? false
  }))

/**
 * Runs `body` inside `run`: every gateway call in it inherits the run's deadline and budget.
 *
 * @since 0.2.0
 * @category Combinators
 */
export const within: {
  (run: Run): <A, E, R>(body: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(body: Effect.Effect<A, E, R>, run: Run): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(body: Effect.Effect<A, E, R>, run: Run): Effect.Effect<A, E, R> =>
    Effect.locally(body, currentScope, { run, step: undefined })
)

/**
 * Makes a run from `options` and runs `body` inside it.
 *
 * @since 0.2.0
 * @category Combinators
 */
export const run = <A, E, R>(options: Options, body: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(make(options), (r) => within(body, r))

/**
 * Runs `effect` as step `n` of the current run: its gateway calls record `step: n` (unless their
 * command sets one). Outside a run it is `effect` as it is.
 *
 * @since 0.2.0
 * @category Combinators
 */
export const step = <A, E, R>(n: number, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locallyWith(effect, currentScope, (scope) => (scope === undefined ? scope : { run: scope.run, step: n }))

/**
 * The run the current fiber is in.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const current: Effect.Effect<Option.Option<Run>> = Effect.map(FiberRef.get(currentScope), (scope) =>
  Option.fromNullable(scope?.run)
)

/**
 * The completed steps of `run`, in the order they settled.
 *
 * @since 0.2.0
 * @category Accessors
 *
 * @internal
 */
export const completedSteps = (run: Run): ReadonlyArray<CompletedStep> => run.records.map(completedStepOf)

/**
 * The completed step a CallRecord describes.
 *
 * @internal
 */
export const completedStepOf = (record: CallRecord): CompletedStep => ({
  step: record.evidence.step,
  callId: record.evidence.callId,
  outcome: record.outcome,
  errorTag: record.errorTag,
  cost: record.evidence.cost.actual
})

/**
 * What is left of `run`'s budget (after its settled spend and its calls in flight); `Infinity`
 * when it has none.
 *
 * @internal
 */
export const remainingBudget = (run: Run): number =>
  run.budget === undefined ? Infinity : Math.max(0, run.budget - run.spent - run.reserved)

/**
 * Why no further call of `run` may start at `now`, if so: its deadline passed or its budget is spent.
 *
 * @internal
 */
export const exhaustedAt = (run: Run, now: number): "deadline" | "budget" | undefined =>
  now >= run.deadlineAt ? "deadline" : run.budget !== undefined && run.budget - run.spent <= 0 ? "budget" : undefined
