/**
 * The tool loop's machinery below its steps (module `ToolLoop`): the loop's context, the command
 * of a step, one tool call, argument parsing, the per-tool call index, and the run events a loop
 * publishes.
 */
import { Cause, Clock, Effect, Either, type Exit, Option, ParseResult } from "effect"
import * as AgentRun from "../AgentRun.js"
import { InvalidRequest, StoreError } from "../Errors.js"
import { type Message, ModelCommand, type ToolCall, type ToolDefinition } from "../ModelCommand.js"
import * as ModelGateway from "../ModelGateway.js"
import { Usage } from "../ModelResult.js"
import type * as RunEvents from "../RunEvents.js"
import * as ToolLedger from "../ToolLedger.js"
import { callIdempotencyKey } from "./toolCallKey.js"
import type { IdempotencyKey } from "../ToolLedgerStore.js"
import type { Any, LedgerError, Options, Prepared } from "./toolTypes.js"
import { issueLines } from "./issues.js"
import * as Report from "./telemetry.js"

/** A tool name the providers accept. */
export const toolName = /^[A-Za-z0-9_-]{1,64}$/

/** The model's argument text as JSON, or the value-free issue. */
export const parseArguments = (text: string): Either.Either<unknown, ReadonlyArray<string>> => {
  try {
    return Either.right(JSON.parse(text))
  } catch {
    return Either.left(["$ is not valid JSON"])
  }
}

export const errorTagOf = (e: unknown): string | undefined =>
  typeof e === "object" && e !== null && "_tag" in e && typeof e._tag === "string" ? e._tag : undefined

/** The ledger's own errors (they fail the loop; a handler's typed failure goes back to the model). */
export const isLedgerError = (e: unknown): boolean =>
  e instanceof ToolLedger.ToolReplayRefused || e instanceof ToolLedger.ToolResultUndecodable || e instanceof StoreError

/** The loop's conversation no longer makes a valid command. */
export const conversationLimits = (error: unknown): InvalidRequest =>
  new InvalidRequest({
    reason: "invalid_command",
    detail: `the tool loop's conversation broke a command limit: ${
      ParseResult.isParseError(error) ? issueLines(error).join("; ") : "invalid command"
    }`
  })

/**
 * The ordinal of a call (the ledger key's): how many identical calls (same tool, same identity)
 * took effect before it in the same count — completed or replayed, in the order asked; a call
 * that failed (typed, "not done") does not count, so asking it again is the same call. A pass of
 * the loop counts over all its steps (`seen`, cleared when the pass starts); `ToolLoop.approve`
 * counts a suggestion's calls the same way, so the two compute the same keys.
 */
export const nextOrdinal = (seen: ReadonlyMap<string, number>, name: string, identity: string | undefined): number =>
  seen.get(`${name}\u0000${identity ?? ""}`) ?? 0

/** Counts one identical call that took effect (see {@link nextOrdinal}). */
export const countOrdinal = (seen: Map<string, number>, name: string, identity: string | undefined): void => {
  seen.set(`${name}\u0000${identity ?? ""}`, nextOrdinal(seen, name, identity) + 1)
}

// ---------------------------------------------------------------------------------------------
// Run events
// ---------------------------------------------------------------------------------------------

/** Where a loop publishes its events: the run's hub (none outside a run or without `events`). */
export interface Events {
  readonly hub: RunEvents.Hub | undefined
  readonly runId: string
  /** `PreTool`/`PostTool` carry arguments and results. */
  readonly withContent: boolean
}

/** One tool call as its events describe it. */
export interface ToolEvent {
  readonly step: number
  readonly toolCallId: string
  readonly tool: string
  readonly sideEffecting: boolean
  readonly key: string | undefined
}

/** Publishes `PreTool` for `call` (with its arguments when the run allows content); returns its start. */
export const preTool = (events: Events, call: ToolEvent, args: string): Effect.Effect<number> =>
  Effect.map(Clock.currentTimeMillis, (at) => {
    events.hub?.unsafeOffer({
      _tag: "PreTool",
      runId: events.runId,
      ...call,
      arguments: events.withContent ? args : undefined,
      at
    })
    return at
  })

/** Publishes `PostTool` for `call`, which started at `startedAt`. */
export const postTool = (
  events: Events,
  call: ToolEvent,
  startedAt: number,
  outcome: RunEvents.ToolOutcome,
  content: string | undefined,
  errorTag?: string
): Effect.Effect<void> =>
  Effect.map(Clock.currentTimeMillis, (at) => {
    events.hub?.unsafeOffer({
      _tag: "PostTool",
      runId: events.runId,
      ...call,
      outcome,
      errorTag,
      latencyMs: at - startedAt,
      result: events.withContent ? content : undefined,
      at
    })
  })

