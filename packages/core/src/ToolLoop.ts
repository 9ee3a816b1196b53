/**
 * A typed tool loop over the gateway: the model is asked through `ModelGateway.generate` (routing,
 * deadline, budget, evidence, and inside an `AgentRun` the run's deadline and budget), the tools it
 * calls are decoded with their Schemas and run, and their results go back to it, until it answers
 * without tool calls or `maxSteps` model calls were made.
 *
 * Tools are declared once, by Schema ({@link make}): name, description, a `parameters` Schema (its
 * JSON Schema, from `JSONSchema.make`, is what the model sees), a `result` Schema (the tool message
 * is its encoded form as JSON), `sideEffecting`, and a handler. The core does not depend on
 * `@effect/ai`; a `Tool` of a Toolkit converts into this shape (`name`, `description`,
 * `parametersSchema` → `parameters`, `successSchema` → `result`, its handler).
 *
 * Rules of the loop
 *
 * - Step `n` (from `firstStep`, default 1) is one model call plus the tool calls it asks for, run in
 *   order. Every model call carries the run id and its step (evidence, CallRecords, spans).
 * - Arguments are parsed and decoded with the tool's `parameters` Schema (unknown fields are an
 *   error). A bad argument, or an unknown tool, goes back to the model as a tool message
 *   `{"error": …, "issues": [paths and kinds, never values]}` and costs a step, so `maxSteps`
 *   bounds the corrections.
 * - Side-effecting tools run through `ToolLedger.runOnce` with a key by what the call does, not
 *   where it is asked: run id, tool name, the call's identity (SHA-256 of its canonical encoded
 *   arguments — sorted keys, no whitespace — or of the tool's declared `idempotencyKey(args)`),
 *   and its ordinal (how many identical calls took effect before it in the same pass, over all
 *   its steps, in order; a call that failed "not done" does not count, so asking it again is the
 *   same call). At most once per key, the result stored before the next model call; the same key
 *   is handed to the handler on every pass. So a replayed pass, a loop resumed in another process,
 *   or a run continuing after an approved {@link Suggestion} that asks for an executed call gets
 *   its stored result whatever its step or position, while two identical calls within one pass
 *   (in one step or in two) stay two calls. Read-only tools run every time.
 * - `maxSteps`: when the `maxSteps`-th answer still asks for tools, the loop fails with
 *   {@link MaxStepsExceeded} and runs none of them (nothing could read their results).
 * - `AmbiguousOutcome` rules hold: the gateway never retries a model call that may have been
 *   processed while side-effecting tools are offered, and neither does the loop by default. With
 *   `ambiguousRetries: n` the loop starts again from its first step (same run id, so the same
 *   keys) after checking that every side-effecting call it ran has a completed-effect record
 *   (`ToolLedger.checkReplay`, else `ToolReplayRefused`): the model is asked again, side-effecting
 *   calls are replayed from the ledger instead of run again. It is the path a run takes when it is
 *   picked up after a crash (only the ledger survives), so the two never differ. While a retried
 *   pass has not yet asked again for every side-effecting call earlier passes made, a
 *   side-effecting call it asks that no earlier pass made is refused (`ToolReplayRefused`,
 *   `unmatched`: the model re-planned and the new call may duplicate an old effect) unless
 *   `onUnmatchedReplay: "run"`.
 * - A tool handler's typed failure goes back to the model as a tool message
 *   `{"error": "tool failed", "tag": …}` (with `failure: Schema`, its encoded form as `failure`);
 *   a side-effecting call that failed is "not done" in the ledger, so a later step may try again.
 *   Defects and ledger errors (`ToolReplayRefused`, `ToolResultUndecodable`, `StoreError`) fail
 *   the loop.
 * - Handlers need no services of their own in the loop's type: build tools where their services
 *   are at hand ({@link makeWithServices} captures them from the context).
 *
 * Degraded agent step (when it returns a {@link Suggestion})
 *
 * A step is degraded when its model call was answered by the workflow's degraded mode: every route
 * failed for availability reasons (`Disposition.isAvailability`: 5xx, overload, transport errors,
 * timeouts, 429s) and the workflow's `degrade` handler answered (`evidence.degraded`). A
 * degrade handler made with {@link proposing} answers with the tool calls the step would make (e.g.
 * keyword rules). If any of them is side-effecting, the loop returns a `Suggestion` — those calls,
 * arguments decoded with the tools' Schemas — for a person to approve, and runs no tool;
 * {@link approve} later runs the approved calls once, through the ledger. A degraded answer that
 * proposes no side-effecting call ends the loop as `Completed` with `degraded: true` (read-only
 * proposals are not run: no model could read their results). Without a degrade handler there is
 * no one to propose a call: the step fails with the availability error and no tool runs. (Open
 * breakers that leave no target to try end in `NoEligibleRoute`, which is not degraded.)
 *
 * @since 0.2.0
 */
