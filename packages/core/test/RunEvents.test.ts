/**
 * Hook events of a run: the exact sequence of a 3-step tool-loop run whose first pass ends in
 * AmbiguousOutcome and whose retry replays the side-effecting tool from the ledger, at exact
 * TestClock instants; ids, versions, usage and cost, never content unless asked for.
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentRun, CallRecorder, ModelGateway, RunEvents, ToolLoop } from "@modelgate/core"
import { TenantId } from "@modelgate/core/ModelCommand"
import { Chunk, Effect, Fiber, PubSub, Queue, Schema, Stream, TestClock } from "effect"
import { command, refs } from "./fixtures.js"
import { agentLayer, answers, asks, createThenAmbiguous, makeTools, taskKey } from "./toolLoopFixtures.js"

const tenant = TenantId.make("acme")

/** Runs `body` in a run publishing to a fresh hub; returns its result and every event published. */
const withEvents = <A, E, R>(options: Omit<AgentRun.Options, "events">, body: Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const hub = yield* RunEvents.make
      const subscription = yield* PubSub.subscribe(hub)
      const fiber = yield* Effect.fork(AgentRun.run({ ...options, events: hub }, body))
      yield* TestClock.adjust(10_000)
      const result = yield* Fiber.join(fiber)
      return { result, events: Chunk.toReadonlyArray(yield* Queue.takeAll(subscription)) }
    })
  )

/** One line per event: tag, step, instant and what the event is about. */
const line = (e: RunEvents.RunEvent): string => {
  switch (e._tag) {
    case "PreModel":
      return `PreModel step=${e.step} at=${e.at}`
    case "PostModel":
      return `PostModel step=${e.step} at=${e.at} ${e.outcome}${e.errorTag ? `:${e.errorTag}` : ""} tools=[${e.toolCalls.join(",")}] latency=${e.latencyMs}`
    case "PreTool":
      return `PreTool step=${e.step} at=${e.at} ${e.tool}${e.key ? ` key=${e.key}` : ""}`
    case "PostTool":
      return `PostTool step=${e.step} at=${e.at} ${e.tool} ${e.outcome} latency=${e.latencyMs}`
    case "Checkpoint":
      return `Checkpoint step=${e.step} at=${e.at} tools=${e.tools} effects=${e.effects} remainingMs=${e.remainingMs}`
    case "TaskCompleted":
      return `TaskCompleted at=${e.at} ${e.outcome} steps=${e.steps} latency=${e.latencyMs}`
  }
}

const script = {
  [refs.primary]: [
    // The step after the tool: processed or not, nobody knows; the gateway does not retry it.
    ...createThenAmbiguous(),
    asks("c2", "lookup_order", { orderId: "ORD-123456" }),
    answers("Scheduled TASK-1; the order has shipped.")
  ]
}

