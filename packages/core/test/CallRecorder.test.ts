/**
 * Issue 13 item 7: `CallRecorder.layerLog` writes one `Info` line per call (workflow, outcome, error
 * tag, target, latency, cost, call id; no tenant, no content) and the full encoded record at `Debug`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway } from "@modelgate/core"
import { CallRecord } from "@modelgate/core/ModelResult"
import { ScriptedProvider } from "@modelgate/testing"
import { Context, Effect, Exit, Fiber, Layer, Logger, LogLevel, Schema, TestClock } from "effect"
import { command, definition, providers, refs } from "./fixtures.js"

const CANARY = "canary-content-5d1e"
const TENANT = "tenant-canary-7"

interface Entry {
  readonly level: string
  readonly message: ReadonlyArray<unknown>
  readonly annotations: Record<string, unknown>
}

const capture = () => {
  const entries: Array<Entry> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    entries.push({
      level: logLevel.label,
      message: Array.isArray(message) ? message : [message],
      annotations: Object.fromEntries(annotations)
    })
  })
  return { entries, layer: Logger.replace(Logger.defaultLogger, logger) }
}

const encode = Schema.encodeSync(CallRecord)

/**
 * Two calls through a gateway recording with `layerLog` (and in memory, to compare), the canary in
 * their prompts: one for `TENANT` succeeds with the canary in its value, one for an undeclared tenant
 * (no budget) fails with BudgetExceeded.
 */
const runCalls = (minimum: LogLevel.LogLevel) =>
  Effect.gen(function* () {
    const log = capture()
    const logRecorder = Context.get(yield* Layer.build(CallRecorder.layerLog), CallRecorder.CallRecorder)
    const memory = yield* CallRecorder.makeMemory
    const recorder = Layer.succeed(CallRecorder.CallRecorder, {
      record: (r: CallRecord) => Effect.zipRight(memory.record(r), logRecorder.record(r))
    })
    const layer = ModelGateway.layer(definition).pipe(
      Layer.provide(
        ScriptedProvider.layer({
          providers,
          scripts: {
            [refs.primary]: [
              ScriptedProvider.success({ after: 25, value: { category: "billing", confidence: 0.5, note: CANARY } })
            ]
          }
        })
      ),
      ModelGateway.withDefaults({
        budgets: Budgets.layerMemory({ tenants: { [TENANT]: { limit: 1 } } }),
        concurrency: Concurrency.layerOff,
        health: Health.layerOff,
        recorder
      })
    )
    const messages = [{ _tag: "user", content: `My invoice is wrong ${CANARY}` }] as const
    const exits = yield* Effect.gen(function* () {
      const one = yield* Effect.fork(ModelGateway.generate(command("ticket.classify", { tenant: TENANT, messages })))
      yield* TestClock.adjust(100)
      const first = yield* Fiber.await(one)
      const two = yield* Effect.fork(
        ModelGateway.generate(command("ticket.classify", { tenant: `${TENANT}-undeclared`, messages }))
      )
      yield* TestClock.adjust(100)
      return [first, yield* Fiber.await(two)] as const
    }).pipe(Effect.provide(layer), Effect.provide(log.layer), Logger.withMinimumLogLevel(minimum))
    return { exits, records: yield* memory.records, entries: log.entries }
  }).pipe(Effect.scoped)

const decodeRecord = Schema.decodeUnknownSync(CallRecord)

const base = {
  tenant: TENANT,
  mode: "generate",
  evidence: {
    callId: "mg_test_1",
    workflow: "ticket.classify",
    policyVersion: "p",
    promptId: "classify",
    promptVersion: "3",
    eligible: [refs.primary],
    excluded: [],
    fallbackUsed: false,
    degraded: false,
    attempts: [],
    retryCount: 0,
    startedAt: 0,
    totalLatencyMs: 812.6,
    usage: { inputTokens: 0, outputTokens: 0 },
    cost: { currency: "USD", reserved: 0, actual: 0.0000004 }
  }
}

/** A failed call that never reached a target. */
const record: CallRecord = decodeRecord({ ...base, outcome: "failed", errorTag: "ProviderUnavailable" })

const gatewayCalls = (entries: ReadonlyArray<Entry>) =>
  entries.filter((e) => e.message.some((m) => typeof m === "string" && m.startsWith("modelgate call")))

