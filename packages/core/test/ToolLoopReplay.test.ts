/**
 * A side-effecting tool runs once by what it does, not where it was asked (issue 26, finding 1):
 * the model re-plans, reorders, inserts a read-only step, the run resumes in another process or
 * after an approved suggestion — each scenario counts the handler's executions and checks the
 * idempotency key it was handed.
 */
import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { AgentRun, ToolLedger, ToolLedgerStore, ToolLoop } from "@modelgate/core"
import { TenantId } from "@modelgate/core/ModelCommand"
import { ScriptedProvider } from "@modelgate/testing"
import { Effect, Layer, Schema } from "effect"
import { command, gatewayLayer, refs } from "./fixtures.js"
import { agentDefinition, agentLayer, answers, asks, makeTools, taskKey, toolCall } from "./toolLoopFixtures.js"
import { driven, failureOf } from "./virtualTime.js"
import { callIdentity } from "../src/internal/callIdentity.js"
import { callIdempotencyKey } from "../src/internal/toolCallKey.js"

const tenant = TenantId.make("acme")

const inRun = <A, E, R>(runId: string, body: Effect.Effect<A, E, R>) =>
  driven(AgentRun.run({ runId, deadline: "1 minute", tenant }, body), 10_000)

const callBack = { ticketId: "T-1", title: "Call back" }
const refund = { ticketId: "T-1", title: "Send the refund" }
const lookup = { orderId: "ORD-123456" }

/** A 500 that may have been processed: the gateway does not retry it (AmbiguousOutcome). */
const ambiguous = ScriptedProvider.fail(50, { kind: "server_error", processed: "maybe", httpStatus: 500 })

/** A model step asking for several tool calls at once. */
const asksAll = (...calls: ReadonlyArray<readonly [string, string, unknown]>) =>
  ScriptedProvider.success({ after: 10, toolCalls: calls.map(([id, name, args]) => toolCall(id, name, args)) })

