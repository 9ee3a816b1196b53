import { assert, describe, it } from "@effect/vitest"
import { ModelGateway } from "@modelgate/core"
import { StoreError } from "@modelgate/core/Errors"
import * as ToolLedger from "@modelgate/core/ToolLedger"
import * as ToolLedgerStore from "@modelgate/core/ToolLedgerStore"
import { ScriptedProvider } from "@modelgate/testing"
import { Clock, Effect, Either, Exit, Fiber, HashMap, Layer, Logger, Option, Ref, Schema, TestClock } from "effect"
import { command, gatewayLayer, refs } from "./fixtures.js"
import { failureOf } from "./virtualTime.js"
import { toolDefinition } from "../src/internal/toolCallKey.js"

class Task extends Schema.Class<Task>("Task")({ id: Schema.String, due: Schema.Date }) {}

const createTask = ToolLedger.sideEffecting({
  name: "create_follow_up_task",
  description: "Creates a follow-up task in the ticket system",
  parameters: { type: "object", properties: { ticketId: { type: "string" } }, required: ["ticketId"] },
  result: Task
})
const lookupOrder = ToolLedger.readOnly({ name: "lookup_order", result: Schema.String })

/** A fake task system that counts how many tasks it created. */
const makeTasks = Effect.map(Ref.make(0), (created) => ({
  created,
  create: (ticketId: string) =>
    Effect.map(
      Ref.updateAndGet(created, (n) => n + 1),
      (n) => new Task({ id: `${ticketId}-T${n}`, due: new Date(0) })
    )
}))

/** The key of `create_task` at run-1's step 1, the call most scenarios make. */
const key = ToolLedger.key(createTask, { runId: "run-1", step: 1 })

/** The ledger from the context and a fresh task system. */
const ledgerAndTasks = Effect.all({ ledger: ToolLedger.ToolLedger, tasks: makeTasks })

const failureTag = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : undefined

describe("ToolLedger keys", () => {
  it("are stable and derived from run id, step and tool name", () => {
    const a = ToolLedger.idempotencyKey("run-1", 2, "create_follow_up_task")
    assert.strictEqual(a, ToolLedger.idempotencyKey("run-1", 2, "create_follow_up_task"))
    assert.strictEqual(a, "tool/v1/run-1/2/create_follow_up_task")
    assert.strictEqual(ToolLedger.key(createTask, { runId: "run-1", step: 2 }).id, a)
    assert.notStrictEqual(a, ToolLedger.idempotencyKey("run-1", 3, "create_follow_up_task"))
    assert.notStrictEqual(a, ToolLedger.idempotencyKey("run-1", 2, "create_follow_up_task", 1))
    // A run id containing the separator cannot collide with another (run, step) pair.
    assert.notStrictEqual(
      ToolLedger.idempotencyKey("a/1", 2, "t"),
      ToolLedger.idempotencyKey("a", 1, "t").replace("/1/t", "/1/2/t")
    )
    assert.strictEqual(ToolLedger.idempotencyKey("a/1", 2, "t"), "tool/v1/a%2F1/2/t")
  })

  it("tool definitions carry the side-effect flag the gateway reads", () => {
    assert.isTrue(toolDefinition(createTask).sideEffecting)
    assert.isFalse(toolDefinition(lookupOrder).sideEffecting)
    assert.deepStrictEqual(toolDefinition(createTask).parameters, createTask.parameters)
  })
})

