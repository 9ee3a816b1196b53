/**
 * A side-effecting tool runs once by what it does, not where it was asked (issue 26, finding 1):
 * the model re-plans, reorders, inserts a read-only step, the run resumes in another process or
 * after an approved suggestion — each scenario counts the handler's executions and checks the
 * idempotency key it was handed.
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { ToolLedger, ToolLedgerStore, ToolLoop } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Layer, Schema } from "effect"
import { command, gatewayLayer, refs } from "./fixtures.js"
import * as Agent from "./toolLoopFixtures.js"
import { failureOf } from "./virtualTime.js"
import { callIdentity } from "../src/internal/callIdentity.js"
import { callIdempotencyKey } from "../src/internal/toolCallKey.js"

const callBack = { ticketId: "T-1", title: "Call back" }
const refund = { ticketId: "T-1", title: "Send the refund" }
const lookup = { orderId: "ORD-123456" }

/** A 500 that may have been processed: the gateway does not retry it (AmbiguousOutcome). */
const ambiguous = ScriptedProvider.fail(50, { kind: "server_error", processed: "maybe", httpStatus: 500 })

/** A model step asking for several tool calls at once. */
const asksAll = (...calls: ReadonlyArray<readonly [string, string, unknown]>) =>
  ScriptedProvider.success({ after: 10, toolCalls: calls.map(([id, name, args]) => Agent.toolCall(id, name, args)) })

const retried = { maxSteps: 4, ambiguousRetries: 1 } as const

/** A side-effecting `create_task` with a text result, for the scenarios that write their own handler. */
const textTask = {
  name: "create_task",
  description: "Creates a follow-up task",
  parameters: Schema.Struct({ ticketId: Schema.String, title: Schema.String }),
  result: Schema.String,
  sideEffecting: true
} as const

/** A retried pass that re-plans: a read-only lookup at step 1, then the call back again at step 2. */
const lookupThenCallBack = [Agent.asks("c2", "lookup_order", lookup), Agent.asks("c3", "create_task", callBack)]

/** Runs a scenario against the agent gateway whose primary answers `steps` in order. */
const onPrimary = (...steps: ReadonlyArray<ScriptedProvider.Outcome>) =>
  Effect.provide(Agent.agentLayer({ [refs.primary]: steps }))

/** {@link onPrimary} where step 1 asks for `create_task` (call back) and step 2 ends ambiguous; `retriedPass` follows. */
const afterAmbiguous = (...retriedPass: ReadonlyArray<ScriptedProvider.Outcome>) =>
  onPrimary(Agent.asks("c1", "create_task", callBack), ambiguous, ...retriedPass)

describe("callIdentity", () => {
  it("is the SHA-256 of the canonical JSON (sorted keys, no whitespace), key order aside", () => {
    const canonical = '{"a":[1,{"c":"é","d":null}],"b":"x"}'
    const expected = createHash("sha256").update(canonical).digest("hex")
    assert.strictEqual(callIdentity({ b: "x", a: [1, { d: null, c: "é" }] }), `a-${expected}`)
    assert.strictEqual(callIdentity({ a: [1, { c: "é", d: null }], b: "x" }), `a-${expected}`)
    assert.notStrictEqual(callIdentity({ a: "1" }), callIdentity({ a: 1 }))
    // A declared key lives in its own space: it never equals an argument identity.
    const declared = createHash("sha256").update("T-1").digest("hex")
    assert.strictEqual(callIdentity({ any: 1 }, "T-1"), `k-${declared}`)
    assert.strictEqual(
      callIdempotencyKey("run/1", "create_task", `a-${expected}`, 2),
      `tool/v2/run%2F1/create_task/a-${expected}/2`
    )
  })
})