import { Effect, Either, JSONSchema, Option, Schema } from "effect"
import * as AgentRun from "./AgentRun.js"
import { AmbiguousOutcome, type GatewayError, InvalidOutput, InvalidRequest } from "./Errors.js"
import type { DegradeHandler } from "./GatewayConfig.js"
import * as ToolImpl from "./internal/tool.js"
import type {
  Any,
  Executed,
  LedgerError,
  Options,
  Prepared,
  Tool,
  ToolContext,
  ToolOptions
} from "./internal/toolTypes.js"
import * as Loop from "./internal/toolLoop.js"
import type { Message, ModelCommand } from "./ModelCommand.js"
import type * as ModelGateway from "./ModelGateway.js"
import type { ModelResult } from "./ModelResult.js"
import * as ToolLedger from "./ToolLedger.js"
import * as Literals from "./internal/literals.js"

export type { Any, Options, Tool, ToolContext }

// ---------------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------------

/**
 * The JSON Schema of `parameters` as offered to the model (without `$schema`).
 *
 * @since 0.2.0
 * @category Utils
 */
export const parametersJsonSchema = <A, I>(parameters: Schema.Schema<A, I>): Record<string, unknown> => {
  const { $schema: _, ...rest } = JSONSchema.make(parameters)
  return { ...rest }
}

/**
 * Declares a tool. Throws at definition when the name is not `[A-Za-z0-9_-]{1,64}` or the
 * parameters have no JSON Schema.
 *
 * ```ts
 * const createTask = ToolLoop.make({
 *   name: "create_follow_up_task",
 *   description: "Creates a follow-up task",
 *   parameters: Schema.Struct({ ticketId: Schema.String, title: Schema.String }),
 *   result: Task,
 *   sideEffecting: true,
 *   handler: (args, { idempotencyKey }) => tasks.create(args, idempotencyKey)
 * })
 * ```
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make = <const Name extends string, A, I, Res, ResI, E = never, EI = never>(
  options: ToolOptions<Name, A, I, Res, ResI, E, EI, never>
): Tool<Name, A, I, Res, ResI, E> => ToolImpl.make(options, parametersJsonSchema(options.parameters))

/**
 * {@link make} for a handler that needs services: captures them from the context it runs in, so
 * the tool needs nothing more in the loop.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeWithServices = <const Name extends string, A, I, Res, ResI, E = never, EI = never, R = never>(
  options: ToolOptions<Name, A, I, Res, ResI, E, EI, R>
): Effect.Effect<Tool<Name, A, I, Res, ResI, E>, never, R> =>
  Effect.map(Effect.context<R>(), (services) =>
    make<Name, A, I, Res, ResI, E, EI>({
      ...options,
      handler: (args, context) => Effect.provide(options.handler(args, context), services)
    })
  )

// ---------------------------------------------------------------------------------------------
// Outcomes and errors
// ---------------------------------------------------------------------------------------------

/**
 * The model answered without tool calls (or, `degraded: true`, the workflow's degraded mode
 * answered without proposing a side-effecting call).
 *
 * @since 0.2.0
 * @category Models
 */
