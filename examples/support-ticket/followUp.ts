/**
 * `ticket.followUp`: an agent step whose model may call the side-effecting tool
 * `create_follow_up_task`. The gateway retries model calls, never tools: the tool runs through the
 * `ToolLedger`, keyed by (run id, step, tool name), so when the step is retried after a model call
 * timed out *after* the tool ran, the stored task is replayed instead of a second one being created.
 */
import type { GatewayError } from "@modelgate/core/Errors"
import type { Message } from "@modelgate/core/ModelCommand"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import type { ModelResult } from "@modelgate/core/ModelResult"
import * as ToolLedger from "@modelgate/core/ToolLedger"
import { Effect, Ref, Schema } from "effect"
import { prompts, systemPrompt } from "./gateway.js"
import type { Ticket } from "./tickets.js"
import { ticketText } from "./tickets.js"

/** A task in the (fake) ticket system. */
export class Task extends Schema.Class<Task>("Task")({
  id: Schema.String,
  ticketId: Schema.String,
  title: Schema.String,
  dueInDays: Schema.Int
}) {}

const TaskArgs = Schema.parseJson(
  Schema.Struct({ ticketId: Schema.String, title: Schema.String, dueInDays: Schema.Int.pipe(Schema.between(0, 365)) })
)

export const createFollowUpTask = ToolLedger.sideEffecting({
  name: "create_follow_up_task",
  description: "Creates a follow-up task for a support agent in the ticket system.",
  parameters: {
    type: "object",
    properties: {
      ticketId: { type: "string" },
      title: { type: "string" },
      dueInDays: { type: "integer", minimum: 0, maximum: 365 }
    },
    required: ["ticketId", "title", "dueInDays"],
    additionalProperties: false
  },
  result: Task
})

/** The ticket system the tool writes to: counts what it really created. */
export interface TaskSystem {
  readonly create: (args: {
    readonly ticketId: string
    readonly title: string
    readonly dueInDays: number
  }) => Effect.Effect<Task>
  readonly created: Effect.Effect<ReadonlyArray<Task>>
}

export const makeTaskSystem = Effect.map(
  Ref.make<ReadonlyArray<Task>>([]),
  (ref): TaskSystem => ({
    create: (args) =>
      Ref.modify(ref, (all) => {
        const task = new Task({ id: `TASK-${1001 + all.length}`, ...args })
        return [task, [...all, task]]
      }),
    created: Ref.get(ref)
  })
)

/** What happened in a step, for the printout. */
export type StepEvent =
  | { readonly _tag: "Tool"; readonly key: string; readonly executed: boolean; readonly task: Task }
  | { readonly _tag: "ToolError"; readonly key: string; readonly message: string }
  | { readonly _tag: "Retry"; readonly attempt: number; readonly reason: string }

export interface FollowUpOptions {
  readonly ticket: Ticket
  readonly runId: string
  readonly tasks: TaskSystem
  /** Runs one gateway call (and prints it). */
  readonly generate: (command: ModelCommand, label: string) => Effect.Effect<ModelResult, GatewayError>
  readonly onEvent: (event: StepEvent) => Effect.Effect<void>
  /** Times the agent retries the whole step after a model call failed for availability reasons. */
  readonly maxStepAttempts?: number
}

const decodeCommand = Schema.decodeSync(ModelCommand)
const retryable = new Set(["AmbiguousOutcome", "DeadlineExceeded", "ProviderUnavailable", "RateLimited"])

/**
 * Step 1 of the follow-up agent: ask the model, run the tool it calls through the ledger, give the
 * model the result, get its confirmation. Retried as a whole (up to `maxStepAttempts`) when a model
 * call fails for availability reasons; the tool never runs twice.
 */
export const runFollowUp = (options: FollowUpOptions) =>
  Effect.gen(function* () {
    const ledger = yield* ToolLedger.ToolLedger
    const { ticket, runId, tasks } = options
    const step = 1
    const tools = [ToolLedger.toolDefinition(createFollowUpTask)]
    const system: Message = { _tag: "system", content: systemPrompt(prompts.followUp) }
    const user: Message = { _tag: "user", content: ticketText(ticket) }
    const command = (messages: readonly [Message, ...Array<Message>]) =>
      decodeCommand({
        workflow: "ticket.followUp",
        tenant: ticket.tenant.id,
        messages,
        tools,
        runId,
        step,
        ...("regions" in ticket.tenant ? { regions: ticket.tenant.regions } : {})
      })

    const attemptStep = Effect.gen(function* () {
      const proposal = yield* options.generate(command([system, user]), "propose")
      const calls = proposal.content.toolCalls.filter((c) => c.name === createFollowUpTask.name)
      if (calls.length === 0) return { task: undefined, confirmation: proposal.content.text }
      const toolMessages: Array<Message> = []
      let task: Task | undefined
      for (const [index, call] of calls.entries()) {
        const key = ToolLedger.key(createFollowUpTask, { runId, step, index })
        const args = yield* Schema.decode(TaskArgs)(call.arguments).pipe(Effect.orDie)
        let executed = false
        task = yield* ledger.runOnce(
          key,
          Effect.suspend(() => {
            executed = true
            return tasks.create(args)
          })
        )
        yield* options.onEvent({ _tag: "Tool", key: key.id, executed, task })
        toolMessages.push({
          _tag: "tool",
          toolCallId: call.id,
          name: call.name,
          content: JSON.stringify({ taskId: task.id })
        })
      }
      const confirmation = yield* options.generate(
        command([system, user, { _tag: "assistant", toolCalls: calls }, ...toolMessages]),
        "confirm"
      )
      return { task, confirmation: confirmation.content.text }
    })

    const max = options.maxStepAttempts ?? 2
    for (let attempt = 1; ; attempt++) {
      const outcome = yield* Effect.either(attemptStep)
      if (outcome._tag === "Right") return outcome.right
      const error = outcome.left
      if (error._tag === "ToolReplayRefused" || error._tag === "ToolResultUndecodable") {
        yield* options.onEvent({ _tag: "ToolError", key: "key" in error ? error.key : "", message: error.message })
        return yield* Effect.fail(error)
      }
      if (attempt >= max || !retryable.has(error._tag)) return yield* Effect.fail(error)
      yield* options.onEvent({ _tag: "Retry", attempt: attempt + 1, reason: error._tag })
    }
  })
