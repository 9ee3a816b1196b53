/**
 * `ticket.followUp`: the assistant's agent step, as an `AgentRun` with a deadline and a budget of
 * its own, driving a `ToolLoop` whose model may call the side-effecting tool
 * `create_follow_up_task` (declared by Schema). Every model step goes through the gateway inside the
 * run: its deadline is the earlier of the workflow's and what is left of the run's, its reservation
 * is carved from the run's budget, its record carries the run id and step.
 *
 * The gateway retries model calls, never tools: the tool runs through the `ToolLedger`, keyed by
 * (run id, step, tool name). When a model call after the tool ends in `AmbiguousOutcome` (it may
 * have been processed, and the gateway never retries that while a side-effecting tool is offered),
 * the loop starts again from step 1 (`ambiguousRetries: 1`): the model asks for the task again and
 * the ledger replays the stored one instead of creating a second.
 *
 * The run's hook events (`RunEvents`) drive the printout: tool calls, checkpoints with the run's
 * spend and time left, and the end of the loop.
 */
import type { GatewayError } from "@modelgate/core/Errors"
import * as AgentRun from "@modelgate/core/AgentRun"
import type { Message } from "@modelgate/core/ModelCommand"
import { ModelCommand, TenantId } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import type { ModelResult } from "@modelgate/core/ModelResult"
import * as RunEvents from "@modelgate/core/RunEvents"
import * as ToolLoop from "@modelgate/core/ToolLoop"
import { Effect, PubSub, Queue, Ref, Schema } from "effect"
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

/** The arguments of `create_follow_up_task`: decoded from the model's JSON, offered as JSON Schema. */
export const TaskArgs = Schema.Struct({
  ticketId: Schema.String,
  title: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  dueInDays: Schema.Int.pipe(Schema.between(0, 365))
})

/** The ticket system the tool writes to: counts what it really created. */
export interface TaskSystem {
  readonly create: (args: typeof TaskArgs.Type) => Effect.Effect<Task>
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

/** `create_follow_up_task` over `tasks`: side-effecting, so it runs through the ledger. */
export const createFollowUpTask = (tasks: TaskSystem) =>
  ToolLoop.make({
    name: "create_follow_up_task",
    description: "Creates a follow-up task for a support agent in the ticket system.",
    parameters: TaskArgs,
    result: Task,
    sideEffecting: true,
    handler: (args) => tasks.create(args)
  })

/** What the printout is told: the run's start, then its hook events as they happen. */
export type FollowUpEvent =
  | {
      readonly _tag: "RunStarted"
      readonly runId: string
      readonly deadlineMs: number
      readonly budget: number
    }
  | RunEvents.RunEvent

export interface FollowUpOptions {
  readonly ticket: Ticket
  readonly runId: string
  readonly tasks: TaskSystem
  /** Time the whole agent step may take (ms). */
  readonly deadlineMs: number
  /** Money the whole agent step may spend. */
  readonly budget: number
  /** Runs one gateway call of the loop (and prints it); `label` names its step. */
  readonly generate: (command: ModelCommand, label: string) => Effect.Effect<ModelResult, GatewayError>
  /** Called in order, between the loop's model calls and once at its end. */
  readonly onEvent: (event: FollowUpEvent) => Effect.Effect<void>
}

const decodeCommand = Schema.decodeSync(ModelCommand)

/**
 * The follow-up agent: a run of at most 3 model steps, the tool through the ledger, one restart
 * from step 1 after `AmbiguousOutcome`. Ends with the loop's outcome, or its typed error
 * (`RunExhausted` when the run's time or money is gone before a step starts).
 */
export const runFollowUp = (options: FollowUpOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { ticket, runId } = options
      const gateway = yield* ModelGateway.ModelGateway
      const hub = yield* RunEvents.make
      const subscription = yield* PubSub.subscribe(hub)
      // Events are published as they happen; they are printed between model calls (and at the
      // end), so the printout keeps their order among the calls' own lines.
      const flush = Effect.flatMap(Queue.takeAll(subscription), (events) =>
        Effect.forEach(events, options.onEvent, { discard: true })
      )
      const printing = ModelGateway.ModelGateway.of({
        ...gateway,
        generate: (command) => Effect.zipRight(flush, options.generate(command, `step ${command.step ?? "?"}`))
      })
      const system: Message = { _tag: "system", content: systemPrompt(prompts.followUp) }
      const user: Message = { _tag: "user", content: ticketText(ticket) }
      const command = decodeCommand({
        workflow: "ticket.followUp",
        tenant: ticket.tenant.id,
        messages: [system, user],
        ...("regions" in ticket.tenant ? { regions: ticket.tenant.regions } : {})
      })
      yield* options.onEvent({ _tag: "RunStarted", runId, deadlineMs: options.deadlineMs, budget: options.budget })
      const loop = ToolLoop.run(command, [createFollowUpTask(options.tasks)], { maxSteps: 3, ambiguousRetries: 1 })
      return yield* AgentRun.run(
        {
          runId,
          deadline: options.deadlineMs,
          budget: options.budget,
          tenant: TenantId.make(ticket.tenant.id),
          events: hub
        },
        Effect.provideService(loop, ModelGateway.ModelGateway, printing)
      ).pipe(Effect.ensuring(flush))
    })
  )