export interface Completed {
  readonly _tag: "Completed"
  /** The last answer. */
  readonly result: ModelResult
  /** The conversation that led to it (the command's messages, then assistant and tool messages). */
  readonly messages: ReadonlyArray<Message>
  /** Model calls the loop made (of its last pass, after an ambiguous retry). */
  readonly steps: number
  readonly degraded: boolean
}

/**
 * A tool call proposed for approval: the tool and its arguments, decoded with its Schema.
 *
 * @since 0.2.0
 * @category Models
 */
const ProposedCall = Schema.Struct({
  name: Schema.String,
  arguments: Schema.Unknown
}).annotations({ identifier: "@modelgate/core/ToolLoop/ProposedCall" })
/** @since 0.2.0 */
export interface ProposedCall extends Schema.Schema.Type<typeof ProposedCall> {}

/**
 * A degraded step's side-effecting calls, for a person to approve instead of the loop acting.
 * `callId` is the degraded call's.
 *
 * @since 0.2.0
 * @category Models
 */
export class Suggestion extends Schema.TaggedClass<Suggestion>("@modelgate/core/ToolLoop/Suggestion")("Suggestion", {
  runId: Schema.String,
  step: Schema.Int,
  callId: Literals.CallId,
  reason: Schema.Literal("degraded_answer"),
  calls: Schema.Array(ProposedCall)
}) {}

/**
 * How a loop ends without an error.
 *
 * @since 0.2.0
 * @category Models
 */
export type Outcome = Completed | Suggestion

/**
 * The `maxSteps`-th answer still asked for tools; none of them ran. `callId` is that answer's.
 *
 * @since 0.2.0
 * @category Errors
 */
export class MaxStepsExceeded extends Schema.TaggedError<MaxStepsExceeded>()("MaxStepsExceeded", {
  runId: Schema.String,
  maxSteps: Schema.Int,
  callId: Literals.CallId
}) {
  override get message(): string {
    return `tool loop of run ${this.runId} still asked for tools after ${this.maxSteps} step(s)`
  }
}

/**
 * Runs the calls of a {@link Suggestion} a person approved, in order, through the ledger with the
 * keys the loop uses (run id, tool, call identity, ordinal among identical calls counted from the
 * suggestion's first call, as a pass counts them): approving twice, or a run that later asks for the same call at any
 * step, replays the stored result instead of acting again.
 * A call whose tool is not among `tools`, or whose arguments no longer satisfy its Schema, fails
 * with `InvalidRequest` before anything runs.
 *
 * @since 0.2.0
 * @category Combinators
 */
export const approve = (
  suggestion: Suggestion,
  tools: ReadonlyArray<Any>
): Effect.Effect<ReadonlyArray<Executed>, InvalidRequest | LedgerError, ToolLedger.ToolLedger> =>
  Effect.suspend((): Effect.Effect<ReadonlyArray<Executed>, InvalidRequest | LedgerError, ToolLedger.ToolLedger> => {
    const byName = new Map(tools.map((t) => [t.name, t]))
    const prepared: Array<{ readonly name: string; readonly call: Prepared }> = []
    for (const [i, call] of suggestion.calls.entries()) {
      const tool = byName.get(call.name)
      const checked =
        tool === undefined ? Either.left([`$.calls.${i}.name is not one of the tools`]) : tool.validate(call.arguments)
      if (Either.isLeft(checked)) {
        return Effect.fail(
          new InvalidRequest({ reason: "invalid_command", detail: `unusable suggestion: ${checked.left.join("; ")}` })
        )
      }
      prepared.push({ name: call.name, call: checked.right })
    }
    const seen = new Map<string, number>()
    return Effect.forEach(prepared, ({ name, call }, i) =>
      Effect.tap(
        call.execute({
          runId: suggestion.runId,
          step: suggestion.step,
          index: Loop.nextOrdinal(seen, name, call.identity),
          toolCallId: `suggestion/${suggestion.callId}/${i}`
        }),
        (executed) => (executed.failed === undefined ? Loop.countOrdinal(seen, name, call.identity) : undefined)
      )
    )
  })