/** Publishes `Checkpoint`: step `step`'s `tools` results are recorded, `effects` of them side effects. */
export const checkpoint = (
  events: Events,
  run: AgentRun.Run | undefined,
  step: number,
  tools: number,
  effects: number
): Effect.Effect<void> => {
  const hub = events.hub
  if (hub === undefined || run === undefined) return Effect.void
  return Effect.map(Clock.currentTimeMillis, (at) => {
    hub.unsafeOffer({
      _tag: "Checkpoint",
      runId: events.runId,
      step,
      tools,
      effects,
      spent: run.spent,
      remainingBudget: run.budget === undefined ? undefined : AgentRun.remainingBudget(run),
      remainingMs: Math.max(0, run.deadlineAt - at),
      at
    })
  })
}

/** What a loop's `TaskCompleted` reports besides how it ended. */
export interface Totals {
  readonly steps: number
  readonly usage: Usage
  readonly startedAt: number
  /** What the run had spent when the loop started. */
  readonly spentAtStart: number
}

/** Publishes `TaskCompleted` for a loop that ended with `exit`; `outcome` names a success. */
export const taskCompleted = <A, E>(
  events: Events,
  run: AgentRun.Run | undefined,
  exit: Exit.Exit<A, E>,
  outcome: (value: A) => "completed" | "suggested" | "degraded",
  totals: Totals
): Effect.Effect<void> => {
  const hub = events.hub
  if (hub === undefined || run === undefined) return Effect.void
  return Effect.map(Clock.currentTimeMillis, (at) => {
    const failure = exit._tag === "Failure" ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    const interrupted = exit._tag === "Failure" && Cause.isInterruptedOnly(exit.cause)
    hub.unsafeOffer({
      _tag: "TaskCompleted",
      runId: events.runId,
      outcome: exit._tag === "Failure" ? "failed" : outcome(exit.value),
      errorTag: exit._tag === "Failure" ? (errorTagOf(failure) ?? (interrupted ? "Interrupted" : "Defect")) : undefined,
      steps: totals.steps,
      usage: totals.usage,
      cost: run.spent - totals.spentAtStart,
      latencyMs: at - totals.startedAt,
      at
    })
  })
}

// ---------------------------------------------------------------------------------------------
// The loop's context, a step's command, one tool call
// ---------------------------------------------------------------------------------------------

/** What one run of the loop works with: set up once by `ToolLoop.run`, read by every step. */
export interface LoopContext {
  readonly command: ModelCommand
  readonly maxSteps: number
  readonly firstStep: number
  readonly runId: string
  readonly gateway: ModelGateway.Service
  readonly agentRun: AgentRun.Run | undefined
  readonly events: Events
  readonly byName: ReadonlyMap<string, Any>
  readonly definitions: ReadonlyArray<ToolDefinition>
  /** Side-effecting calls the loop ran or replayed (checked before an ambiguous retry). */
  readonly keysRun: Array<ToolLedger.KeyInfo>
  /** Identical calls asked so far in the current pass, by tool and identity (their next ordinal). */
  readonly ordinals: Map<string, number>
  /** Keys earlier passes ran that the current pass has not asked for again. */
  readonly pending: Set<string>
  readonly onUnmatchedReplay: "refuse" | "run"
  /** Label sets of the loop's tool failure counts, made with the loop. */
  readonly toolLabels: Report.LabelCache
  /** Model calls of the current pass, usage of every pass, when the loop started. */
  readonly state: { steps: number; usage: Usage; readonly startedAt: number }
  /** What the run had spent when the loop started. */
  readonly spentAtStart: number
}

/** Checks the run id, `maxSteps` and the tool names, and reads the gateway and the run. */
export const setup = (
  command: ModelCommand,
  tools: ReadonlyArray<Any>,
  options: Options
): Effect.Effect<LoopContext, InvalidRequest, ModelGateway.ModelGateway> =>
  Effect.gen(function* () {
    const gateway = yield* ModelGateway.ModelGateway
    const agentRun = Option.getOrUndefined(yield* AgentRun.current)
    const runId = agentRun?.runId ?? command.runId
    if (runId === undefined) {
      return yield* new InvalidRequest({
        reason: "invalid_command",
        detail: "the tool loop needs a run id: run it inside AgentRun.run or set the command's runId"
      })
    }
    if (!Number.isInteger(options.maxSteps) || options.maxSteps < 1) {
      return yield* Effect.dieMessage(`maxSteps must be an integer ≥ 1, got ${options.maxSteps}`)
    }
    const byName = new Map<string, Any>()
    for (const tool of tools) {
      if (byName.has(tool.name)) return yield* Effect.dieMessage(`two tools are named "${tool.name}"`)
      byName.set(tool.name, tool)
    }
    return {
      command,
      maxSteps: options.maxSteps,
      firstStep: options.firstStep ?? 1,
      runId,
      gateway,
      agentRun,
      events: { hub: agentRun?.events, runId, withContent: agentRun?.eventContent ?? false },
      byName,
      definitions: tools.map((t) => t.definition),
      keysRun: [],
      ordinals: new Map(),
      pending: new Set(),
      onUnmatchedReplay: options.onUnmatchedReplay ?? "refuse",
      toolLabels: Report.makeToolLabels(),
      state: { steps: 0, usage: Usage.zero, startedAt: yield* Clock.currentTimeMillis },
      spentAtStart: agentRun?.spent ?? 0
    }
  })