describe("ToolLoop: a side-effecting call runs once by what it does", () => {
  it.effect("the retried pass Agent.asks the same call at another step, after an inserted read-only step", () => {
    const t = Agent.makeTools()
    return Effect.gen(function* () {
      yield* Agent.completedIn("re-plan", t.tools, retried)
      assert.deepStrictEqual(t.created, [Agent.taskKey("re-plan", callBack)])
      assert.deepStrictEqual(t.lookedUp, ["ORD-123456"])
      const stored = yield* Effect.flatMap(ToolLedger.ToolLedger, (ledger) => ledger.records("re-plan"))
      assert.deepStrictEqual(
        stored.map((r) => [r.key, r.step, r.status]),
        [[Agent.taskKey("re-plan", callBack), 1, "completed"]]
      )
      // Pass 2: a read-only lookup first, then the same call at step 2 → replayed.
    }).pipe(afterAmbiguous(...lookupThenCallBack, Agent.answers("Scheduled.")))
  })

  it.effect("the retried pass Agent.asks two calls in the other order: each replayed, none run again", () => {
    const t = Agent.makeTools()
    return Effect.gen(function* () {
      const outcome = yield* Agent.completedIn("reorder", t.tools, retried)
      assert.deepStrictEqual(t.created, [Agent.taskKey("reorder", callBack), Agent.taskKey("reorder", refund)])
      if (outcome._tag !== "Completed") return
      // The replayed results follow the new order: each call gets its own stored result.
      const contents = outcome.messages.flatMap((m) => (m._tag === "tool" ? [JSON.parse(m.content)] : []))
      assert.deepStrictEqual(contents, [
        { id: "TASK-2", title: "Send the refund" },
        { id: "TASK-1", title: "Call back" }
      ])
    }).pipe(
      onPrimary(
        asksAll(["c1", "create_task", callBack], ["c2", "create_task", refund]),
        ambiguous,
        asksAll(["c3", "create_task", refund], ["c4", "create_task", callBack]),
        Agent.answers("Both scheduled.")
      )
    )
  })

  it.effect("two identical calls in one step are two calls (ordinals 0 and 1), replayed as two", () => {
    const t = Agent.makeTools()
    return Effect.gen(function* () {
      yield* Agent.completedIn("twice", t.tools, retried)
      assert.deepStrictEqual(t.created, [Agent.taskKey("twice", callBack, 0), Agent.taskKey("twice", callBack, 1)])
    }).pipe(
      onPrimary(
        asksAll(["c1", "create_task", callBack], ["c2", "create_task", callBack]),
        ambiguous,
        // Pass 2 Agent.asks them in two steps: still the 1st and 2nd identical call of the pass.
        Agent.asks("c3", "create_task", callBack),
        Agent.asks("c4", "create_task", callBack),
        Agent.answers("Both scheduled.")
      )
    )
  })

  it.effect("a handler that failed (not done) is handed the same key when the call is asked again", () => {
    class Locked extends Schema.TaggedError<Locked>()("Locked", {}) {}
    const keys: Array<string | undefined> = []
    const flaky = ToolLoop.make({
      ...textTask,
      failure: Locked,
      handler: (_args, context) => {
        keys.push(context.idempotencyKey)
        return keys.length === 1 ? Effect.fail(new Locked()) : Effect.succeed("TASK-9")
      }
    })
    return Effect.gen(function* () {
      yield* Agent.completedIn("same-key", [flaky], retried)
      // Pass 1 step 1 failed, pass 2 step 2 ran it: one effect, the same key both times.
      assert.deepStrictEqual(keys, [Agent.taskKey("same-key", callBack), Agent.taskKey("same-key", callBack)])
      // Pass 2: a step that Agent.asks a tool this loop lacks, then the call again at step 2.
    }).pipe(afterAmbiguous(...lookupThenCallBack, Agent.answers("Done.")))
  })

  it.effect("a loop resumed in another process (a fresh loop and ledger over the store) replays", () => {
    const first = Agent.makeTools()
    const second = Agent.makeTools()
    const loop = (tools: ReturnType<typeof Agent.makeTools>) =>
      Effect.provide(ToolLoop.run(command("ticket.agent"), tools.tools, { maxSteps: 4 }), ToolLedger.layer)
    return Effect.gen(function* () {
      // The first process runs the tool, then its next model call ends ambiguous (it "crashed").
      const crashed = yield* Agent.inRun("resume", Effect.exit(loop(first)))
      assert.strictEqual(failureOf(crashed)?._tag, "AmbiguousOutcome")
      // Another process: fresh tools and ledger; the model re-plans with a lookup first.
      const resumed = yield* Agent.inRun("resume", loop(second))
      assert.strictEqual(resumed._tag, "Completed")
      assert.deepStrictEqual([first.created, second.created], [[Agent.taskKey("resume", callBack)], []])
      assert.deepStrictEqual(second.lookedUp, ["ORD-123456"])
    }).pipe(
      Effect.provide(
        Layer.merge(
          gatewayLayer(
            {
              [refs.primary]: [
                Agent.asks("c1", "create_task", callBack),
                ambiguous,
                ...lookupThenCallBack,
                Agent.answers("Scheduled.")
              ]
            },
            Agent.agentDefinition
          ),
          ToolLedgerStore.layerMemory
        )
      )
    )
  })

  it.effect("after an approved suggestion, the run asking the same call at another step replays it", () => {
    const t = Agent.makeTools()
    const proposed = { ticketId: "T-1", title: "Call the customer back" }
    const routesDown = gatewayLayer(
      {
        [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
        [refs.fallback]: [ScriptedProvider.unavailable({ after: 10 })]
      },
      Agent.agentDefinition
    )
    // The providers are back: the model looks the order up, then Agent.asks the approved call at step 3.
    const routesBack = gatewayLayer(
      {
        [refs.primary]: [
          Agent.asks("c1", "lookup_order", lookup),
          Agent.asks("c2", "create_task", proposed),
          Agent.answers("Done.")
        ]
      },
      Agent.agentDefinition
    )
    return Effect.gen(function* () {
      const suggested = yield* Agent.inRun(
        "approved",
        Effect.provide(ToolLoop.run(command("ticket.agentDegraded"), t.tools, { maxSteps: 3 }), routesDown)
      )
      assert.strictEqual(suggested._tag, "Suggestion")
      if (suggested._tag !== "Suggestion") return
      assert.strictEqual(suggested.step, 1)
      yield* ToolLoop.approve(suggested, t.tools)
      assert.deepStrictEqual(t.created, [Agent.taskKey("approved", proposed)])
      const outcome = yield* Agent.inRun(
        "approved",
        Effect.provide(
          ToolLoop.run(command("ticket.agentDegraded"), t.tools, { maxSteps: 4, firstStep: 2 }),
          routesBack
        )
      )
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [Agent.taskKey("approved", proposed)])
      assert.deepStrictEqual(t.lookedUp, ["ORD-123456"])
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  })

  it.effect("a declared idempotency key makes a re-worded call the same call", () => {
    const created: Array<string | undefined> = []
    const byTicket = ToolLoop.make({
      ...textTask,
      idempotencyKey: (args) => args.ticketId,
      handler: (_args, context) => Effect.sync(() => created.push(context.idempotencyKey)).pipe(Effect.as("TASK-1"))
    })
    return Effect.gen(function* () {
      yield* Agent.completedIn("declared", [byTicket], retried)
      assert.deepStrictEqual(created, [callIdempotencyKey("declared", "create_task", callIdentity(undefined, "T-1"))])
    }).pipe(afterAmbiguous(Agent.asks("c2", "create_task", refund), Agent.answers("Scheduled.")))
  })

  it.effect("a retried pass asking a new call while an earlier one is unmatched is refused (unmatched)", () => {
    const t = Agent.makeTools()
    return Effect.gen(function* () {
      const exit = yield* Agent.inRun("unmatched", Effect.exit(ToolLoop.run(command("ticket.agent"), t.tools, retried)))
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "ToolReplayRefused")
      if (error?._tag === "ToolReplayRefused") {
        assert.deepStrictEqual(
          [error.reason, error.key, error.step],
          ["unmatched", Agent.taskKey("unmatched", refund), 1]
        )
      }
      assert.deepStrictEqual(t.created, [Agent.taskKey("unmatched", callBack)])
    }).pipe(afterAmbiguous(Agent.asks("c2", "create_task", refund)))
  })

  it.effect("onUnmatchedReplay: run lets the re-planned call run; calls after the replay run as usual", () => {
    const t = Agent.makeTools()
    return Effect.gen(function* () {
      const outcome = yield* Agent.inRun(
        "unmatched-run",
        ToolLoop.run(command("ticket.agent"), t.tools, { ...retried, onUnmatchedReplay: "run" })
      )
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [
        Agent.taskKey("unmatched-run", callBack),
        Agent.taskKey("unmatched-run", refund)
      ])
    }).pipe(afterAmbiguous(Agent.asks("c2", "create_task", refund), Agent.answers("Scheduled.")))
  })

  it.effect("once the retried pass has matched every earlier call, a new call runs (default policy)", () => {
    const t = Agent.makeTools()
    return Effect.gen(function* () {
      yield* Agent.completedIn("caught-up", t.tools, retried)
      assert.deepStrictEqual(t.created, [Agent.taskKey("caught-up", callBack), Agent.taskKey("caught-up", refund)])
    }).pipe(
      afterAmbiguous(
        Agent.asks("c2", "create_task", callBack),
        Agent.asks("c3", "create_task", refund),
        Agent.answers("Scheduled.")
      )
    )
  })
})
