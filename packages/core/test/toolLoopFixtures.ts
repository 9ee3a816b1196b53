/**
 * Shared by the tool-loop and run-event tests: an agent workflow (with and without a degraded mode
 * that proposes a follow-up task), two tools (side-effecting `create_task`, read-only
 * `lookup_order`) whose handlers count what they really did, and the gateway with a memory ledger.
 */
import { AgentRun, GatewayConfig, ToolLedger, ToolLoop } from "@modelgate/core"
import { TenantId } from "@modelgate/core/ModelCommand"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Layer, Schema } from "effect"
import { Classification, command, gatewayLayer, targets, workflow, workflows } from "./fixtures.js"
import { driven } from "./virtualTime.js"
import { callIdentity } from "../src/internal/callIdentity.js"
import { callIdempotencyKey } from "../src/internal/toolCallKey.js"

export const Task = Schema.Struct({ id: Schema.String, title: Schema.String })

export const OrderId = Schema.String.pipe(Schema.pattern(/^ORD-\d{6}$/))

/** The tools with what their handlers did: keys of created tasks, orders looked up. */
export const makeTools = (delays: { readonly create?: number; readonly lookup?: number } = {}) => {
  const created: Array<string | undefined> = []
  const lookedUp: Array<string> = []
  const createTask = ToolLoop.make({
    name: "create_task",
    description: "Creates a follow-up task in the ticket system",
    parameters: Schema.Struct({ ticketId: Schema.String, title: Schema.String.pipe(Schema.minLength(3)) }),
    result: Task,
    sideEffecting: true,
    handler: (args, context) =>
      Effect.zipRight(
        Effect.sleep(delays.create ?? 0),
        Effect.sync(() => {
          created.push(context.idempotencyKey)
          return { id: `TASK-${created.length}`, title: args.title }
        })
      )
  })
  const lookupOrder = ToolLoop.make({
    name: "lookup_order",
    description: "Reads an order's status",
    parameters: Schema.Struct({ orderId: OrderId }),
    result: Schema.Struct({ status: Schema.String }),
    sideEffecting: false,
    handler: (args) =>
      Effect.zipRight(
        Effect.sleep(delays.lookup ?? 0),
        Effect.sync(() => {
          lookedUp.push(args.orderId)
          return { status: "shipped" }
        })
      )
  })
  return { createTask, lookupOrder, tools: [createTask, lookupOrder], created, lookedUp }
}

/** What the degraded mode of `ticket.agentDegraded` proposes: one follow-up task. */
export const proposeTask = ToolLoop.proposing(() =>
  Effect.succeed([
    { name: "lookup_order", arguments: { orderId: "ORD-123456" } },
    { name: "create_task", arguments: { ticketId: "T-1", title: "Call the customer back" } }
  ])
)

export const agentDefinition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets,
    workflows: [
      ...workflows,
      workflow({ name: "ticket.agent" }),
      workflow({ name: "ticket.agentDegraded", degrade: { _tag: "handler", name: "proposeTask" } })
    ]
  }),
  schemas: { Classification },
  degradeHandlers: { proposeTask }
}

/** The gateway over scripted providers with the agent workflows, and a ledger in memory. */
export const agentLayer = (scripts: ScriptedProvider.Scripts) =>
  Layer.merge(gatewayLayer(scripts, agentDefinition), ToolLedger.layerMemory)

/** A tool call as the model sends it: its arguments as JSON text. */
export const toolCall = (id: string, name: string, args: unknown) => ({ id, name, arguments: JSON.stringify(args) })

/** A model step answering after 10 ms with one tool call. */
export const asks = (id: string, name: string, args: unknown) =>
  ScriptedProvider.success({ after: 10, toolCalls: [toolCall(id, name, args)] })

/** A model step answering after 10 ms with text and no tool call. */
export const answers = (text: string) => ScriptedProvider.success({ after: 10, text })

/**
 * Step 1 asks for `create_task`; step 2 fails after 50 ms with a 500 that may have been processed
 * (the gateway does not retry it: AmbiguousOutcome); the retried step 1 asks for the same call
 * (under the model's call id `retryCallId`).
 */
export const createThenAmbiguous = (retryCallId = "c1") => [
  asks("c1", "create_task", { ticketId: "T-1", title: "Call back" }),
  ScriptedProvider.fail(50, { kind: "server_error", processed: "maybe", httpStatus: 500 }),
  asks(retryCallId, "create_task", { ticketId: "T-1", title: "Call back" })
]

/** The ledger key `create_task` gets for `args` in run `runId` (the `ordinal`-th identical call of its pass). */
export const taskKey = (runId: string, args: { readonly ticketId: string; readonly title: string }, ordinal = 0) =>
  callIdempotencyKey(runId, "create_task", callIdentity(args), ordinal)

/** `body` in agent run `runId` of tenant acme (deadline one minute), virtual time driven up to 10 s. */
export const inRun = <A, E, R>(runId: string, body: Effect.Effect<A, E, R>) =>
  driven(AgentRun.run({ runId, deadline: "1 minute", tenant: TenantId.make("acme") }, body), 10_000)

/** The "ticket.agent" loop over `tools` in run `runId` ({@link inRun}); its outcome, which must be `Completed`. */
export const completedIn = (runId: string, tools: ReadonlyArray<ToolLoop.Any>, options: ToolLoop.Options) =>
  Effect.flatMap(inRun(runId, ToolLoop.run(command("ticket.agent"), tools, options)), (outcome) =>
    outcome._tag === "Completed"
      ? Effect.succeed(outcome)
      : Effect.dieMessage(`the loop ended with ${outcome._tag}, not Completed`)
  )