describe("ToolLedger.runOnce", () => {
  it.effect("runs a side-effecting tool once, stores the encoded result, replays it decoded", () =>
    Effect.gen(function* () {
      const { ledger, tasks } = yield* ledgerAndTasks
      yield* TestClock.adjust(5)
      const first = yield* ledger.runOnce(key, tasks.create("42"))
      yield* TestClock.adjust(10)
      const second = yield* ledger.runOnce(key, tasks.create("42"))
      assert.strictEqual(yield* Ref.get(tasks.created), 1)
      assert.strictEqual(first.id, "42-T1")
      assert.deepStrictEqual(second, first)
      assert.instanceOf(second.due, Date)
      const record = Option.getOrThrow(yield* ledger.record(key.id))
      assert.strictEqual(record.status, "completed")
      assert.strictEqual(record.startedAt, 5)
      assert.strictEqual(record.completedAt, 5)
      // Stored encoded, as a durable store would hold it.
      assert.deepStrictEqual(record.result, { id: "42-T1", due: "1970-01-01T00:00:00.000Z" })
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  )

  it.effect("read-only tools run every time and leave no record", () =>
    Effect.gen(function* () {
      const ledger = yield* ToolLedger.ToolLedger
      const calls = yield* Ref.make(0)
      const lookupKey = ToolLedger.key(lookupOrder, { runId: "run-1", step: 1 })
      const lookup = Ref.updateAndGet(calls, (n) => n + 1).pipe(Effect.map((n) => `order-${n}`))
      assert.strictEqual(yield* ledger.runOnce(lookupKey, lookup), "order-1")
      assert.strictEqual(yield* ledger.runOnce(lookupKey, lookup), "order-2")
      assert.isTrue(Option.isNone(yield* ledger.record(lookupKey.id)))
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  )

  it.effect("a typed failure means not done: the claim is dropped and the tool may run again", () =>
    Effect.gen(function* () {
      const { ledger, tasks } = yield* ledgerAndTasks
      const failed = yield* Effect.exit(ledger.runOnce(key, Effect.fail("task system said no" as const)))
      assert.deepStrictEqual(failed, Exit.fail("task system said no" as const))
      assert.isTrue(Option.isNone(yield* ledger.record(key.id)))
      const task = yield* ledger.runOnce(key, tasks.create("42"))
      assert.strictEqual(task.id, "42-T1")
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  )

  it.effect("a tool interrupted mid-run is in doubt: never run again, refused with a typed error", () =>
    Effect.gen(function* () {
      const { ledger, tasks } = yield* ledgerAndTasks
      // The task is created at t=50 but the caller gives up at t=30, before the result is known.
      const slow = Effect.zipRight(Effect.sleep(50), tasks.create("42"))
      const fiber = yield* Effect.fork(ledger.runOnce(key, slow).pipe(Effect.timeout(30), Effect.exit))
      yield* TestClock.adjust(30)
      const first = yield* Fiber.join(fiber)
      assert.strictEqual(failureTag(first), "TimeoutException")
      const retried = yield* Effect.exit(ledger.runOnce(key, tasks.create("42")))
      assert.strictEqual(yield* Ref.get(tasks.created), 0)
      const error = failureOf(retried)
      assert.strictEqual(error?._tag, "ToolReplayRefused")
      if (error?._tag === "ToolReplayRefused") {
        assert.strictEqual(error.reason, "in_doubt")
        assert.strictEqual(error.key, key.id)
      }
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  )

  it.effect("two concurrent calls with one key: the tool runs once, the other is refused", () =>
    Effect.gen(function* () {
      const { ledger, tasks } = yield* ledgerAndTasks
      const run = Effect.either(ledger.runOnce(key, Effect.zipRight(Effect.sleep(10), tasks.create("42"))))
      const fiber = yield* Effect.fork(Effect.all([run, run], { concurrency: 2 }))
      yield* TestClock.adjust(10)
      const [a, b] = yield* Fiber.join(fiber)
      assert.strictEqual(yield* Ref.get(tasks.created), 1)
      assert.isTrue(Either.isRight(a))
      assert.isTrue(Either.isLeft(b) && b.left._tag === "ToolReplayRefused" && b.left.reason === "in_doubt")
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  )
})

describe("ToolLedger.checkReplay", () => {
  it.effect("refuses a step with a side-effecting call that has no completed-effect record", () =>
    Effect.gen(function* () {
      const ledger = yield* ToolLedger.ToolLedger
      const tasks = yield* makeTasks
      const done = ToolLedger.key(createTask, { runId: "run-1", step: 1 })
      const unrecorded = ToolLedger.key(createTask, { runId: "run-1", step: 2 })
      const readOnlyCall = ToolLedger.key(lookupOrder, { runId: "run-1", step: 2 })
      yield* ledger.runOnce(done, tasks.create("42"))
      const ok = yield* ledger.checkReplay([done, ToolLedger.key(lookupOrder, { runId: "run-1", step: 1 })])
      assert.deepStrictEqual(
        ok.map((r) => [r.key, r.status]),
        [[done.id, "completed"]]
      )
      const error = yield* Effect.flip(ledger.checkReplay([readOnlyCall, unrecorded]))
      assert.deepStrictEqual(
        error._tag === "ToolReplayRefused" ? [error.reason, error.key, error.step, error.tool] : error,
        ["missing", unrecorded.id, 2, "create_follow_up_task"]
      )
      assert.strictEqual(yield* Ref.get(tasks.created), 1)
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  )

  it.effect("refuses a step whose side-effecting call started and never completed", () =>
    Effect.gen(function* () {
      const ledger = yield* ToolLedger.ToolLedger
      const fiber = yield* Effect.fork(ledger.runOnce(key, Effect.never))
      yield* TestClock.adjust(1)
      yield* Fiber.interrupt(fiber)
      const error = yield* Effect.flip(ledger.checkReplay([key]))
      assert.strictEqual(error._tag === "ToolReplayRefused" ? error.reason : error, "in_doubt")
    }).pipe(Effect.provide(ToolLedger.layerMemory))
  )
})

describe("ToolLedger with a failing store", () => {
  const storeError = (operation: string) => new StoreError({ store: "ledger", operation, detail: "connection refused" })

  /** The ledger over the memory store with some operations replaced. */
  const makeLedger = (override: (inner: ToolLedgerStore.Service) => Partial<ToolLedgerStore.Service>) =>
    Effect.gen(function* () {
      const inner = yield* ToolLedgerStore.makeMemory
      const store = ToolLedgerStore.ToolLedgerStore.of({ ...inner, ...override(inner) })
      const ledger = yield* ToolLedger.make.pipe(Effect.provideService(ToolLedgerStore.ToolLedgerStore, store))
      return { ledger, inner }
    })

  it.effect("a claim that cannot be recorded: runOnce fails with StoreError and the tool never runs", () =>
    Effect.gen(function* () {
      const tasks = yield* makeTasks
      const { ledger, inner } = yield* makeLedger(() => ({ claim: () => Effect.fail(storeError("claim")) }))
      const error = yield* Effect.flip(ledger.runOnce(key, tasks.create("42")))
      assert.deepStrictEqual(error._tag === "StoreError" ? [error.store, error.operation] : error, ["ledger", "claim"])
      assert.strictEqual(yield* Ref.get(tasks.created), 0)
      assert.isTrue(Option.isNone(yield* inner.get(key.id)))
    })
  )

  it.effect(
    "a result that cannot be stored is not handed back; the key stays in doubt and the tool never runs again",
    () =>
      Effect.gen(function* () {
        const tasks = yield* makeTasks
        const { ledger, inner } = yield* makeLedger(() => ({ complete: () => Effect.fail(storeError("complete")) }))
        const error = yield* Effect.flip(ledger.runOnce(key, tasks.create("42")))
        assert.deepStrictEqual(error._tag === "StoreError" ? [error.store, error.operation] : error, [
          "ledger",
          "complete"
        ])
        assert.strictEqual(yield* Ref.get(tasks.created), 1)
        assert.strictEqual(Option.getOrThrow(yield* inner.get(key.id)).status, "started")
        const retried = yield* Effect.flip(ledger.runOnce(key, tasks.create("42")))
        assert.deepStrictEqual(retried._tag === "ToolReplayRefused" ? retried.reason : retried, "in_doubt")
        assert.strictEqual(yield* Ref.get(tasks.created), 1)
      })
  )

  it.effect("a failed tool whose claim cannot be dropped: the tool's own failure, and the key stays in doubt", () =>
    Effect.gen(function* () {
      const tasks = yield* makeTasks
      const logs: Array<unknown> = []
      const logger = Logger.make(({ annotations }) => {
        logs.push(Object.fromEntries(HashMap.toEntries(annotations)))
      })
      const { ledger } = yield* makeLedger(() => ({ release: () => Effect.fail(storeError("release")) }))
      const failed = yield* Effect.exit(
        ledger.runOnce(key, Effect.fail("task system said no" as const)).pipe(Effect.provide(Logger.add(logger)))
      )
      assert.deepStrictEqual(failed, Exit.fail("task system said no" as const))
      assert.deepStrictEqual(logs, [{ tool: "create_follow_up_task", operation: "release" }])
      const retried = yield* Effect.flip(ledger.runOnce(key, tasks.create("42")))
      assert.deepStrictEqual(retried._tag === "ToolReplayRefused" ? retried.reason : retried, "in_doubt")
      assert.strictEqual(yield* Ref.get(tasks.created), 0)
    })
  )

  it.effect("checkReplay and record fail with StoreError when the store cannot answer", () =>
    Effect.gen(function* () {
      const { ledger } = yield* makeLedger(() => ({ get: () => Effect.fail(storeError("get")) }))
      const error = yield* Effect.flip(ledger.checkReplay([key]))
      assert.deepStrictEqual(error._tag === "StoreError" ? error.operation : error, "get")
      assert.strictEqual((yield* Effect.flip(ledger.record(key.id)))._tag, "StoreError")
    })
  )
})

describe("an agent step through the gateway", () => {
  const tools = [toolDefinition(createTask)]
  const toolCall = { id: "call_1", name: "create_follow_up_task", arguments: '{"ticketId":"42"}' }

  /**
   * One agent step: the model proposes the tool call, the tool runs through the ledger, and a second
   * model call writes the confirmation with the tool's result.
   */
  const step = (runId: string, stepNo: number, tasks: Effect.Effect.Success<typeof makeTasks>) =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const ledger = yield* ToolLedger.ToolLedger
      const cmd = command("ticket.reply", { tools, runId, step: stepNo })
      const proposal = yield* gateway.generate(cmd)
      const call = proposal.content.toolCalls[0]!
      const task = yield* ledger.runOnce(ToolLedger.key(createTask, { runId, step: stepNo }), tasks.create("42"))
      const confirm = yield* gateway.generate(
        command("ticket.reply", {
          tools,
          runId,
          step: stepNo,
          messages: [
            { _tag: "user", content: "Please follow up" },
            { _tag: "assistant", toolCalls: [call] },
            { _tag: "tool", toolCallId: call.id, name: call.name, content: JSON.stringify({ id: task.id }) }
          ]
        })
      )
      return { task, text: confirm.content.text }
    })

  it.effect("a retried step after a model timeout does not run the tool twice", () =>
    Effect.gen(function* () {
      const tasks = yield* makeTasks
      const provider = yield* ScriptedProvider.ScriptedProvider
      const failures = yield* Ref.make<ReadonlyArray<readonly [number, number]>>([])
      const attempt = (n: number) =>
        step("run-7", 1, tasks).pipe(
          Effect.tapError(() =>
            Clock.currentTimeMillis.pipe(Effect.tap((at) => Ref.update(failures, (f) => [...f, [n, at] as const])))
          ),
          Effect.either
        )
      // The agent loop's own retry of the whole step: the gateway never retries a tool.
      const fiber = yield* Effect.fork(
        Effect.flatMap(attempt(1), (first) => (Either.isLeft(first) ? attempt(2) : Effect.succeed(first)))
      )
      yield* TestClock.adjust(2_000)
      const result = yield* Fiber.join(fiber)
      assert.isTrue(Either.isRight(result))
      // The confirmation call timed out at 20 + 400 ms after the tool had run: AmbiguousOutcome, no retry.
      assert.deepStrictEqual(yield* Ref.get(failures), [[1, 420]])
      assert.strictEqual(yield* Ref.get(tasks.created), 1)
      if (Either.isRight(result)) {
        assert.strictEqual(result.right.task.id, "42-T1")
        assert.strictEqual(result.right.text, "Task 42-T1 created")
      }
      assert.deepStrictEqual(
        (yield* provider.attempts).map((a) => [a.target, a.startedAt, a.endedAt, a.interrupted]),
        [
          [refs.primary, 0, 20, false],
          [refs.primary, 20, 420, true],
          [refs.primary, 420, 440, false],
          [refs.primary, 440, 460, false]
        ]
      )
    }).pipe(
      Effect.provide(
        Layer.merge(
          gatewayLayer({
            [refs.primary]: [
              ScriptedProvider.success({ after: 20, toolCalls: [toolCall] }),
              ScriptedProvider.hang,
              ScriptedProvider.success({ after: 20, toolCalls: [toolCall] }),
              ScriptedProvider.success({ after: 20, text: "Task 42-T1 created" })
            ]
          }),
          ToolLedger.layerMemory
        )
      )
    )
  )
})
