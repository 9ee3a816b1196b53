/**
 * Hook events of an agent run: a typed stream per run that audit logs and UIs subscribe to.
 *
 * | event | when | published by |
 * |---|---|---|
 * | `PreModel` | a gateway call of the run starts (after the run's checks) | the gateway |
 * | `PostModel` | that call settled (success, degraded or failed) | the gateway |
 * | `PreTool` | the tool loop is about to run (or replay) a tool call | `ToolLoop` |
 * | `PostTool` | the tool call ended: ran, replayed from the ledger, or refused | `ToolLoop` |
 * | `Checkpoint` | a step's tool results are recorded, before the next model call | `ToolLoop` |
 * | `TaskCompleted` | the tool loop ended (completed, suggested, degraded or failed) | `ToolLoop` |
 *
 * Events carry ids, names, versions, virtual-clock instants, outcomes, usage and cost — never
 * prompt, generated or tool content. Only with `eventContent: true` on the run do `PreTool` and
 * `PostTool` carry the tool's arguments and result (as JSON text).
 *
 * ```ts
 * const hub = yield* RunEvents.make
 * const events = yield* RunEvents.subscribe(hub, { untilCompleted: true })
 * yield* Effect.forkScoped(Stream.runForEach(events, (e) => Effect.log(e._tag)))
 * yield* AgentRun.run({ runId, deadline: "1 minute", tenant, events: hub }, agent)
 * ```
 *
 * Publishing costs nothing for a call outside a run, or in a run without `events`.
 *
 * @since 0.2.0
 */
import { Effect, PubSub, Schema, type Scope, Stream } from "effect"
import type { ToolCall } from "./ModelCommand.js"
import { type CallId, type CallRecord, type ModelResult, Usage } from "./ModelResult.js"
import { FinishReason } from "./internal/literals.js"
import { TargetRef } from "./ModelTarget.js"
import * as Literals from "./internal/literals.js"

const Millis = Schema.Number

/**
 * A gateway call of the run starts.
 *
 * @since 0.2.0
 * @category Events
 */
const PreModel = Schema.TaggedStruct("PreModel", {
  runId: Schema.String,
  step: Schema.optional(Schema.Int),
  callId: Literals.CallId,
  workflow: Schema.String,
  configVersion: Schema.String,
  /** Epoch millis (the fiber's `Clock`). */
  at: Millis
}).annotations({ identifier: "@modelgate/core/RunEvents/PreModel" })
/** @since 0.2.0 */
export interface PreModel extends Schema.Schema.Type<typeof PreModel> {}

/** What a gateway call or a tool loop used, cost (USD) and took, and when it ended. */
const spent = {
  usage: Usage,
  cost: Schema.Number,
  latencyMs: Millis,
  at: Millis
}

/**
 * A gateway call of the run settled: its route, versions, outcome, usage and cost. `toolCalls`
 * names the tools the model asked for (names only).
 *
 * @since 0.2.0
 * @category Events
 */
const PostModel = Schema.TaggedStruct("PostModel", {
  runId: Schema.String,
  step: Schema.optional(Schema.Int),
  callId: Literals.CallId,
  workflow: Schema.String,
  policyVersion: Schema.String,
  promptId: Schema.String,
  promptVersion: Schema.String,
  configVersion: Schema.optional(Schema.String),
  target: Schema.optional(TargetRef),
  model: Schema.optional(Schema.String),
  modelVersion: Schema.optional(Schema.String),
  outcome: Literals.CallOutcome,
  errorTag: Schema.optional(Schema.String),
  finishReason: Schema.optional(FinishReason),
  fallbackUsed: Schema.Boolean,
  degraded: Schema.Boolean,
  attempts: Schema.Int,
  toolCalls: Schema.Array(Schema.String),
  ...spent
}).annotations({ identifier: "@modelgate/core/RunEvents/PostModel" })
/** @since 0.2.0 */
export interface PostModel extends Schema.Schema.Type<typeof PostModel> {}

/** What `PreTool` and `PostTool` say of the tool call. */
const toolCallFields = {
  runId: Schema.String,
  step: Schema.Int,
  toolCallId: Schema.String,
  tool: Schema.String,
  sideEffecting: Schema.Boolean,
  /** The ledger key of a side-effecting call. */
  key: Schema.optional(Schema.String)
}

/**
 * The tool loop is about to run a tool call (or replay it from the ledger).
 *
 * @since 0.2.0
 * @category Events
 */
const PreTool = Schema.TaggedStruct("PreTool", {
  ...toolCallFields,
  /** The arguments as the model wrote them; only with `eventContent`. */
  arguments: Schema.optional(Schema.String),
  at: Millis
}).annotations({ identifier: "@modelgate/core/RunEvents/PreTool" })
/** @since 0.2.0 */
export interface PreTool extends Schema.Schema.Type<typeof PreTool> {}

/**
 * How a tool call ended: `success` (ran), `replayed` (its stored result, from the ledger),
 * `invalid_arguments` / `unknown_tool` (sent back to the model as a tool error), `failed` (the
 * handler failed and the model got a tool error, or the ledger failed the loop; `errorTag` says
 * which).
 *
 * @since 0.2.0
 * @category Models
 */
const ToolOutcome = Schema.Literal("success", "replayed", "invalid_arguments", "unknown_tool", "failed")
/** @since 0.2.0 */
export type ToolOutcome = typeof ToolOutcome.Type

/**
 * A tool call ended.
 *
 * @since 0.2.0
 * @category Events
 */
