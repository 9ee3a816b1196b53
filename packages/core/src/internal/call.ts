/**
 * The per-call value of the pipeline. A `Call` itself is immutable: what the call is (its id, its
 * command, its configuration, its clock, its deadline, its span, its agent run). What the call
 * gathers while it runs is in two records it owns, each written by one stage:
 *
 * - `tally`: the evidence so far (attempt records, usage and spend, retries, fallback, commit
 *   point), written by the attempt stage (`attempt.ts`), read once to build the evidence;
 * - `holds`: what the one exit handler must give back or settle (the route it runs on, the
 *   reservation, the tenant's permit, a breaker admission, the attempt in flight), written by the
 *   admission and attempt stages.
 *
 * The engine context (services resolved once per gateway, the running configuration, the call-id
 * sequence) is here too: every stage reads it.
 */
import { Clock, Duration, Effect, Option, type Tracer } from "effect"
import type * as AgentRun from "../AgentRun.js"
import type { Budgets, Reservation, Settlement } from "../Budgets.js"
import type * as CallRecorder from "../CallRecorder.js"
import type * as Concurrency from "../Concurrency.js"
import type { Failure, StoreError } from "../Errors.js"
import type { CompiledWorkflow } from "../GatewayConfig.js"
import type * as Health from "../Health.js"
import type { Message, ModelCommand } from "../ModelCommand.js"
import type { AttemptRecord, CallId, FinishReason, ModelResult, Usage } from "../ModelResult.js"
import type { ModelTarget } from "../ModelTarget.js"
import { audioCostOf, costOf } from "../Pricing.js"
import type { ProviderAdapter, ProviderResponse } from "../ProviderAdapter.js"
import type * as RateLimitStore from "../RateLimitStore.js"
import type * as ResponseCache from "../ResponseCache.js"
import type { Escalation, ExcludedTarget } from "../RouteDecision.js"
import type * as Router from "../Router.js"
import type { Route } from "./router/decision.js"
import type { BreakerView } from "./router/context.js"
import type * as Telemetry from "../Telemetry.js"
import type * as Report from "./telemetry.js"
import type * as Tenancy from "../Tenancy.js"
import type { AttemptContext } from "./attemptContext.js"
import { bounded } from "./deadline.js"
import * as FastPath from "./fastPath.js"
import type * as Lifecycle from "./lifecycle.js"
import * as Literals from "./literals.js"

/** One running configuration: its router (compiled workflows) and its version. */
export interface LiveConfig {
  readonly router: Router.Service
  readonly version: string
  /** The label values metrics may carry as they are (from the configuration); others are `other`. */
  readonly labels?: MetricLabelValues | undefined
}

/** Tenants and task segments named in the configuration: metric labels, bounded by it. */
export interface MetricLabelValues {
  readonly tenants: ReadonlySet<string>
  readonly segments: ReadonlySet<string>
}

/** The gateway's call ids: `mg_<start, base 36>_<sequence, base 36>`, one sequence per gateway. */
export interface CallIds {
  readonly next: (now: number) => CallId
}

/** A fresh call-id sequence (one per gateway instance). */
export const makeCallIds = (): CallIds => {
  let seq = 0
  // Well-formed by construction: the brand's check is skipped.
  return { next: (now) => Literals.CallId.make(`mg_${now.toString(36)}_${(++seq).toString(36)}`, true) }
}

/**
 * The router's view of route health: the health service, plus capped targets' concurrency headroom
 * (with the service's synchronous answers, `internal/fastPath`, carried over).
 */
export const routeViewOf = (health: Health.Service, concurrency: Concurrency.Service): BreakerView => {
  const headroom = concurrency.targetHeadroom
  if (headroom === undefined) return health
  const view: BreakerView = { isOpen: health.isOpen, snapshot: health.snapshot, concurrencyHeadroom: headroom }
  const fast = FastPath.health(health)
  return fast === undefined ? view : FastPath.attach(view, fast)
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
  /** The gateway's metric label caches (`internal/telemetry.ts`), made with it. */
  readonly metricLabels: Report.MetricLabels
  /** Where provider rate limits are counted (`ModelTarget.rateLimit`); none: they are not enforced. */
  readonly rateLimits?: RateLimitStore.Service | undefined
  /** Canary controller, quality signals and shadow traffic: run only for workflows that use them. */
  readonly lifecycle?: Lifecycle.Hooks | undefined
  /** The gateway's call-id sequence. */
  readonly callIds: CallIds
  /** What the router reads of route health ({@link routeViewOf}), built once. */
  readonly routeView: BreakerView
  /**
   * The reservation and the tenant's permit in one store operation, when budgets and permits are
   * on one shared store that can (`admission.jointAdmissionOf`); resolved once.
   */
  readonly admitJointly?: FastPath.JointAdmit | undefined
  /** The response cache of workflows with `cache` (`internal/cache/stage.ts`); none: nothing is cached. */
  readonly cache?: ResponseCache.Service | undefined
}