/**
 * What a degraded answer proposes (see {@link proposing}): tool calls with their arguments.
 *
 * @since 0.2.0
 * @category Models
 */
const Proposal = Schema.Struct({ toolCalls: Schema.Array(ProposedCall) }).annotations({
  identifier: "@modelgate/core/ToolLoop/Proposal"
})
/** @since 0.2.0 */
export interface Proposal extends Schema.Schema.Type<typeof Proposal> {}

/**
 * A degrade handler for an agent workflow (no output schema): the tool calls the step would make,
 * computed without a model (e.g. keyword rules). The loop turns side-effecting ones into a
 * {@link Suggestion}.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const proposing =
  (propose: (command: ModelCommand) => Effect.Effect<ReadonlyArray<ProposedCall>>): DegradeHandler =>
  (command) =>
    Effect.map(propose(command), (toolCalls): Proposal => ({ toolCalls }))

/**
 * The arguments of a proposed call typed by `tool`, when the call is one of `tool`'s (checked
 * against the decoded type of its `parameters`).
 *
 * @since 0.2.0
 * @category Accessors
 */
export const argumentsOf = <A, I>(
  call: ProposedCall,
  tool: { readonly name: string; readonly parameters: Schema.Schema<A, I> }
): Option.Option<A> =>
  call.name === tool.name ? Schema.validateOption(tool.parameters)(call.arguments) : Option.none()

// ---------------------------------------------------------------------------------------------
// The loop
// ---------------------------------------------------------------------------------------------

/**
 * Every error of the loop (a tool's own typed failure goes back to the model instead).
 *
 * @since 0.2.0
 * @category Errors
 */
export type LoopError = GatewayError | MaxStepsExceeded | LedgerError

const decodeProposal = Schema.decodeUnknownOption(Proposal)

/**
 * Runs the tool loop for `command` with `tools` (see the module's rules). The run id is the
 * current `AgentRun`'s, else the command's `runId`; without either it fails with
 * `InvalidRequest` (`invalid_command`). The command's own `tools` are replaced by `tools`.
 *
 * @since 0.2.0
 * @category Combinators
 */
export const run = (
  command: ModelCommand,
  tools: ReadonlyArray<Any>,
  options: Options
): Effect.Effect<Outcome, LoopError, ModelGateway.ModelGateway | ToolLedger.ToolLedger> =>
  Effect.gen(function* () {
    const loop = yield* Loop.setup(command, tools, options)
    const ledger = yield* ToolLedger.ToolLedger
    const withRetries = (left: number): Effect.Effect<Outcome, LoopError, ToolLedger.ToolLedger> =>
      left <= 0
        ? pass(loop)
        : Effect.catchIf(
            pass(loop),
            (e): e is AmbiguousOutcome => e instanceof AmbiguousOutcome,
            // Replay only when every side-effecting call so far has a completed-effect record.
            () => Effect.zipRight(ledger.checkReplay(loop.keysRun), withRetries(left - 1))
          )
    return yield* withRetries(options.ambiguousRetries ?? 0).pipe(
      Effect.onExit((exit) =>
        Loop.taskCompleted(loop.events, loop.agentRun, exit, outcomeName, {
          steps: loop.state.steps,
          usage: loop.state.usage,
          startedAt: loop.state.startedAt,
          spentAtStart: loop.spentAtStart
        })
      )
    )
  })

/** How a loop that ended without an error is reported in `TaskCompleted`. */
const outcomeName = (outcome: Outcome): "completed" | "suggested" | "degraded" =>
  outcome._tag === "Suggestion" ? "suggested" : outcome.degraded ? "degraded" : "completed"

