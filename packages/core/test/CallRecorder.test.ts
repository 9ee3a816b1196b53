/**
 * Issue 13 item 7: `CallRecorder.layerLog` writes one `Info` line per call (workflow, outcome, error
 * tag, target, latency, cost, call id; no tenant, no content) and the full encoded record at `Debug`.
 * Issue 23 item 7: the line says fallback / retries / degraded, and its fields are log annotations
 * (structured under `Logger.json` and `Logger.logFmt`), not text inside the message.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, type Errors, Health, ModelGateway } from "@modelgate/core"
import { CallRecord } from "@modelgate/core/ModelResult"
import { ScriptedProvider } from "@modelgate/testing"
import { Context, Effect, Exit, Fiber, Layer, Logger, LogLevel, Schema, TestClock } from "effect"
import { command, definition, providers, refs } from "./fixtures.js"
import { summaryMessage } from "../src/internal/callSummary.js"

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

/** Replaces the default logger with `format`, whose rendered lines are pushed to the returned array. */
const renderedBy = (format: Logger.Logger<unknown, string>) => {
  const lines: Array<string> = []
  const layer = Logger.replace(
    Logger.defaultLogger,
    Logger.map(format, (line) => {
      lines.push(line)
    })
  )
  return { lines, layer }
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
        records.map((r) => ["INFO", [summaryMessage(r)]])
      )
      const [ok, refused] = records
      assert.deepStrictEqual(logged[0]?.message, ["modelgate call success"])
      assert.deepStrictEqual(logged[0]?.annotations, {
        workflow: "ticket.classify",
        outcome: "success",
        target: refs.primary,
        fallback: false,
        retries: 0,
        degraded: false,
        attempts: 1,
        latencyMs: 25,
        costUsd: ok?.evidence.cost.actual,
        callId: ok?.evidence.callId
      })
      assert.deepStrictEqual(logged[1]?.message, ["modelgate call failed (BudgetExceeded)"])
      assert.deepStrictEqual(logged[1]?.annotations, {
        workflow: "ticket.classify",
        outcome: "failed",
        error: "BudgetExceeded",
        fallback: false,
        retries: 0,
        degraded: false,
        attempts: 0,
        latencyMs: 0,
        costUsd: 0,
        callId: refused?.evidence.callId
      })
      for (const e of logged) {
        // the message is one line; the fields are annotations, not text inside it
        assert.notInclude(String(e.message[0]), "\n")
        assert.notInclude(String(e.message[0]), "=")
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
          ["INFO", [summaryMessage(r)]],
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

/** One call of `workflow` through `layerLog` (and memory), under `logger`; its record. */
const logOne = (
  workflow: string,
  scripts: ScriptedProvider.Scripts,
  logger: Layer.Layer<never>
): Effect.Effect<CallRecord, Errors.GatewayConfigError> =>
  Effect.gen(function* () {
    const logRecorder = Context.get(yield* Layer.build(CallRecorder.layerLog), CallRecorder.CallRecorder)
    const memory = yield* CallRecorder.makeMemory
    const recorder = Layer.succeed(CallRecorder.CallRecorder, {
      record: (r: CallRecord) => Effect.zipRight(memory.record(r), logRecorder.record(r))
    })
    const layer = ModelGateway.layer(definition).pipe(
      Layer.provide(ScriptedProvider.layer({ providers, scripts })),
      ModelGateway.withDefaults({
        budgets: Budgets.layerOff,
        concurrency: Concurrency.layerOff,
        health: Health.layerOff,
        recorder
      })
    )
    yield* Effect.gen(function* () {
      const fiber = yield* Effect.fork(Effect.exit(ModelGateway.generate(command(workflow, { tenant: TENANT }))))
      yield* TestClock.adjust(5_000)
      yield* Fiber.join(fiber)
    }).pipe(Effect.provide(layer), Effect.provide(logger), Logger.withMinimumLogLevel(LogLevel.Info))
    const [record] = yield* memory.records
    assert.isDefined(record)
    return record!
  }).pipe(Effect.scoped)

/** The primary down (503 on every attempt: 3 attempts, 2 retries), the fallback answering. */
const outage: ScriptedProvider.Scripts = {
  [refs.primary]: [ScriptedProvider.unavailable({ after: 100 })],
  [refs.fallback]: [ScriptedProvider.success({ after: 50, value: { category: "billing", confidence: 0.9 } })]
}

describe("CallRecorder.layerLog: what the line says about the call's path", () => {
  it.effect("an outage served by the fallback does not log like a clean call", () =>
    Effect.gen(function* () {
      const log = capture()
      const record = yield* logOne("ticket.classify", outage, log.layer)
      assert.strictEqual(record.outcome, "success")
      const [line, ...others] = gatewayCalls(log.entries)
      assert.strictEqual(others.length, 0)
      assert.deepStrictEqual(line?.message, ["modelgate call success via fallback after 2 retries"])
      assert.deepInclude(line?.annotations, {
        outcome: "success",
        target: refs.fallback,
        fallback: true,
        retries: 2,
        degraded: false,
        attempts: 4
      })
      // the clean call's line, for contrast
      const clean = capture()
      yield* logOne(
        "ticket.classify",
        { [refs.primary]: [ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 0.9 } })] },
        clean.layer
      )
      assert.deepStrictEqual(gatewayCalls(clean.entries)[0]?.message, ["modelgate call success"])
      assert.deepInclude(gatewayCalls(clean.entries)[0]?.annotations, { fallback: false, retries: 0, attempts: 1 })
      assert.include(CallRecorder.summaryLine(record), " fallback=true retries=2 ")
    })
  )

  it.effect("a degraded answer says so, with the failure it stands in for", () =>
    Effect.gen(function* () {
      const log = capture()
      const record = yield* logOne(
        "ticket.classifyDegraded",
        {
          [refs.primary]: [ScriptedProvider.unavailable({ after: 100 })],
          [refs.fallback]: [ScriptedProvider.unavailable({ after: 100 })]
        },
        log.layer
      )
      assert.strictEqual(record.outcome, "degraded")
      const [line] = gatewayCalls(log.entries)
      assert.deepStrictEqual(line?.message, [summaryMessage(record)])
      assert.match(String(line?.message[0]), /^modelgate call degraded( \(\w+\))? via fallback after \d+ retries$/)
      assert.deepInclude(line?.annotations, { outcome: "degraded", degraded: true, fallback: true })
    })
  )

  it.effect("structured under Logger.json and Logger.logFmt: the fields are annotations, typed", () =>
    Effect.gen(function* () {
      const { lines: json, layer: jsonLayer } = renderedBy(Logger.jsonLogger)
      const record = yield* logOne("ticket.classify", outage, jsonLayer)
      const calls = json.map((l) => JSON.parse(l)).filter((o) => String(o.message).startsWith("modelgate call"))
      assert.strictEqual(calls.length, 1)
      assert.strictEqual(calls[0].message, "modelgate call success via fallback after 2 retries")
      assert.strictEqual(calls[0].logLevel, "INFO")
      assert.deepStrictEqual(calls[0].annotations, {
        workflow: "ticket.classify",
        outcome: "success",
        target: refs.fallback,
        fallback: true,
        retries: 2,
        degraded: false,
        attempts: 4,
        latencyMs: record.evidence.totalLatencyMs,
        costUsd: record.evidence.cost.actual,
        callId: record.evidence.callId
      })

      const { lines: logfmt, layer: logfmtLayer } = renderedBy(Logger.logfmtLogger)
      const second = yield* logOne("ticket.classify", outage, logfmtLayer)
      const lines = logfmt.filter((l) => l.includes('message="modelgate call'))
      assert.strictEqual(lines.length, 1)
      const line = lines[0]!
      assert.notInclude(line, "\n")
      assert.include(line, 'message="modelgate call success via fallback after 2 retries"')
      for (const field of [
        "workflow=ticket.classify",
        "outcome=success",
        `target=${refs.fallback}`,
        "fallback=true",
        "retries=2",
        "degraded=false",
        "attempts=4",
        `callId=${second.evidence.callId}`
      ])
        assert.include(line, ` ${field}`)
      assert.notInclude(json.join("\n") + line, TENANT)
    })
  )
})
