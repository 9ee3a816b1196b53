/**
 * The typed tool loop: every model step through the gateway, arguments decoded with the tool's
 * Schema (a bad one goes back to the model), side-effecting tools through the ledger (replayed,
 * never run twice, after AmbiguousOutcome), maxSteps, and the degraded step's Suggestion.
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentRun, CallRecorder, ToolLedger, ToolLoop } from "@modelgate/core"
import { type Message, TenantId } from "@modelgate/core/ModelCommand"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Option, Schema } from "effect"
import { command, refs } from "./fixtures.js"
import {
  agentLayer,
  answers,
  asks,
  createThenAmbiguous,
  makeTools,
  taskKey,
  toolCall,
  completedIn,
  inRun
} from "./toolLoopFixtures.js"
import { keepingTracer } from "./keptSpans.js"
import { driven, failureOf } from "./virtualTime.js"
import { callIdentity } from "../src/internal/callIdentity.js"
import { callIdempotencyKey } from "../src/internal/toolCallKey.js"

const tenant = TenantId.make("acme")
const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const attempts = Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)

/** Both routes of the agent workflows answer 503. */
const routesDown = {
  [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
  [refs.fallback]: [ScriptedProvider.unavailable({ after: 10 })]
}

/** `body` with fresh tools, on an agent gateway answering with `scripts` and an in-memory ledger. */
const withTools = <A, E, R>(
  scripts: ScriptedProvider.Scripts,
  body: (t: ReturnType<typeof makeTools>) => Effect.Effect<A, E, R>
) => Effect.suspend(() => body(makeTools())).pipe(Effect.provide(agentLayer(scripts)))

/** The contents of the tool messages of a conversation, in order. */
const toolContents = (messages: ReadonlyArray<Message>): Array<string> =>
  messages.flatMap((m) => (m._tag === "tool" ? [m.content] : []))

const ToolMessage = Schema.parseJson(
  Schema.Struct({ error: Schema.String, issues: Schema.optional(Schema.Array(Schema.String)) })
)

describe("ToolLoop.make", () => {
  it("offers the parameters' JSON Schema and the side-effect flag; refuses a bad name", () => {
    const t = makeTools()
    assert.deepStrictEqual(t.createTask.definition.parameters, {
      type: "object",
      required: ["ticketId", "title"],
      properties: {
        ticketId: { type: "string" },
        title: {
          type: "string",
          minLength: 3,
          title: "minLength(3)",
          description: "a string at least 3 character(s) long"
        }
      },
      additionalProperties: false
    })
    assert.isTrue(t.createTask.definition.sideEffecting)
    assert.isFalse(t.lookupOrder.definition.sideEffecting)
    assert.deepStrictEqual([t.createTask.info.kind, t.lookupOrder.info.kind], ["sideEffecting", "readOnly"])
    assert.throws(() =>
      ToolLoop.make({
        name: "no spaces",
        description: "",
        parameters: Schema.Struct({}),
        result: Schema.String,
        sideEffecting: false,
        handler: () => Effect.succeed("")
      })
    )
  })
})

describe("ToolLoop", () => {
  it.effect("a bad argument goes back to the model as a tool error; it corrects; the read-only tool runs", () =>
    withTools(
      {
        [refs.primary]: [
          asks("c1", "lookup_order", { orderId: "ORD-12" }),
          asks("c2", "lookup_order", { orderId: "ORD-123456" }),
          answers("Your order has shipped.")
        ]
      },
      (t) =>
        Effect.gen(function* () {
          const outcome = yield* completedIn("run-bad-arg", t.tools, { maxSteps: 4 })
          assert.strictEqual(outcome.steps, 3)
          assert.isFalse(outcome.degraded)
          assert.strictEqual(outcome.result.content.text, "Your order has shipped.")
          // The model saw: its call with the bad argument, the tool error, its corrected call, the result.
          const tail = outcome.messages.slice(2)
          assert.deepStrictEqual(
            tail.map((m) => m._tag),
            ["assistant", "tool", "assistant", "tool"]
          )
          const error = Schema.decodeUnknownSync(ToolMessage)(tail[1]?._tag === "tool" ? tail[1].content : "")
          assert.strictEqual(error.error, "invalid arguments")
          assert.strictEqual(error.issues?.length, 1)
          assert.match(error.issues?.[0] ?? "", /^\$\.orderId is invalid/)
          // Value-free: the bad value is not echoed back.
          assert.notInclude(tail[1]?._tag === "tool" ? tail[1].content : "", "ORD-12")
          assert.deepStrictEqual(tail[3], {
            _tag: "tool",
            toolCallId: "c2",
            name: "lookup_order",
            content: JSON.stringify({ status: "shipped" })
          })
          // The read-only tool ran once (for the good argument), outside the ledger.
          assert.deepStrictEqual(t.lookedUp, ["ORD-123456"])
          const ledger = yield* ToolLedger.ToolLedger
          assert.deepStrictEqual(yield* ledger.records("run-bad-arg"), [])
          // Every model step went through the gateway with the run id and its step, and offered the tools.
          const recorded = yield* records
          assert.deepStrictEqual(
            recorded.map((r) => [r.evidence.runId, r.evidence.step, r.evidence.workflow, r.outcome]),
            [
              ["run-bad-arg", 1, "ticket.agent", "success"],
              ["run-bad-arg", 2, "ticket.agent", "success"],
              ["run-bad-arg", 3, "ticket.agent", "success"]
            ]
          )
          const log = yield* attempts
          assert.deepStrictEqual(
            log.map((a) => [a.startedAt, a.messages]),
            [
              [0, 2],
              [10, 4],
              [20, 6]
            ]
          )
        })
    )
  )

  it.effect("arguments that are not JSON, an unknown tool and unknown fields are tool errors too", () =>
    withTools(
      {
        [refs.primary]: [
          ScriptedProvider.success({
            after: 10,
            toolCalls: [
              { id: "c1", name: "lookup_order", arguments: "{not json" },
              toolCall("c2", "delete_everything", {}),
              toolCall("c3", "lookup_order", { orderId: "ORD-123456", extra: 1 })
            ]
          }),
          answers("Sorry.")
        ]
      },
      (t) =>
        Effect.gen(function* () {
          const outcome = yield* completedIn("run-errors", t.tools, { maxSteps: 2 })
          const contents = toolContents(outcome.messages).map((c) => JSON.parse(c))
          assert.deepStrictEqual(contents, [
            { error: "invalid arguments", issues: ["$ is not valid JSON"] },
            { error: "unknown tool", tools: ["create_task", "lookup_order"] },
            { error: "invalid arguments", issues: ["$.extra is unexpected"] }
          ])
          assert.deepStrictEqual([t.created, t.lookedUp], [[], []])
        })
    )
  )

  it.effect("two calls of one tool in a step get their own ledger keys, by their arguments", () =>
    withTools(
      {
        [refs.primary]: [
          ScriptedProvider.success({
            after: 10,
            toolCalls: [
              toolCall("c1", "create_task", { ticketId: "T-1", title: "Call back" }),
              toolCall("c2", "lookup_order", { orderId: "ORD-123456" }),
              toolCall("c3", "create_task", { ticketId: "T-1", title: "Send the refund" })
            ]
          }),
          answers("Both scheduled.")
        ]
      },
      (t) =>
        Effect.gen(function* () {
          yield* completedIn("run-twice", t.tools, { maxSteps: 2 })
          assert.deepStrictEqual(t.created, [
            taskKey("run-twice", { ticketId: "T-1", title: "Call back" }),
            taskKey("run-twice", { ticketId: "T-1", title: "Send the refund" })
          ])
          assert.deepStrictEqual(t.lookedUp, ["ORD-123456"])
        })
    )
  )

  it.effect("a side-effecting tool retried after AmbiguousOutcome is replayed once from the ledger", () =>
    withTools(
      {
        [refs.primary]: [
          // The model's retried call has another id; the ledger key is (run, tool, arguments, ordinal).
          ...createThenAmbiguous("c9"),
          answers("Scheduled.")
        ]
      },
      (t) =>
        Effect.gen(function* () {
          const outcome = yield* inRun(
            "run-ambiguous",
            ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 3, ambiguousRetries: 1 })
          )
          assert.strictEqual(outcome._tag, "Completed")
          // The tool ran once, with the key of (run, create_task, its arguments); the retry replayed it.
          const key = taskKey("run-ambiguous", { ticketId: "T-1", title: "Call back" })
          assert.deepStrictEqual(t.created, [key])
          const ledger = yield* ToolLedger.ToolLedger
          const stored = yield* ledger.records("run-ambiguous")
          assert.deepStrictEqual(
            stored.map((r) => [r.key, r.status, r.result]),
            [[key, "completed", { id: "TASK-1", title: "Call back" }]]
          )
          if (outcome._tag === "Completed") {
            const results = toolContents(outcome.messages)
            assert.deepStrictEqual(results, [JSON.stringify({ id: "TASK-1", title: "Call back" })])
          }
          // The gateway did not retry the ambiguous model call itself: one attempt, AmbiguousOutcome.
          const recorded = yield* records
          assert.deepStrictEqual(
            recorded.map((r) => [r.evidence.step, r.outcome, r.errorTag ?? null, r.evidence.attempts.length]),
            [
              [1, "success", null, 1],
              [2, "failed", "AmbiguousOutcome", 1],
              [1, "success", null, 1],
              [2, "success", null, 1]
            ]
          )
        })
    )
  )

  it.effect("without ambiguousRetries the loop fails with AmbiguousOutcome; running it again replays", () =>
    withTools(
      {
        [refs.primary]: [...createThenAmbiguous(), answers("Scheduled.")]
      },
      (t) =>
        Effect.gen(function* () {
          const loop = ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 3 })
          const first = yield* inRun("run-again", Effect.exit(loop))
          assert.strictEqual(failureOf(first)?._tag, "AmbiguousOutcome")
          assert.strictEqual(t.created.length, 1)
          // The caller's retry (or another process picking the run up) with the same run id.
          const second = yield* inRun("run-again", loop)
          assert.strictEqual(second._tag, "Completed")
          assert.strictEqual(t.created.length, 1)
        })
    )
  )

  it.effect("the run's budget runs out mid-loop: step 3 never starts, RunExhausted carries steps 1–2", () =>
    withTools(
      {
        [refs.primary]: [
          // 100 × 0.4/M + 20 × 1.6/M = 0.000072; then 100 × 0.4/M + 400 × 1.6/M = 0.00068: over the run's 0.0005.
          asks("c1", "lookup_order", { orderId: "ORD-000001" }),
          ScriptedProvider.success({
            after: 10,
            usage: { inputTokens: 100, outputTokens: 400 },
            toolCalls: [toolCall("c2", "lookup_order", { orderId: "ORD-000002" })]
          }),
          answers("never asked")
        ]
      },
      (t) =>
        Effect.gen(function* () {
          const exit = yield* driven(
            AgentRun.run(
              { runId: "run-budget", deadline: "1 minute", budget: 0.0005, tenant },
              Effect.exit(ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 5 }))
            ),
            10_000
          )
          const error = failureOf(exit)
          assert.strictEqual(error?._tag, "RunExhausted")
          const recorded = yield* records
          if (error?._tag === "RunExhausted") {
            assert.strictEqual(error.reason, "budget")
            assert.deepStrictEqual(
              error.steps.map((s) => [s.step, s.outcome]),
              [
                [1, "success"],
                [2, "success"]
              ]
            )
            assert.deepStrictEqual(error.records, recorded.slice(0, 2))
          }
          // Step 3 was refused before any provider call; step 2's tool had run.
          assert.strictEqual((yield* attempts).length, 2)
          assert.deepStrictEqual(
            recorded.map((r) => [r.evidence.step, r.outcome, r.errorTag ?? null]),
            [
              [1, "success", null],
              [2, "success", null],
              [3, "failed", "RunExhausted"]
            ]
          )
          assert.deepStrictEqual(t.lookedUp, ["ORD-000001", "ORD-000002"])
        })
    )
  )

  it.effect("maxSteps: the last answer still asks for tools → MaxStepsExceeded, its tools do not run", () =>
    withTools(
      {
        [refs.primary]: [
          asks("c1", "lookup_order", { orderId: "ORD-000001" }),
          asks("c2", "lookup_order", { orderId: "ORD-000002" })
        ]
      },
      (t) =>
        Effect.gen(function* () {
          const exit = yield* inRun(
            "run-max",
            Effect.exit(ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 2 }))
          )
          const error = failureOf(exit)
          assert.strictEqual(error?._tag, "MaxStepsExceeded")
          const recorded = yield* records
          assert.strictEqual(recorded.length, 2)
          if (error?._tag === "MaxStepsExceeded") {
            assert.deepStrictEqual(
              [error.runId, error.maxSteps, error.callId],
              ["run-max", 2, recorded[1]!.evidence.callId]
            )
          }
          // Step 1's call ran; step 2's did not.
          assert.deepStrictEqual(t.lookedUp, ["ORD-000001"])
        })
    )
  )

  it.effect("a handler's typed failure goes back to the model; the side-effecting call is not done", () => {
    class TicketLocked extends Schema.TaggedError<TicketLocked>()("TicketLocked", { ticketId: Schema.String }) {}
    let attemptsToCreate = 0
    const flaky = ToolLoop.make({
      name: "create_task",
      description: "Creates a task",
      parameters: Schema.Struct({ ticketId: Schema.String }),
      result: Schema.String,
      failure: TicketLocked,
      sideEffecting: true,
      handler: (args) =>
        ++attemptsToCreate === 1 ? Effect.fail(new TicketLocked({ ticketId: args.ticketId })) : Effect.succeed("TASK-9")
    })
    return Effect.gen(function* () {
      const outcome = yield* completedIn("run-locked", [flaky], { maxSteps: 3 })
      const contents = toolContents(outcome.messages).map((c) => JSON.parse(c))
      assert.deepStrictEqual(contents, [
        { error: "tool failed", tag: "TicketLocked", failure: { _tag: "TicketLocked", ticketId: "T-1" } },
        "TASK-9"
      ])
      const ledger = yield* ToolLedger.ToolLedger
      // Step 1's claim was dropped (not done); step 2's call (the same call asked again) completed.
      assert.deepStrictEqual(
        (yield* ledger.records("run-locked")).map((r) => [r.key, r.step, r.status]),
        [[callIdempotencyKey("run-locked", "create_task", callIdentity({ ticketId: "T-1" })), 2, "completed"]]
      )
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asks("c1", "create_task", { ticketId: "T-1" }),
            asks("c2", "create_task", { ticketId: "T-1" }),
            answers("Done.")
          ]
        })
      )
    )
  })

  it.effect(
    "degraded step: routes down, the degraded mode proposes a side-effecting call → Suggestion, no tool runs",
    () => {
      const t = makeTools()
      return Effect.gen(function* () {
        const outcome = yield* inRun(
          "run-degraded",
          ToolLoop.run(command("ticket.agentDegraded"), t.tools, { maxSteps: 3 })
        )
        assert.strictEqual(outcome._tag, "Suggestion")
        if (outcome._tag !== "Suggestion") return
        const recorded = yield* records
        assert.strictEqual(recorded.length, 1)
        assert.deepStrictEqual([recorded[0]!.outcome, recorded[0]!.evidence.degraded], ["degraded", true])
        assert.deepStrictEqual(
          { runId: outcome.runId, step: outcome.step, callId: outcome.callId, reason: outcome.reason },
          { runId: "run-degraded", step: 1, callId: recorded[0]!.evidence.callId, reason: "degraded_answer" }
        )
        // Only the side-effecting proposal, its arguments decoded with the tool's Schema.
        assert.deepStrictEqual(outcome.calls, [
          { name: "create_task", arguments: { ticketId: "T-1", title: "Call the customer back" } }
        ])
        assert.deepStrictEqual(
          ToolLoop.argumentsOf(outcome.calls[0]!, t.createTask),
          Option.some({ ticketId: "T-1", title: "Call the customer back" })
        )
        assert.isTrue(Option.isNone(ToolLoop.argumentsOf(outcome.calls[0]!, t.lookupOrder)))
        // Nothing ran: neither tool, nor the ledger.
        assert.deepStrictEqual([t.created, t.lookedUp], [[], []])
        const ledger = yield* ToolLedger.ToolLedger
        assert.deepStrictEqual(yield* ledger.records("run-degraded"), [])
        // Both routes were tried (availability) before the degraded mode answered.
        const log = yield* attempts
        assert.deepStrictEqual([...new Set(log.map((a) => a.target))], [refs.primary, refs.fallback])
        // A Suggestion is data a person can review: it encodes.
        assert.deepStrictEqual(Schema.encodeSync(ToolLoop.Suggestion)(outcome).calls, outcome.calls)
        // Approved (twice, say by a double click): the task is created once, with the step's key.
        const first = yield* ToolLoop.approve(outcome, t.tools)
        const again = yield* ToolLoop.approve(outcome, t.tools)
        assert.deepStrictEqual(t.created, [
          taskKey("run-degraded", { ticketId: "T-1", title: "Call the customer back" })
        ])
        assert.deepStrictEqual([first.map((e) => e.replayed), again.map((e) => e.replayed)], [[false], [true]])
        assert.deepStrictEqual(
          first.map((e) => e.content),
          [JSON.stringify({ id: "TASK-1", title: "Call the customer back" })]
        )
        // A suggestion whose arguments no longer fit the tool is refused before anything runs.
        const tampered = new ToolLoop.Suggestion({
          ...outcome,
          calls: [{ name: "create_task", arguments: { ticketId: "T-1", title: "" } }]
        })
        const refused = yield* Effect.exit(ToolLoop.approve(tampered, t.tools))
        assert.strictEqual(failureOf(refused)?._tag, "InvalidRequest")
        assert.strictEqual(t.created.length, 1)
      }).pipe(Effect.provide(agentLayer(routesDown)))
    }
  )

  it.effect(
    "the same routes down without a degraded mode: the step fails with the availability error, no tool runs",
    () => {
      const t = makeTools()
      return Effect.gen(function* () {
        const exit = yield* inRun(
          "run-down",
          Effect.exit(ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 3 }))
        )
        assert.strictEqual(failureOf(exit)?._tag, "ProviderUnavailable")
        assert.deepStrictEqual([t.created, t.lookedUp], [[], []])
      }).pipe(Effect.provide(agentLayer(routesDown)))
    }
  )

  it.effect("runId and step are in every record and every call span of a run", () => {
    const t = makeTools()
    const { spans, tracer } = keepingTracer()
    return Effect.gen(function* () {
      yield* inRun(
        "run-spans",
        ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 3 }).pipe(Effect.withTracer(tracer))
      )
      const recorded = yield* records
      assert.deepStrictEqual(
        recorded.map((r) => [r.evidence.runId, r.evidence.step]),
        [
          ["run-spans", 1],
          ["run-spans", 2]
        ]
      )
      const callSpans = spans.filter((s) => s.attributes.has("modelgate.call_id"))
      assert.deepStrictEqual(
        callSpans.map((s) => [
          s.attributes.get("modelgate.call_id"),
          s.attributes.get("modelgate.run_id"),
          s.attributes.get("modelgate.run.step")
        ]),
        recorded.map((r) => [r.evidence.callId, "run-spans", r.evidence.step])
      )
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [asks("c1", "lookup_order", { orderId: "ORD-123456" }), answers("Shipped.")]
        })
      )
    )
  })

  it.effect("outside a run the loop uses the command's runId, and needs one", () =>
    withTools(
      {
        [refs.primary]: [asks("c1", "create_task", { ticketId: "T-1", title: "Call back" }), answers("Scheduled.")]
      },
      (t) =>
        Effect.gen(function* () {
          const missing = yield* Effect.exit(ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 2 }))
          const error = failureOf(missing)
          assert.strictEqual(error?._tag, "InvalidRequest")
          const outcome = yield* driven(
            ToolLoop.run(command("ticket.agent", { runId: "given" }), t.tools, { maxSteps: 2, firstStep: 5 }),
            10_000
          )
          assert.strictEqual(outcome._tag, "Completed")
          assert.deepStrictEqual(t.created, [taskKey("given", { ticketId: "T-1", title: "Call back" })])
          const recorded = yield* records
          assert.deepStrictEqual(
            recorded.map((r) => [r.evidence.runId, r.evidence.step]),
            [
              ["given", 5],
              ["given", 6]
            ]
          )
        })
    )
  )
})