/** One pass of the loop from its first step: steps until one ends it. */
const pass = (loop: Loop.LoopContext): Effect.Effect<Outcome, LoopError, ToolLedger.ToolLedger> =>
  Effect.gen(function* () {
    loop.state.steps = 0
    loop.ordinals.clear()
    loop.pending.clear()
    for (const key of loop.keysRun) loop.pending.add(key.id)
    const messages: Array<Message> = [...loop.command.messages]
    for (let k = 0; ; k++) {
      const outcome = yield* step(loop, messages, k)
      if (outcome !== undefined) return outcome
    }
  })

/**
 * Step `k` of a pass: one model call, then the tool calls it asks for, their messages appended to
 * `messages`. The outcome when the step ends the loop, else `undefined`.
 */
const step = (
  loop: Loop.LoopContext,
  messages: Array<Message>,
  k: number
): Effect.Effect<Outcome | undefined, LoopError, ToolLedger.ToolLedger> =>
  Effect.gen(function* () {
    const n = loop.firstStep + k
    const cmd = yield* Loop.commandFor(loop, messages, n)
    loop.state.steps++
    const result = yield* AgentRun.step(n, loop.gateway.generate(cmd))
    loop.state.usage = loop.state.usage.add(result.evidence.usage)
    if (result.evidence.degraded) return yield* degradedOutcome(loop, result, n, messages)
    const calls = result.content.toolCalls
    if (calls.length === 0) {
      return { _tag: "Completed", result, messages, steps: loop.state.steps, degraded: false } satisfies Completed
    }
    if (k + 1 >= loop.maxSteps) {
      return yield* new MaxStepsExceeded({ runId: loop.runId, maxSteps: loop.maxSteps, callId: result.evidence.callId })
    }
    const text = result.content.text
    messages.push({ _tag: "assistant", toolCalls: calls, ...(text !== undefined ? { content: text } : {}) })
    // The step's results are all recorded (side-effecting ones in the ledger) before the next model call.
    const keysBefore = loop.keysRun.length
    for (const call of calls) {
      const content = yield* Loop.runCall(loop, call, n)
      messages.push({ _tag: "tool", toolCallId: call.id, name: call.name.slice(0, 64), content })
    }
    yield* Loop.checkpoint(loop.events, loop.agentRun, n, calls.length, loop.keysRun.length - keysBefore)
    return undefined
  })

/** A degraded answer: a Suggestion of its side-effecting proposals, else Completed (degraded). */
const degradedOutcome = (
  loop: Loop.LoopContext,
  result: ModelResult,
  step: number,
  messages: ReadonlyArray<Message>
): Effect.Effect<Outcome, InvalidOutput> =>
  Effect.gen(function* () {
    const completed: Completed = { _tag: "Completed", result, messages, steps: loop.state.steps, degraded: true }
    const proposal = decodeProposal(result.content.value)
    if (Option.isNone(proposal)) return completed
    const calls: Array<ProposedCall> = []
    const invalid = (issues: ReadonlyArray<string>) =>
      new InvalidOutput({ callId: result.evidence.callId, attempts: result.evidence.attempts, issues })
    for (const [i, proposed] of proposal.value.toolCalls.entries()) {
      const tool = loop.byName.get(proposed.name)
      if (tool === undefined) return yield* invalid([`$.toolCalls.${i}.name is not a tool of the loop`])
      if (!tool.sideEffecting) continue
      const decoded = tool.decode(proposed.arguments)
      if (Either.isLeft(decoded)) {
        return yield* invalid(decoded.left.map((issue) => issue.replace(/^\$/, `$.toolCalls.${i}.arguments`)))
      }
      calls.push({ name: tool.name, arguments: decoded.right.arguments })
    }
    if (calls.length === 0) return completed
    return new Suggestion({ runId: loop.runId, step, callId: result.evidence.callId, reason: "degraded_answer", calls })
  })