/** How a call runs: `embed` calls the adapter's `embed`, the command's messages being its inputs. */
export type Mode = "generate" | "stream" | "embed"

/** The answer of a successful call, before it gets its evidence. */
export interface Answer {
  readonly target: ModelTarget | undefined
  readonly text: string | undefined
  readonly value: unknown
  readonly toolCalls: ProviderResponse["toolCalls"]
  readonly finishReason: FinishReason
  readonly schemaValid: boolean | undefined
  readonly degraded: boolean
}

/** The evidence a call gathers while it runs (written by the attempt stage). */
export interface Tally {
  /** Immutable attempt records, in order. */
  readonly attempts: Array<AttemptRecord>
  /** Targets skipped at attempt time (an open breaker, a provider rate limit without headroom). */
  readonly skipped: Array<ExcludedTarget>
  /** Escalations inside the call (invalid output, the workflow's check), in order; made on the first. */
  escalations: Array<Escalation> | undefined
  spent: number
  inputTokens: number
  cachedInputTokens: number
  outputTokens: number
  reasoningTokens: number
  /** Audio input tokens reported, and what they cost (`undefined` until an attempt reports some). */
  audioInputTokens: number | undefined
  audioSpent: number | undefined
  retryCount: number
  retryBudgetExhausted: boolean
  fallbackUsed: boolean
  /** A stream delivered its first delta: a failure now is `incomplete`. */
  committed: boolean
  schemaValid: boolean | undefined
  modelVersion: string | undefined
  /** The target and output cap of the last attempt dispatched. */
  lastTarget: ModelTarget | undefined
  lastMaxOutputTokens: number | undefined
}

/** What the exit handler gives back or settles, whatever the exit (written by admission and attempts). */
export interface Holds {
  /** The route the call runs on (the router's, or the affordable part of it). */
  route: Route | undefined
  /** The worst case of the route's first target (evidence). */
  estimatedCost: number | undefined
  reservation: Reservation | undefined
  /**
   * No target of the route fit the tenant's budget and the workflow degrades: the refusal its
   * degraded answer stands in for (the route is then empty and nothing is reserved).
   */
  budgetRefusal: Failure | undefined
  /** What settling the reservation found; set once it is settled. */
  settlement: Settlement | undefined
  permit: Concurrency.Permit | undefined
  permitWaitMs: number | undefined
  /** What the call holds of its run's budget until it settles. */
  runReserved: number
  /** Admitted by its breaker and not yet recorded: released if the call is cancelled. */
  admitted: ModelTarget | undefined
  /** The attempt in flight, billed if the call is cancelled. */
  inFlight: AttemptContext | undefined
  /**
   * Input tokens (before any safety factor) counted after routing, when the router did not count
   * (billing a cut attempt, a rate limit, an answer without usage): counted once, in slices that
   * yield, and kept for the messages they were counted for.
   */
  counted: { readonly messages: ReadonlyArray<Message>; readonly tokens: number } | undefined
  /** The successful envelope, once built, and the target whose answer it is. */
  result: ModelResult | undefined
  answered: ModelTarget | undefined
}

/** One call: what it is. What it gathers is in `tally` and `holds`. */
export interface Call {
  readonly id: CallId
  readonly startedAt: number
  readonly command: ModelCommand
  readonly mode: Mode
  /** The configuration the call started on (read once, at its start). */
  readonly config: LiveConfig
  /** The command's workflow in that configuration (`undefined`: unknown, the router says so). */
  readonly compiled: CompiledWorkflow | undefined
  /** The clock the caller runs with (a `TestClock` in tests). */
  readonly clock: Clock.Clock
  /** Epoch ms: the earliest of the command's and the workflow's timeout and its run's deadline. */
  readonly deadline: number
  /** The call's span, when a real tracer is installed. */
  readonly span: Tracer.Span | undefined
  /** The agent run the call is in, if any; `runId`/`step`: the command's, else the run's. */
  readonly run: AgentRun.Run | undefined
  readonly runId: string | undefined
  readonly step: number | undefined
  /** The tenant the host vouched for in the caller's context (`Tenancy.vouch`), if any. */
  readonly identity: Tenancy.Identity | undefined
  readonly tally: Tally
  readonly holds: Holds
}

