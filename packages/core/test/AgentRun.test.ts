/**
 * Agent runs: every gateway call inside a run inherits its deadline (min of its own and the run's
 * remaining time) and its budget (the reservation is capped by what is left), `runId`/step go into
 * evidence and records, and once the run's time or money is gone the next call does not start.
 * Outside a run nothing changes.
 */
import { assert, describe, it } from "@effect/vitest"
import { AgentRun, CallRecorder, ModelGateway } from "@modelgate/core"
import { TenantId } from "@modelgate/core/ModelCommand"
import { ScriptedProvider } from "@modelgate/testing"
import { Clock, Effect, Exit, Option } from "effect"
import { command, gatewayLayer, refs, onRoutes } from "./fixtures.js"
import { driven, failureOf } from "./virtualTime.js"

const tenant = TenantId.make("acme")
const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const attempts = Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)

/** One gateway call: its exit and the virtual instants it started and ended at. */
const timedCall = (cmd: ReturnType<typeof command>) =>
  Effect.gen(function* () {
    const startedAt = yield* Clock.currentTimeMillis
    const exit = yield* Effect.exit(ModelGateway.generate(cmd))
    const endedAt = yield* Clock.currentTimeMillis
    return { exit, startedAt, endedAt }
  })

describe("AgentRun", () => {
  it.effect("the run's remaining time cuts each step's deadline (exact instants), then no step starts", () =>
    Effect.gen(function* () {
      // Workflow timeout 1000 ms, per-attempt timeout 400 ms, minimum attempt time 100 ms; run deadline 900 ms.
      const steps = yield* driven(
        AgentRun.run(
          { runId: "run-1", deadline: 900, tenant },
          Effect.gen(function* () {
            const one = yield* AgentRun.step(1, timedCall(command("ticket.reply")))
            const two = yield* AgentRun.step(2, timedCall(command("ticket.reply")))
            const three = yield* AgentRun.step(3, timedCall(command("ticket.reply")))
            const four = yield* AgentRun.step(4, timedCall(command("ticket.reply")))
            const run = yield* AgentRun.current
            return { one, two, three, four, run }
          })
        )
      )
      assert.deepStrictEqual([steps.one.startedAt, steps.one.endedAt], [0, 350])
      assert.deepStrictEqual([steps.two.startedAt, steps.two.endedAt], [350, 700])
      // Step 3 has 200 ms of the run left: its attempt is bounded by the run, not by its own 400 ms.
      assert.deepStrictEqual([steps.three.startedAt, steps.three.endedAt], [700, 900])
      assert.isTrue(Exit.isSuccess(steps.one.exit))
      assert.isTrue(Exit.isSuccess(steps.two.exit))
      const three = failureOf(steps.three.exit)
      assert.strictEqual(three?._tag, "DeadlineExceeded")
      if (three?._tag === "DeadlineExceeded") {
        assert.strictEqual(three.timeoutMs, 200)
        assert.strictEqual(three.elapsedMs, 200)
      }
      const log = yield* attempts
      assert.deepStrictEqual(
        log.map((a) => [a.target, a.startedAt, a.endedAt, a.timeoutMs]),
        [
          [refs.primary, 0, 350, 400],
          [refs.primary, 350, 700, 400],
          [refs.primary, 700, 900, 200]
        ]
      )
      // Step 4 at 900 ms: the run's time is gone, no provider call.
      assert.deepStrictEqual([steps.four.startedAt, steps.four.endedAt], [900, 900])
      const four = failureOf(steps.four.exit)
      assert.strictEqual(four?._tag, "RunExhausted")
      if (four?._tag === "RunExhausted") {
        assert.strictEqual(four.runId, "run-1")
        assert.strictEqual(four.reason, "deadline")
        assert.deepStrictEqual(
          four.steps.map((s) => [s.step, s.outcome, s.errorTag]),
          [
            [1, "success", undefined],
            [2, "success", undefined],
            [3, "failed", "DeadlineExceeded"]
          ]
        )
        const recorded = yield* records
        assert.deepStrictEqual(
          four.steps.map((s) => s.callId),
          recorded.slice(0, 3).map((r) => r.evidence.callId)
        )
      }
      const run = Option.getOrThrow(steps.run)
      assert.deepStrictEqual([run.startedAt, run.deadlineAt], [0, 900])
      assert.strictEqual(run.records.length, 3)
    }).pipe(
      Effect.provide(
        gatewayLayer({
          [refs.primary]: [
            ScriptedProvider.success({ after: 350 }),
            ScriptedProvider.success({ after: 350 }),
            ScriptedProvider.hang
          ]
        })
      )
    )
  )

  it.effect("the run's budget caps a call's reservation, then refuses the next step without a provider call", () =>
    Effect.gen(function* () {
      const budget = 0.001
      const outcome = yield* driven(
        AgentRun.run(
          { runId: "run-2", deadline: "1 minute", budget, tenant },
          Effect.gen(function* () {
            const one = yield* ModelGateway.generate(command("ticket.reply"))
            const two = yield* ModelGateway.generate(command("ticket.reply"))
            const three = yield* Effect.exit(ModelGateway.generate(command("ticket.reply")))
            const run = Option.getOrThrow(yield* AgentRun.current)
            return { one, two, three, run }
          })
        )
      )
      // Step 1: the worst case (4096 output tokens) is above the run's budget: the reservation is the budget.
      assert.strictEqual(outcome.one.evidence.cost.reserved, budget)
      assert.closeTo(outcome.one.evidence.cost.actual, 0.0006, 1e-12)
      // Step 2: what is left (0.0004) caps the reservation, and with it the output the attempt may ask for.
      assert.closeTo(outcome.two.evidence.cost.reserved, 0.0004, 1e-12)
      const log = yield* attempts
      assert.strictEqual(log.length, 2)
      assert.isBelow(log[1]!.maxOutputTokens, 250)
      assert.isBelow(log[1]!.maxOutputTokens, log[0]!.maxOutputTokens)
      assert.closeTo(outcome.run.spent, 0.00128, 1e-12)
      assert.strictEqual(outcome.run.reserved, 0)
      // Step 3: no money left; no provider call, nothing reserved.
      const three = failureOf(outcome.three)
      assert.strictEqual(three?._tag, "RunExhausted")
      if (three?._tag === "RunExhausted") {
        assert.strictEqual(three.reason, "budget")
        assert.deepStrictEqual(
          three.steps.map((s) => [s.step, s.callId, s.outcome]),
          [
            [1, outcome.one.evidence.callId, "success"],
            [2, outcome.two.evidence.callId, "success"]
          ]
        )
      }
      const recorded = yield* records
      assert.strictEqual(recorded.length, 3)
      // RunExhausted carries the CallRecords of the completed steps, as the recorder got them.
      if (three?._tag === "RunExhausted") assert.deepStrictEqual(three.records, recorded.slice(0, 2))
      const refused = recorded[2]!
      assert.strictEqual(refused.outcome, "failed")
      assert.strictEqual(refused.errorTag, "RunExhausted")
      assert.deepStrictEqual(refused.evidence.attempts, [])
      assert.strictEqual(refused.evidence.cost.reserved, 0)
      assert.strictEqual(refused.evidence.cost.actual, 0)
      // Steps not set by `AgentRun.step` are numbered in the order the run's calls started.
      assert.deepStrictEqual(
        recorded.map((r) => [r.evidence.runId, r.evidence.step]),
        [
          ["run-2", 1],
          ["run-2", 2],
          ["run-2", 3]
        ]
      )
      // The refused call is not one of the run's steps.
      assert.strictEqual(outcome.run.records.length, 2)
    }).pipe(
      Effect.provide(
        gatewayLayer({
          [refs.primary]: [
            // 100 × 0.4/M + 350 × 1.6/M = 0.0006; then 100 × 0.4/M + 400 × 1.6/M = 0.00068.
            ScriptedProvider.success({ after: 10, usage: { inputTokens: 100, outputTokens: 350 } }),
            ScriptedProvider.success({ after: 10, usage: { inputTokens: 100, outputTokens: 400 } })
          ]
        })
      )
    )
  )

  it.effect("runId and step go into evidence and CallRecords: the command's first, else the run's", () =>
    Effect.gen(function* () {
      const results = yield* driven(
        AgentRun.run(
          { runId: "run-3", deadline: "1 minute", tenant },
          Effect.all([
            AgentRun.step(7, ModelGateway.generate(command("ticket.reply"))),
            AgentRun.step(8, ModelGateway.generate(command("ticket.reply", { runId: "explicit", step: 42 })))
          ])
        )
      )
      assert.deepStrictEqual(
        results.map((r) => [r.evidence.runId, r.evidence.step]),
        [
          ["run-3", 7],
          ["explicit", 42]
        ]
      )
      const recorded = yield* records
      assert.deepStrictEqual(
        recorded.map((r) => [r.evidence.runId, r.evidence.step]),
        [
          ["run-3", 7],
          ["explicit", 42]
        ]
      )
    }).pipe(onRoutes([ScriptedProvider.success({ after: 10 })]))
  )

  it.effect("a call for another tenant inside the run is refused (typed), no provider call, not a step", () =>
    Effect.gen(function* () {
      const outcome = yield* driven(
        AgentRun.run(
          { runId: "run-4", deadline: "1 minute", budget: 1, tenant },
          Effect.gen(function* () {
            const own = yield* ModelGateway.generate(command("ticket.reply"))
            const other = yield* Effect.exit(ModelGateway.generate(command("ticket.reply", { tenant: "globex" })))
            const run = Option.getOrThrow(yield* AgentRun.current)
            return { own, other, run }
          })
        )
      )
      const error = failureOf(outcome.other)
      assert.strictEqual(error?._tag, "InvalidRequest")
      if (error?._tag === "InvalidRequest") {
        assert.strictEqual(error.reason, "run_tenant")
        assert.notInclude(error.message, "globex")
      }
      assert.strictEqual((yield* attempts).length, 1)
      // Recorded (every call has its record), but not one of the run's steps.
      const recorded = yield* records
      assert.deepStrictEqual(
        recorded.map((r) => [r.tenant, r.outcome, r.errorTag ?? null, r.evidence.attempts.length]),
        [
          ["acme", "success", null, 1],
          ["globex", "failed", "InvalidRequest", 0]
        ]
      )
      assert.deepStrictEqual(
        outcome.run.records.map((r) => r.evidence.callId),
        [outcome.own.evidence.callId]
      )
      assert.strictEqual(outcome.run.reserved, 0)
    }).pipe(onRoutes([ScriptedProvider.success({ after: 10 })]))
  )

  it.effect("a call outside any run behaves as before (its own deadline, no run fields)", () =>
    Effect.gen(function* () {
      const plain = yield* driven(timedCall(command("ticket.reply")))
      const tagged = yield* driven(timedCall(command("ticket.reply", { runId: "given", step: 2 })))
      assert.deepStrictEqual([plain.startedAt, plain.endedAt], [0, 400])
      const log = yield* attempts
      assert.deepStrictEqual(log[0]!.timeoutMs, 400)
      assert.deepStrictEqual(log[0]!.maxOutputTokens, 4096)
      const recorded = yield* records
      assert.isUndefined(recorded[0]!.evidence.runId)
      assert.isUndefined(recorded[0]!.evidence.step)
      assert.strictEqual(recorded[0]!.evidence.cost.reserved, 0)
      // A command's own runId/step are kept, even outside a run.
      assert.isTrue(Exit.isSuccess(tagged.exit))
      assert.deepStrictEqual([recorded[1]!.evidence.runId, recorded[1]!.evidence.step], ["given", 2])
      assert.isTrue(Option.isNone(yield* AgentRun.current))
    }).pipe(onRoutes([ScriptedProvider.success({ after: 400 }), ScriptedProvider.success({ after: 10 })]))
  )
})