const retried = { maxSteps: 4, ambiguousRetries: 1 } as const

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
  it.effect("the retried pass asks the same call at another step, after an inserted read-only step", () => {
    const t = makeTools()
    return Effect.gen(function* () {
      const outcome = yield* inRun("re-plan", ToolLoop.run(command("ticket.agent"), t.tools, retried))
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [taskKey("re-plan", callBack)])
      assert.deepStrictEqual(t.lookedUp, ["ORD-123456"])
      const stored = yield* Effect.flatMap(ToolLedger.ToolLedger, (ledger) => ledger.records("re-plan"))
      assert.deepStrictEqual(
        stored.map((r) => [r.key, r.step, r.status]),
        [[taskKey("re-plan", callBack), 1, "completed"]]
      )
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asks("c1", "create_task", callBack),
            ambiguous,
            // Pass 2: a read-only lookup first, then the same call at step 2 → replayed.
            asks("c2", "lookup_order", lookup),
            asks("c3", "create_task", callBack),
            answers("Scheduled.")
          ]
        })
      )
    )
  })

  it.effect("the retried pass asks two calls in the other order: each replayed, none run again", () => {
    const t = makeTools()
    return Effect.gen(function* () {
      const outcome = yield* inRun("reorder", ToolLoop.run(command("ticket.agent"), t.tools, retried))
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [taskKey("reorder", callBack), taskKey("reorder", refund)])
      if (outcome._tag !== "Completed") return
      // The replayed results follow the new order: each call gets its own stored result.
      const contents = outcome.messages.flatMap((m) => (m._tag === "tool" ? [JSON.parse(m.content)] : []))
      assert.deepStrictEqual(contents, [
        { id: "TASK-2", title: "Send the refund" },
        { id: "TASK-1", title: "Call back" }
      ])
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asksAll(["c1", "create_task", callBack], ["c2", "create_task", refund]),
            ambiguous,
            asksAll(["c3", "create_task", refund], ["c4", "create_task", callBack]),
            answers("Both scheduled.")
          ]
        })
      )
    )
  })

  it.effect("two identical calls in one step are two calls (ordinals 0 and 1), replayed as two", () => {
    const t = makeTools()
    return Effect.gen(function* () {
      const outcome = yield* inRun("twice", ToolLoop.run(command("ticket.agent"), t.tools, retried))
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [taskKey("twice", callBack, 0), taskKey("twice", callBack, 1)])
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asksAll(["c1", "create_task", callBack], ["c2", "create_task", callBack]),
            ambiguous,
            // Pass 2 asks them in two steps: still the 1st and 2nd identical call of the pass.
            asks("c3", "create_task", callBack),
            asks("c4", "create_task", callBack),
            answers("Both scheduled.")
          ]
        })
      )
    )
  })

  it.effect("a handler that failed (not done) is handed the same key when the call is asked again", () => {
    class Locked extends Schema.TaggedError<Locked>()("Locked", {}) {}
    const keys: Array<string | undefined> = []
    const flaky = ToolLoop.make({
      name: "create_task",
      description: "Creates a task",
      parameters: Schema.Struct({ ticketId: Schema.String, title: Schema.String }),
      result: Schema.String,
      failure: Locked,
      sideEffecting: true,
      handler: (_args, context) => {
        keys.push(context.idempotencyKey)
        return keys.length === 1 ? Effect.fail(new Locked()) : Effect.succeed("TASK-9")
      }
    })
    return Effect.gen(function* () {
      const outcome = yield* inRun("same-key", ToolLoop.run(command("ticket.agent"), [flaky], retried))
      assert.strictEqual(outcome._tag, "Completed")
      // Pass 1 step 1 failed, pass 2 step 2 ran it: one effect, the same key both times.
      assert.deepStrictEqual(keys, [taskKey("same-key", callBack), taskKey("same-key", callBack)])
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asks("c1", "create_task", callBack),
            ambiguous,
            // Pass 2: a step that asks a tool this loop lacks, then the call again at step 2.
            asks("c2", "lookup_order", lookup),
            asks("c3", "create_task", callBack),
            answers("Done.")
          ]
        })
      )
    )
  })

  it.effect("a loop resumed in another process (a fresh loop and ledger over the store) replays", () => {
    const first = makeTools()
    const second = makeTools()
    const loop = (tools: ReturnType<typeof makeTools>) =>
      Effect.provide(ToolLoop.run(command("ticket.agent"), tools.tools, { maxSteps: 4 }), ToolLedger.layer)
    return Effect.gen(function* () {
      // The first process runs the tool, then its next model call ends ambiguous (it "crashed").
      const crashed = yield* inRun("resume", Effect.exit(loop(first)))
      assert.strictEqual(failureOf(crashed)?._tag, "AmbiguousOutcome")
      // Another process: fresh tools and ledger; the model re-plans with a lookup first.
      const resumed = yield* inRun("resume", loop(second))
      assert.strictEqual(resumed._tag, "Completed")
      assert.deepStrictEqual([first.created, second.created], [[taskKey("resume", callBack)], []])
      assert.deepStrictEqual(second.lookedUp, ["ORD-123456"])
    }).pipe(
      Effect.provide(
        Layer.merge(
          gatewayLayer(
            {
              [refs.primary]: [
                asks("c1", "create_task", callBack),
                ambiguous,
                asks("c2", "lookup_order", lookup),
                asks("c3", "create_task", callBack),
                answers("Scheduled.")
              ]
            },
            agentDefinition
          ),
          ToolLedgerStore.layerMemory
        )
      )
    )
  })

  it.effect("after an approved suggestion, the run asking the same call at another step replays it", () => {
    const t = makeTools()
    const proposed = { ticketId: "T-1", title: "Call the customer back" }
    const routesDown = gatewayLayer(
      {
        [refs.primary]: [ScriptedProvider.unavailable({ after: 10 })],
        [refs.fallback]: [ScriptedProvider.unavailable({ after: 10 })]
      },
      agentDefinition
    )
    // The providers are back: the model looks the order up, then asks the approved call at step 3.
    const routesBack = gatewayLayer(
      {
        [refs.primary]: [asks("c1", "lookup_order", lookup), asks("c2", "create_task", proposed), answers("Done.")]
      },
      agentDefinition
    )
    return Effect.gen(function* () {
      const suggested = yield* inRun(
        "approved",
        Effect.provide(ToolLoop.run(command("ticket.agentDegraded"), t.tools, { maxSteps: 3 }), routesDown)
      )
      assert.strictEqual(suggested._tag, "Suggestion")
      if (suggested._tag !== "Suggestion") return
      assert.strictEqual(suggested.step, 1)
      yield* ToolLoop.approve(suggested, t.tools)
      assert.deepStrictEqual(t.created, [taskKey("approved", proposed)])
      const outcome = yield* inRun(
        "approved",
        Effect.provide(
          ToolLoop.run(command("ticket.agentDegraded"), t.tools, { maxSteps: 4, firstStep: 2 }),
          routesBack
        )
      )
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [taskKey("approved", proposed)])
      assert.deepStrictEqual(t.lookedUp, ["ORD-123456"])
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  })

  it.effect("a declared idempotency key makes a re-worded call the same call", () => {
    const created: Array<string | undefined> = []
    const byTicket = ToolLoop.make({
      name: "create_task",
      description: "Creates the ticket's one follow-up task",
      parameters: Schema.Struct({ ticketId: Schema.String, title: Schema.String }),
      result: Schema.String,
      sideEffecting: true,
      idempotencyKey: (args) => args.ticketId,
      handler: (_args, context) => Effect.sync(() => created.push(context.idempotencyKey)).pipe(Effect.as("TASK-1"))
    })
    return Effect.gen(function* () {
      const outcome = yield* inRun("declared", ToolLoop.run(command("ticket.agent"), [byTicket], retried))
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(created, [callIdempotencyKey("declared", "create_task", callIdentity(undefined, "T-1"))])
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asks("c1", "create_task", callBack),
            ambiguous,
            asks("c2", "create_task", refund),
            answers("Scheduled.")
          ]
        })
      )
    )
  })

  it.effect("a retried pass asking a new call while an earlier one is unmatched is refused (unmatched)", () => {
    const t = makeTools()
    return Effect.gen(function* () {
      const exit = yield* inRun("unmatched", Effect.exit(ToolLoop.run(command("ticket.agent"), t.tools, retried)))
      const error = failureOf(exit)
      assert.strictEqual(error?._tag, "ToolReplayRefused")
      if (error?._tag === "ToolReplayRefused") {
        assert.deepStrictEqual([error.reason, error.key, error.step], ["unmatched", taskKey("unmatched", refund), 1])
      }
      assert.deepStrictEqual(t.created, [taskKey("unmatched", callBack)])
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [asks("c1", "create_task", callBack), ambiguous, asks("c2", "create_task", refund)]
        })
      )
    )
  })

  it.effect("onUnmatchedReplay: run lets the re-planned call run; calls after the replay run as usual", () => {
    const t = makeTools()
    return Effect.gen(function* () {
      const outcome = yield* inRun(
        "unmatched-run",
        ToolLoop.run(command("ticket.agent"), t.tools, { ...retried, onUnmatchedReplay: "run" })
      )
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [taskKey("unmatched-run", callBack), taskKey("unmatched-run", refund)])
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asks("c1", "create_task", callBack),
            ambiguous,
            asks("c2", "create_task", refund),
            answers("Scheduled.")
          ]
        })
      )
    )
  })

  it.effect("once the retried pass has matched every earlier call, a new call runs (default policy)", () => {
    const t = makeTools()
    return Effect.gen(function* () {
      const outcome = yield* inRun("caught-up", ToolLoop.run(command("ticket.agent"), t.tools, retried))
      assert.strictEqual(outcome._tag, "Completed")
      assert.deepStrictEqual(t.created, [taskKey("caught-up", callBack), taskKey("caught-up", refund)])
    }).pipe(
      Effect.provide(
        agentLayer({
          [refs.primary]: [
            asks("c1", "create_task", callBack),
            ambiguous,
            asks("c2", "create_task", callBack),
            asks("c3", "create_task", refund),
            answers("Scheduled.")
          ]
        })
      )
    )
  })
})