/** One block of the printout: its label and lines (without colors: the caller styles them). */
export interface Note {
  readonly label: "tool" | "run" | "agent"
  readonly tone: "ok" | "warn" | "error" | "info"
  readonly lines: ReadonlyArray<string>
}

const usd = (n: number) => `$${n.toFixed(6)}`

/**
 * The printout of a follow-up event (model calls print themselves: `PreModel`/`PostModel` only
 * add a note when the loop starts again after `AmbiguousOutcome`).
 */
export const noteOf = (event: FollowUpEvent, run: { readonly budget: number }): Note | undefined => {
  switch (event._tag) {
    case "RunStarted":
      return {
        label: "run",
        tone: "info",
        lines: [
          `${event.runId} · deadline ${event.deadlineMs} ms · budget ${usd(event.budget)} · at most 3 model steps`
        ]
      }
    case "PostModel":
      return event.errorTag === "AmbiguousOutcome"
        ? {
            label: "agent",
            tone: "warn",
            lines: [
              `step ${event.step} ended in AmbiguousOutcome (the gateway does not retry it while a side-effecting tool is offered);`,
              "the loop starts again from step 1 — the ledger replays tools, never runs them twice"
            ]
          }
        : undefined
    case "PreTool":
    case "PreModel":
      return undefined
    case "PostTool":
      return {
        label: "tool",
        tone: event.outcome === "success" || event.outcome === "replayed" ? "ok" : "error",
        lines: [
          event.outcome === "success"
            ? `${event.tool} executed (step ${event.step}, ${event.latencyMs} ms)`
            : event.outcome === "replayed"
              ? `${event.tool} replayed from the ledger (step ${event.step}), not executed again`
              : `${event.tool} ${event.outcome}${event.errorTag ? ` (${event.errorTag})` : ""}`,
          ...(event.key !== undefined ? [`idempotency key ${event.key}`] : [])
        ]
      }
    case "Checkpoint":
      return {
        label: "run",
        tone: "info",
        lines: [
          `step ${event.step} recorded (${event.tools} tool result${event.tools === 1 ? "" : "s"}, ${event.effects} in the ledger) · spent ${usd(event.spent)} of ${usd(run.budget)}${event.remainingBudget !== undefined ? ` · ${usd(event.remainingBudget)} left` : ""} · ${event.remainingMs} ms left`
        ]
      }
    case "TaskCompleted":
      return {
        label: "run",
        tone: event.outcome === "failed" ? "error" : event.outcome === "completed" ? "ok" : "warn",
        lines: [
          `${event.outcome}${event.errorTag ? ` (${event.errorTag})` : ""} after ${event.steps} model step${event.steps === 1 ? "" : "s"} · run cost ${usd(event.cost)} of ${usd(run.budget)} · ${event.latencyMs} ms`
        ]
      }
  }
}