/** What a call starts from. */
export interface CallStart {
  readonly id: CallId
  readonly startedAt: number
  readonly command: ModelCommand
  readonly mode: Mode
  readonly config: LiveConfig
  readonly clock: Clock.Clock
  readonly scope: AgentRun.Scope | undefined
  readonly identity: Tenancy.Identity | undefined
}

/** The call's deadline: the command's and the workflow's timeout, within its run's deadline. */
const deadlineOf = (start: CallStart, compiled: CompiledWorkflow | undefined, run: AgentRun.Run | undefined) => {
  if (compiled === undefined) return start.startedAt
  const cmd = start.command.timeout
  const ms = Math.min(
    cmd !== undefined ? Duration.toMillis(cmd) : Infinity,
    Duration.toMillis(compiled.workflow.timeout)
  )
  const own = start.startedAt + ms
  return run === undefined ? own : Math.min(own, run.deadlineAt)
}

/** A new call; counts it in its agent run. */
export const make = (start: CallStart, span: Tracer.Span | undefined): Call => {
  const run = start.scope?.run
  if (run !== undefined) run.calls++
  const compiled = start.config.router.workflows.get(start.command.workflow)
  return {
    id: start.id,
    startedAt: start.startedAt,
    command: start.command,
    mode: start.mode,
    config: start.config,
    compiled,
    clock: start.clock,
    deadline: deadlineOf(start, compiled, run),
    span,
    run,
    runId: start.command.runId ?? run?.runId,
    step: start.command.step ?? (run === undefined ? undefined : (start.scope?.step ?? run.calls)),
    identity: start.identity,
    tally: {
      attempts: [],
      skipped: [],
      escalations: undefined,
      spent: 0,
      inputTokens: 0,
      cachedInputTokens: 0,
      outputTokens: 0,
      reasoningTokens: 0,
      audioInputTokens: undefined,
      audioSpent: undefined,
      retryCount: 0,
      retryBudgetExhausted: false,
      fallbackUsed: false,
      committed: false,
      schemaValid: undefined,
      modelVersion: undefined,
      lastTarget: undefined,
      lastMaxOutputTokens: undefined
    },
    holds: {
      route: undefined,
      estimatedCost: undefined,
      reservation: undefined,
      budgetRefusal: undefined,
      settlement: undefined,
      permit: undefined,
      permitWaitMs: undefined,
      runReserved: 0,
      admitted: undefined,
      inFlight: undefined,
      counted: undefined,
      result: undefined,
      answered: undefined
    }
  }
}

/** Adds an attempt's usage to the call's tally; returns its cost. */
export const addUsage = (tally: Tally, target: ModelTarget, usage: Usage | undefined): number => {
  if (usage === undefined) return 0
  const cost = costOf(target, usage)
  tally.inputTokens += usage.inputTokens
  tally.cachedInputTokens += usage.cachedInputTokens
  tally.outputTokens += usage.outputTokens
  tally.reasoningTokens += usage.reasoningTokens
  if (usage.audioInputTokens !== undefined) {
    tally.audioInputTokens = (tally.audioInputTokens ?? 0) + usage.audioInputTokens
    tally.audioSpent = (tally.audioSpent ?? 0) + (audioCostOf(target, usage) ?? 0)
  }
  tally.spent += cost
  return cost
}

/** Whether the call made an attempt on `ref`. */
export const ranOn = (attempts: ReadonlyArray<AttemptRecord>, ref: string): boolean => {
  for (const a of attempts) if (a.target === ref) return true
  return false
}

/** A store that could not answer, as the call's failure. */
export const storeFailure = (e: {
  readonly store: StoreError["store"]
  readonly operation: string
  readonly detail: string
}): Failure => ({ _tag: "StoreError", store: e.store, operation: e.operation, detail: e.detail })

/** The call ran out of time at `stage`, at epoch ms `at`. */
export const deadlineFailure = (
  call: Call,
  stage: "queue" | "before_attempt" | "attempt" | "call",
  at: number
): Failure => ({
  _tag: "DeadlineExceeded",
  stage,
  timeoutMs: call.deadline - call.startedAt,
  elapsedMs: at - call.startedAt
})

/** Runs `self` within the call's deadline; `DeadlineExceeded` at `stage` when the deadline comes first. */
export const withinDeadline = <A>(
  call: Call,
  self: Effect.Effect<A, Failure>,
  stage: "before_attempt" | "call"
): Effect.Effect<A, Failure> =>
  Effect.flatMap(bounded(self, call.deadline), (done) =>
    Option.isSome(done)
      ? Effect.succeed(done.value)
      : Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.fail(deadlineFailure(call, stage, at)))
  )