const PostTool = Schema.TaggedStruct("PostTool", {
  ...toolCallFields,
  outcome: ToolOutcome,
  errorTag: Schema.optional(Schema.String),
  latencyMs: Millis,
  /** The tool message sent back to the model; only with `eventContent`. */
  result: Schema.optional(Schema.String),
  at: Millis
}).annotations({ identifier: "@modelgate/core/RunEvents/PostTool" })
/** @since 0.2.0 */
export interface PostTool extends Schema.Schema.Type<typeof PostTool> {}

/**
 * A step's tool results are recorded (side-effecting ones in the ledger) before the next model
 * call, with what the run has spent and has left.
 *
 * @since 0.2.0
 * @category Events
 */
const Checkpoint = Schema.TaggedStruct("Checkpoint", {
  runId: Schema.String,
  step: Schema.Int,
  /** Tool results of the step (errors sent back to the model included). */
  tools: Schema.Int,
  /** Side-effecting results of the step recorded in the ledger. */
  effects: Schema.Int,
  /** The run's settled spend. */
  spent: Schema.Number,
  /** What is left of the run's budget; absent when it has none. */
  remainingBudget: Schema.optional(Schema.Number),
  /** Milliseconds left before the run's deadline. */
  remainingMs: Millis,
  at: Millis
}).annotations({ identifier: "@modelgate/core/RunEvents/Checkpoint" })
/** @since 0.2.0 */
export interface Checkpoint extends Schema.Schema.Type<typeof Checkpoint> {}

/**
 * The tool loop ended: `completed` (the model answered without tool calls), `suggested` (a degraded
 * step proposed a side-effecting call for a person to approve), `degraded` (a degraded answer
 * without one), `failed` (a typed error, named by `errorTag`). `usage` is of the loop's answered
 * model calls (every pass); `cost` what the run spent during the loop (failed calls included).
 *
 * @since 0.2.0
 * @category Events
 */
const TaskCompleted = Schema.TaggedStruct("TaskCompleted", {
  runId: Schema.String,
  outcome: Schema.Literal("completed", "suggested", "degraded", "failed"),
  errorTag: Schema.optional(Schema.String),
  /** Model steps of the loop's last pass (after an ambiguous retry: of the retry). */
  steps: Schema.Int,
  ...spent
}).annotations({ identifier: "@modelgate/core/RunEvents/TaskCompleted" })
/** @since 0.2.0 */
export interface TaskCompleted extends Schema.Schema.Type<typeof TaskCompleted> {}

/**
 * Every event of a run.
 *
 * @since 0.2.0
 * @category Events
 */
export const RunEvent = Schema.Union(PreModel, PostModel, PreTool, PostTool, Checkpoint, TaskCompleted)
/** @since 0.2.0 */
export type RunEvent = PreModel | PostModel | PreTool | PostTool | Checkpoint | TaskCompleted

/**
 * Where a run publishes its events.
 *
 * @since 0.2.0
 * @category Models
 */
export type Hub = PubSub.PubSub<RunEvent>

/**
 * A hub for one run's events (unbounded: publishing never blocks a call). Subscribe before the
 * run starts to see every event.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make: Effect.Effect<Hub> = PubSub.unbounded<RunEvent>()

/**
 * The events published to `hub` from the moment the stream is run.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const stream = (hub: Hub): Stream.Stream<RunEvent> => Stream.fromPubSub(hub)

/**
 * Subscribes to `hub` now (for the scope): the stream has every event published from this moment,
 * even if it is run later. Ends after `TaskCompleted` when `untilCompleted` is set.
 *
 * @since 0.2.0
 * @category Accessors
 */
export const subscribe = (
  hub: Hub,
  options?: { readonly untilCompleted?: boolean | undefined }
): Effect.Effect<Stream.Stream<RunEvent>, never, Scope.Scope> =>
  Effect.map(Stream.fromPubSub(hub, { scoped: true }), (events) =>
    options?.untilCompleted === true ? Stream.takeUntil(events, (e) => e._tag === "TaskCompleted") : events
  )

/**
 * The `PreModel` of a call (published by the gateway).
 *
 * @internal
 */
export const preModel = (
  runId: string,
  step: number | undefined,
  callId: CallId,
  workflow: string,
  configVersion: string,
  at: number
): PreModel => ({ _tag: "PreModel", runId, step, callId, workflow, configVersion, at })

const noToolCalls: ReadonlyArray<ToolCall> = []

/**
 * The `PostModel` of a settled call, from its record (and its result, for the tool names).
 *
 * @internal
 */
export const postModel = (record: CallRecord, result: ModelResult | undefined, at: number): PostModel => {
  const e = record.evidence
  return {
    _tag: "PostModel",
    runId: e.runId ?? "",
    step: e.step,
    callId: e.callId,
    workflow: e.workflow,
    policyVersion: e.policyVersion,
    promptId: e.promptId,
    promptVersion: e.promptVersion,
    configVersion: e.configVersion,
    target: e.target,
    model: e.model,
    modelVersion: e.modelVersion,
    outcome: record.outcome,
    errorTag: record.errorTag,
    finishReason: record.finishReason,
    fallbackUsed: e.fallbackUsed,
    degraded: e.degraded,
    attempts: e.attempts.length,
    toolCalls: (result?.content.toolCalls ?? noToolCalls).map((c) => c.name),
    usage: e.usage,
    cost: e.cost.actual,
    latencyMs: e.totalLatencyMs,
    at
  }
}