describe("CallRecorder.layerLog", () => {
  it("summaryLine: workflow, outcome, error tag, target, whole ms, cost without exponent, call id", () => {
    assert.strictEqual(
      CallRecorder.summaryLine(record),
      "modelgate call workflow=ticket.classify outcome=failed error=ProviderUnavailable latencyMs=813 costUsd=0.0000004 callId=mg_test_1"
    )
    const withTarget = decodeRecord({
      ...base,
      outcome: "success",
      evidence: { ...base.evidence, target: refs.primary, cost: { ...base.evidence.cost, actual: 1.5 } }
    })
    assert.strictEqual(
      CallRecorder.summaryLine(withTarget),
      `modelgate call workflow=ticket.classify outcome=success target=${refs.primary} latencyMs=813 costUsd=1.5 callId=mg_test_1`
    )
    const free = decodeRecord({
      ...base,
      outcome: "success",
      evidence: { ...base.evidence, cost: { ...base.evidence.cost, actual: 0 } }
    })
    assert.include(CallRecorder.summaryLine(free), " costUsd=0 ")
  })

  it.effect("at Info: exactly one line per call, without the tenant, content or the encoded record", () =>
    Effect.gen(function* () {
      const { exits, records, entries } = yield* runCalls(LogLevel.Info)
      assert.isTrue(Exit.isSuccess(exits[0]))
      assert.isTrue(Exit.isFailure(exits[1]))
      assert.deepStrictEqual(
        records.map((r) => [r.outcome, r.errorTag]),
        [
          ["success", undefined],
          ["failed", "BudgetExceeded"]
        ]
      )
      const logged = gatewayCalls(entries)
      assert.deepStrictEqual(
        logged.map((e) => [e.level, e.message]),
        records.map((r) => ["INFO", [CallRecorder.summaryLine(r)]])
      )
      const [ok, refused] = records
      assert.strictEqual(
        logged[0]?.message[0],
        `modelgate call workflow=ticket.classify outcome=success target=${refs.primary} latencyMs=25 costUsd=${ok?.evidence.cost.actual} callId=${ok?.evidence.callId}`
      )
      assert.strictEqual(
        logged[1]?.message[0],
        `modelgate call workflow=ticket.classify outcome=failed error=BudgetExceeded latencyMs=0 costUsd=0 callId=${refused?.evidence.callId}`
      )
      for (const e of logged) {
        // one line even under the pretty logger (each annotation is a line there)
        assert.notInclude(String(e.message[0]), "\n")
        assert.notProperty(e.annotations, "callRecord")
      }
      const text = JSON.stringify(entries)
      assert.notInclude(text, TENANT)
      assert.notInclude(text, CANARY)
    })
  )

  it.effect("at Debug: the Info line and the whole record, encoded, as the callRecord annotation", () =>
    Effect.gen(function* () {
      const { records, entries } = yield* runCalls(LogLevel.Debug)
      const logged = gatewayCalls(entries)
      assert.deepStrictEqual(
        logged.map((e) => [e.level, e.message]),
        records.flatMap((r) => [
          ["INFO", [CallRecorder.summaryLine(r)]],
          ["DEBUG", ["modelgate call record"]]
        ])
      )
      const debug = logged.filter((e) => e.level === "DEBUG")
      assert.deepStrictEqual(
        debug.map((e) => e.annotations.callRecord),
        records.map((r) => encode(r))
      )
      // The record holds the tenant (as before, at Debug only), never content.
      assert.include(JSON.stringify(debug), TENANT)
      assert.notInclude(JSON.stringify(entries), CANARY)
    })
  )

  it.effect("the record is encoded only when Debug is on", () =>
    Effect.gen(function* () {
      const recorder = Context.get(yield* Layer.build(CallRecorder.layerLog), CallRecorder.CallRecorder)
      // Not encodable (retryCount must be an integer): encoding it throws.
      const invalid: CallRecord = { ...record, evidence: { ...record.evidence, retryCount: 0.5 } }
      const quiet = capture()
      const atInfo = yield* Effect.exit(
        recorder.record(invalid).pipe(Effect.provide(quiet.layer), Logger.withMinimumLogLevel(LogLevel.Info))
      )
      assert.isTrue(Exit.isSuccess(atInfo), "not encoded at Info")
      assert.deepStrictEqual(
        quiet.entries.map((e) => e.level),
        ["INFO"]
      )
      const exit = yield* Effect.exit(
        recorder.record(invalid).pipe(Effect.provide(capture().layer), Logger.withMinimumLogLevel(LogLevel.Debug))
      )
      assert.isTrue(Exit.isFailure(exit), "encoded (and failed) at Debug")
    }).pipe(Effect.scoped)
  )
})