describe("RunEvents", () => {
  it.effect("the exact event sequence of a 3-step run with one tool retry replayed from the ledger", () => {
    const t = makeTools({ create: 5, lookup: 2 })
    return Effect.gen(function* () {
      const { result, events } = yield* withEvents(
        { runId: "run-ev", deadline: 1000, budget: 0.01, tenant },
        ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 3, ambiguousRetries: 1 })
      )
      assert.strictEqual(result._tag, "Completed")
      const taskId = taskKey("run-ev", { ticketId: "T-1", title: "Call back" })
      const key = `key=${taskId}`
      assert.deepStrictEqual(events.map(line), [
        // First pass: the tool runs (5 ms), the next model call ends in AmbiguousOutcome.
        "PreModel step=1 at=0",
        "PostModel step=1 at=10 success tools=[create_task] latency=10",
        `PreTool step=1 at=10 create_task ${key}`,
        "PostTool step=1 at=15 create_task success latency=5",
        "Checkpoint step=1 at=15 tools=1 effects=1 remainingMs=985",
        "PreModel step=2 at=15",
        "PostModel step=2 at=65 failed:AmbiguousOutcome tools=[] latency=50",
        // Retry from step 1: the model asks again, the tool is replayed from the ledger (0 ms).
        "PreModel step=1 at=65",
        "PostModel step=1 at=75 success tools=[create_task] latency=10",
        `PreTool step=1 at=75 create_task ${key}`,
        "PostTool step=1 at=75 create_task replayed latency=0",
        "Checkpoint step=1 at=75 tools=1 effects=1 remainingMs=925",
        "PreModel step=2 at=75",
        "PostModel step=2 at=85 success tools=[lookup_order] latency=10",
        "PreTool step=2 at=85 lookup_order",
        "PostTool step=2 at=87 lookup_order success latency=2",
        "Checkpoint step=2 at=87 tools=1 effects=0 remainingMs=913",
        "PreModel step=3 at=87",
        "PostModel step=3 at=97 success tools=[] latency=10",
        "TaskCompleted at=97 completed steps=3 latency=97"
      ])
      assert.deepStrictEqual(t.created, [taskId])

      // PreModel/PostModel carry the call's ids and versions; PostModel the same as its CallRecord.
      const records = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
      const posts = events.filter((e): e is RunEvents.PostModel => e._tag === "PostModel")
      const pres = events.filter((e): e is RunEvents.PreModel => e._tag === "PreModel")
      assert.deepStrictEqual(
        posts.map((p) => p.callId),
        records.map((r) => r.evidence.callId)
      )
      assert.deepStrictEqual(
        pres.map((p) => p.callId),
        posts.map((p) => p.callId)
      )
      const first = posts[0]!
      assert.deepStrictEqual(
        [
          first.runId,
          first.workflow,
          first.policyVersion,
          first.promptId,
          first.promptVersion,
          first.target,
          first.model
        ],
        ["run-ev", "ticket.agent", "policy-7", "ticket.agent.prompt", "3", refs.primary, "small"]
      )
      assert.strictEqual(first.configVersion, records[0]!.evidence.configVersion)
      assert.deepStrictEqual([first.usage.inputTokens, first.usage.outputTokens], [100, 20])
      // 100 × 0.4/M + 20 × 1.6/M
      assert.closeTo(first.cost, 0.000072, 1e-12)
      // Checkpoints carry the run's money: two answered calls settled by the first checkpoint of the retry.
      const checkpoints = events.filter((e): e is RunEvents.Checkpoint => e._tag === "Checkpoint")
      assert.closeTo(checkpoints[0]!.spent, 0.000072, 1e-12)
      assert.closeTo(checkpoints[1]!.spent, 0.000144, 1e-12)
      assert.closeTo(checkpoints[1]!.remainingBudget ?? -1, 0.01 - 0.000144, 1e-12)
      const done = events.at(-1)
      assert.strictEqual(done?._tag, "TaskCompleted")
      if (done?._tag === "TaskCompleted") {
        // Usage of the answered calls of the loop (4 of them, both passes), cost of the run during it.
        assert.deepStrictEqual([done.usage.inputTokens, done.usage.outputTokens], [400, 80])
        assert.closeTo(done.cost, 4 * 0.000072, 1e-12)
      }
      // Never content by default: no arguments, no results, no prompt or answer text anywhere.
      for (const e of events) {
        const encoded = JSON.stringify(Schema.encodeSync(RunEvents.RunEvent)(e))
        for (const secret of ["Call back", "ORD-123456", "Scheduled", "shipped", "support tickets"]) {
          assert.notInclude(encoded, secret)
        }
      }
    }).pipe(Effect.provide(agentLayer(script)))
  })

  it.effect("RunEvents.subscribe: a stream subscribed before the run, ending with TaskCompleted", () => {
    const t = makeTools()
    return Effect.scoped(
      Effect.gen(function* () {
        const hub = yield* RunEvents.make
        const events = yield* RunEvents.subscribe(hub, { untilCompleted: true })
        const collected = yield* Effect.fork(Stream.runCollect(events))
        const run = yield* Effect.fork(
          AgentRun.run(
            { runId: "run-stream", deadline: 1000, tenant, events: hub },
            ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 2 })
          )
        )
        yield* TestClock.adjust(1000)
        yield* Fiber.join(run)
        const tags = Chunk.toReadonlyArray(yield* Fiber.join(collected)).map((e) => e._tag)
        assert.deepStrictEqual(tags, ["PreModel", "PostModel", "TaskCompleted"])
      })
    ).pipe(Effect.provide(agentLayer({ [refs.primary]: [answers("No follow-up needed.")] })))
  })

  it.effect("with eventContent the tool events carry arguments and results", () => {
    const t = makeTools()
    return Effect.gen(function* () {
      const { events } = yield* withEvents(
        { runId: "run-content", deadline: 1000, tenant, eventContent: true },
        ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 3 })
      )
      const tools = events.filter((e) => e._tag === "PreTool" || e._tag === "PostTool")
      assert.deepStrictEqual(
        tools.map((e) => (e._tag === "PreTool" ? e.arguments : e._tag === "PostTool" ? e.result : undefined)),
        [JSON.stringify({ orderId: "ORD-123456" }), JSON.stringify({ status: "shipped" })]
      )
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [asks("c2", "lookup_order", { orderId: "ORD-123456" }), answers("Shipped.")]
        })
      )
    )
  })

  it.effect(
    "a failed loop ends with TaskCompleted failed; direct gateway calls of the run publish model events",
    () => {
      const t = makeTools()
      return Effect.gen(function* () {
        const { events } = yield* withEvents(
          { runId: "run-fail", deadline: 1000, tenant },
          Effect.gen(function* () {
            yield* AgentRun.step(1, ModelGateway.generate(command("ticket.reply")))
            return yield* Effect.exit(ToolLoop.run(command("ticket.agent"), t.tools, { maxSteps: 1, firstStep: 2 }))
          })
        )
        assert.deepStrictEqual(events.map(line), [
          "PreModel step=1 at=0",
          "PostModel step=1 at=10 success tools=[] latency=10",
          "PreModel step=2 at=10",
          "PostModel step=2 at=20 success tools=[lookup_order] latency=10",
          "TaskCompleted at=20 failed steps=1 latency=10"
        ])
        const done = events.at(-1)
        assert.strictEqual(done?._tag === "TaskCompleted" ? done.errorTag : undefined, "MaxStepsExceeded")
      }).pipe(
        Effect.provide(
          agentLayer({
            [refs.primary]: [answers("plain"), asks("c2", "lookup_order", { orderId: "ORD-123456" })]
          })
        )
      )
    }
  )
})