/** The command of step `step`: the original system message, the conversation so far, the loop's tools. */
export const commandFor = (loop: LoopContext, messages: ReadonlyArray<Message>, step: number) =>
  Effect.try({
    try: () =>
      new ModelCommand({
        ...loop.command,
        messages: [loop.command.messages[0], ...messages.slice(1)],
        tools: loop.definitions,
        runId: loop.runId,
        step
      }),
    catch: conversationLimits
  })

/** One tool call: its tool message content, with `PreTool`/`PostTool`. */
export const runCall = (
  loop: LoopContext,
  call: ToolCall,
  step: number
): Effect.Effect<string, LedgerError, ToolLedger.ToolLedger> =>
  Effect.gen(function* () {
    const tool = loop.byName.get(call.name)
    const sideEffecting = tool?.sideEffecting ?? false
    const decoded: Either.Either<Prepared, ReadonlyArray<string>> = tool === undefined
      ? Either.left([])
      : Either.flatMap(parseArguments(call.arguments), tool.decode)
    // Only a side-effecting call that decoded has a key (and takes an ordinal of its pass).
    const index =
      tool !== undefined && sideEffecting && Either.isRight(decoded)
        ? nextOrdinal(loop.ordinals, tool.name, decoded.right.identity)
        : 0
    const key =
      tool !== undefined && sideEffecting && Either.isRight(decoded)
        ? callIdempotencyKey(loop.runId, tool.name, decoded.right.identity ?? "", index)
        : undefined
    const event: ToolEvent = { step, toolCallId: call.id, tool: call.name, sideEffecting, key }
    const startedAt = yield* preTool(loop.events, event, call.arguments)
    const post = (outcome: RunEvents.ToolOutcome, content: string | undefined, errorTag?: string) =>
      postTool(loop.events, event, startedAt, outcome, content, errorTag)
    if (tool === undefined) {
      // The model's name is not a label (unbounded): counted as `unknown`.
      Report.unsafeRecordToolFailure(loop.toolLabels, "unknown", "unknown_tool")
      const content = JSON.stringify({ error: "unknown tool", tools: [...loop.byName.keys()] })
      yield* post("unknown_tool", content)
      return content
    }
    if (Either.isLeft(decoded)) {
      Report.unsafeRecordToolFailure(loop.toolLabels, tool.name, "invalid_arguments")
      const content = JSON.stringify({ error: "invalid arguments", issues: decoded.left })
      yield* post("invalid_arguments", content)
      return content
    }
    const refused = (tag: string | undefined) =>
      Effect.zipRight(
        Effect.sync(() => Report.unsafeRecordToolFailure(loop.toolLabels, tool.name, "ledger")),
        post("failed", undefined, tag)
      )
    if (key !== undefined) yield* matchReplay(loop, key, step, tool.name, refused)
    const executed = yield* decoded.right
      .execute({ runId: loop.runId, step, index, toolCallId: call.id })
      .pipe(Effect.tapError((e) => refused(errorTagOf(e))))
    if (executed.failed !== undefined) {
      Report.unsafeRecordToolFailure(loop.toolLabels, tool.name, "failed")
      yield* post("failed", executed.content, executed.failed)
      return executed.content
    }
    if (key !== undefined) {
      countOrdinal(loop.ordinals, tool.name, decoded.right.identity)
      loop.keysRun.push({ id: key, runId: loop.runId, step, tool: tool.info })
    }
    yield* post(executed.replayed ? "replayed" : "success", executed.content)
    return executed.content
  })

/**
 * A retried pass that still owes calls of earlier passes (`pending`) and asks a side-effecting
 * call none of them made: refused (`unmatched`) unless `onUnmatchedReplay: "run"`. A matching
 * call is struck off.
 */
const matchReplay = (
  loop: LoopContext,
  key: IdempotencyKey,
  step: number,
  tool: string,
  onRefused: (errorTag: string) => Effect.Effect<void>
): Effect.Effect<void, ToolLedger.ToolReplayRefused> => {
  if (loop.pending.delete(key)) return Effect.void
  const earlier = loop.keysRun.some((k) => k.id === key)
  if (earlier || loop.pending.size === 0 || loop.onUnmatchedReplay === "run") return Effect.void
  const refusal = new ToolLedger.ToolReplayRefused({
    key,
    runId: loop.runId,
    step,
    tool,
    reason: "unmatched"
  })
  return Effect.zipRight(onRefused(refusal._tag), Effect.fail(refusal))
}
