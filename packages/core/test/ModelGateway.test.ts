import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway } from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Clock, Effect, Exit, Fiber, Layer, Logger, LogLevel, Random, Ref, Schema, TestClock } from "effect"
import {
  Classification,
  command,
  definition,
  gatewayLayer,
  invalidOnEveryRoute,
  providers,
  refs,
  target,
  targets,
  workflow,
  workflows,
  definitionOf,
  exclusionsOf,
  onRoutes
} from "./fixtures.js"
import { generateFor, failureOf } from "./virtualTime.js"

const runFor = generateFor

const starts = (logs: ReadonlyArray<ScriptedProvider.AttemptLog>) =>
  logs.map((l) => [l.target, l.startedAt, l.timeoutMs])
const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const scripted = ScriptedProvider.ScriptedProvider

describe("ModelGateway.generate", () => {
  it.effect("retries share one deadline: 1 s deadline, 400 ms per attempt, attempts at the schedule's instants", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.reply"), 2_000)
      const logs = yield* (yield* scripted).attempts
      // full jitter with r = 0.5: first backoff 200 ms × 0.5 = 100 ms, second 400 ms × 0.5 = 200 ms
      assert.deepStrictEqual(starts(logs), [
        [refs.primary, 0, 400],
        [refs.primary, 500, 400],
        // 900 + 200 ms backoff + 100 ms minimum > 1000: no sleep, fall back at once with the 100 ms left
        [refs.fallback, 900, 100]
      ])
      assert.strictEqual(at, 1000)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        const error = exit.cause._tag === "Fail" ? exit.cause.error : undefined
        assert.strictEqual(error?._tag, "DeadlineExceeded")
      }
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "failed")
      assert.deepStrictEqual(
        record?.evidence.attempts.map((a) => [a.target, a.startOffsetMs, a.latencyMs, a.outcome]),
        [
          [refs.primary, 0, 400, "timeout"],
          [refs.primary, 500, 400, "timeout"],
          [refs.fallback, 900, 100, "timeout"]
        ]
      )
      assert.strictEqual(record?.evidence.retryCount, 1)
    }).pipe(Effect.withRandom(Random.fixed([0.5])), onRoutes([ScriptedProvider.hang], [ScriptedProvider.hang]))
  )

  it.effect("no attempt begins with less than minimumAttemptTime left", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const provider = yield* scripted
      const fiber = yield* Effect.fork(Effect.exit(gateway.generate(command("ticket.reply"))))
      yield* TestClock.adjust(899)
      assert.deepStrictEqual(starts(yield* provider.attempts), [
        [refs.primary, 0, 400],
        [refs.primary, 500, 400]
      ])
      yield* TestClock.adjust(1)
      // at 900 only 100 ms are left and the fallback needs 150 ms: it is never started
      const exit = yield* Fiber.join(fiber)
      assert.strictEqual(yield* Clock.currentTimeMillis, 900)
      assert.deepStrictEqual(starts(yield* provider.attempts), [
        [refs.primary, 0, 400],
        [refs.primary, 500, 400]
      ])
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "DeadlineExceeded")
    }).pipe(
      Effect.withRandom(Random.fixed([0.5])),
      Effect.provide(
        gatewayLayer(
          { [refs.primary]: [ScriptedProvider.hang], [refs.fallback]: [ScriptedProvider.success({ after: 10 })] },
          definitionOf({
            targets: targets.map((t) =>
              t.ref === refs.fallback ? target(refs.fallback, "anthropic", { limits: { minimumAttemptTime: 150 } }) : t
            ),
            workflows
          })
        )
      )
    )
  )

  it.effect.each([
    { error: "InvalidRequest", at: 50, primary: ScriptedProvider.invalidRequest({ after: 50 }) },
    { error: "Refusal", at: 80, primary: ScriptedProvider.refusal({ after: 80 }) }
  ])("a permanent $error: one attempt, no retry, never a reason to try another model", ({ error, at, primary }) =>
    Effect.gen(function* () {
      const run = yield* runFor(command("ticket.reply"), 1_000)
      assert.strictEqual(run.at, at)
      const exit = run.exit
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === error)
      assert.deepStrictEqual(starts(yield* (yield* scripted).attempts), [[refs.primary, 0, 400]])
      const [record] = yield* records
      assert.strictEqual(record?.errorTag, error)
      assert.isFalse(record?.evidence.fallbackUsed)
    }).pipe(onRoutes([primary], [ScriptedProvider.success({ after: 10 })]))
  )

  it.effect("a 429 whose retry-after exceeds the remaining time: no sleep, the fallback starts at once", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.reply"), 1_000)
      assert.deepStrictEqual(starts(yield* (yield* scripted).attempts), [
        [refs.primary, 0, 400],
        [refs.fallback, 100, 400]
      ])
      assert.strictEqual(at, 130)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.isTrue(exit.value.evidence.fallbackUsed)
        assert.strictEqual(String(exit.value.evidence.target), refs.fallback)
        assert.strictEqual(exit.value.evidence.attempts[0]?.retryAfterMs, 5_000)
      }
    }).pipe(
      onRoutes(
        [ScriptedProvider.rateLimited({ after: 100, retryAfter: "5 seconds" })],
        [ScriptedProvider.success({ after: 30 })]
      )
    )
  )

  it.effect("a 429 whose retry-after exceeds the remaining time, with no fallback: fails at once", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.solo"), 1_000)
      assert.strictEqual(at, 100)
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "RateLimited")
      assert.strictEqual((yield* (yield* scripted).attempts).length, 1)
    }).pipe(
      Effect.provide(
        gatewayLayer(
          { [refs.primary]: [ScriptedProvider.rateLimited({ after: 100, retryAfter: "5 seconds" })] },
          definitionOf({
            targets,
            workflows: [...workflows, workflow({ name: "ticket.solo", route: [refs.primary] })]
          })
        )
      )
    )
  )

  it.effect("retry-after is the minimum wait; backoff with full jitter is reproducible with a seeded Random", () =>
    Effect.gen(function* () {
      // The attempts of one "ticket.reply" call (deadline 1 s) against a primary answering `primary`.
      const attemptsOf = (primary: ReadonlyArray<ScriptedProvider.Outcome>) =>
        Effect.gen(function* () {
          yield* runFor(command("ticket.reply"), 1_000)
          return yield* (yield* scripted).attempts
        }).pipe(onRoutes(primary))
      const timeline = (seed: number) =>
        Effect.gen(function* () {
          const logs = yield* attemptsOf([
            ScriptedProvider.unavailable({ after: 10 }),
            ScriptedProvider.unavailable({ after: 10 }),
            ScriptedProvider.success({ after: 10 })
          ]).pipe(Effect.withRandom(Random.make(seed)))
          return logs.map((l) => l.startedAt - logs[0]!.startedAt)
        })
      const a = yield* timeline(42)
      const b = yield* timeline(42)
      assert.deepStrictEqual(a, b)
      assert.strictEqual(a.length, 3)
      // each wait is in [0, backoff): 200 ms then 400 ms
      assert.isTrue(a[1]! - 10 >= 0 && a[1]! - 10 < 200)
      assert.isTrue(a[2]! - a[1]! - 10 >= 0 && a[2]! - a[1]! - 10 < 400)
      // retry-after 300 ms beats a 10 ms jittered backoff (r = 0.05 × 200 ms)
      const withHint = yield* attemptsOf([
        ScriptedProvider.rateLimited({ after: 0, retryAfter: "300 millis" }),
        ScriptedProvider.success({ after: 10 })
      ]).pipe(Effect.withRandom(Random.fixed([0.05])))
      assert.deepStrictEqual(
        withHint.map((l) => l.startedAt - withHint[0]!.startedAt),
        [0, 300]
      )
    })
  )

  it.effect(
    "the primary supports a schema feature the fallback does not, for this request: the fallback is excluded",
    () =>
      Effect.gen(function* () {
        const gateway = yield* ModelGateway.ModelGateway
        const route = yield* gateway.router.resolve(
          command("ticket.lenient", { requires: { schemaFeatures: ["pattern"] } })
        )
        assert.deepStrictEqual(route.decision.eligible.map(String), [refs.fallback])
        assert.deepStrictEqual(
          route.decision.excluded.map((e) => [e.target, e.reason, e.detail]),
          [[refs.strictLocal, "SCHEMA_FEATURE_UNSUPPORTED", "unsupported: pattern"]]
        )
        const plain = yield* gateway.router.resolve(command("ticket.lenient"))
        assert.deepStrictEqual(plain.decision.eligible.map(String), [refs.fallback, refs.strictLocal])
      }).pipe(Effect.provide(gatewayLayer({})))
  )

  it.effect(
    "a regional outage leaving only a target that breaks residency: it is never called, the error names it",
    () =>
      Effect.gen(function* () {
        const { exit } = yield* runFor(command("ticket.summarize", { regions: ["eu"] }), 2_000)
        const logs = yield* (yield* scripted).attempts
        assert.isTrue(logs.length > 0)
        assert.isTrue(logs.every((l) => l.target === refs.primary))
        const error = failureOf(exit)
        assert.strictEqual(error?._tag, "PolicyViolation")
        if (error?._tag === "PolicyViolation") {
          assert.strictEqual(error.reason, "DATA_REGION_MISMATCH")
          assert.deepStrictEqual(exclusionsOf(error), [[refs.us, "DATA_REGION_MISMATCH"]])
          assert.include(error.message, refs.us)
        }
      }).pipe(
        Effect.provide(
          gatewayLayer({
            [refs.primary]: [ScriptedProvider.unavailable({ after: 20 })],
            [refs.us]: [ScriptedProvider.success({ after: 10 })]
          })
        )
      )
  )

  it.effect("the caller interrupts while the provider call is in flight: attempt interrupted, record cancelled", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const fiber = yield* Effect.fork(gateway.generate(command("ticket.reply")))
      yield* TestClock.adjust(150)
      yield* Fiber.interrupt(fiber)
      const [log] = yield* (yield* scripted).attempts
      assert.isTrue(log?.interrupted)
      assert.strictEqual(log?.endedAt, 150)
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "cancelled")
      assert.deepStrictEqual(
        record?.evidence.attempts.map((a) => [a.outcome, a.latencyMs]),
        [["cancelled", 150]]
      )
    }).pipe(onRoutes([ScriptedProvider.hang]))
  )

  it.effect("invalid output on the primary: the fallback is used and validated", () =>
    Effect.gen(function* () {
      const { exit, at } = yield* runFor(command("ticket.classify"), 1_000)
      assert.strictEqual(at, 70)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.deepStrictEqual(exit.value.content.value, { category: "billing", confidence: 0.9 })
        assert.strictEqual(String(exit.value.evidence.target), refs.fallback)
        assert.isTrue(exit.value.evidence.schemaValid)
        assert.deepStrictEqual(
          exit.value.evidence.attempts.map((a) => [a.target, a.outcome]),
          [
            [refs.primary, "invalid_output"],
            [refs.fallback, "success"]
          ]
        )
      }
    }).pipe(
      onRoutes(
        [ScriptedProvider.success({ after: 40, value: { category: "shipping", confidence: 2 } })],
        [ScriptedProvider.success({ after: 30, value: { category: "billing", confidence: 0.9 } })]
      )
    )
  )

  it.effect("invalid output on every route: InvalidOutput with paths, never values", () =>
    Effect.gen(function* () {
      const { exit } = yield* runFor(command("ticket.classify"), 1_000)
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
        const error = exit.cause.error
        assert.strictEqual(error._tag, "InvalidOutput")
        assert.notInclude(error.message, "shipping")
        assert.strictEqual(error.attempts.length, 2)
      }
    }).pipe(Effect.provide(gatewayLayer(invalidOnEveryRoute)))
  )

  it.effect("degrade answers availability failures with a non-model value, marked degraded", () =>
    Effect.gen(function* () {
      const { exit } = yield* runFor(command("ticket.classifyDegraded"), 2_000)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.isTrue(exit.value.evidence.degraded)
        assert.deepStrictEqual(exit.value.content.value, { category: "other", confidence: 0 })
      }
      const [record] = yield* records
      assert.strictEqual(record?.outcome, "degraded")
    }).pipe(onRoutes([ScriptedProvider.unavailable({ after: 10 })], [ScriptedProvider.unavailable({ after: 10 })]))
  )

  it.effect("state-changing tools allowed and an attempt timed out after dispatch: AmbiguousOutcome, no retry", () =>
    Effect.gen(function* () {
      const cmd = command("ticket.reply", {
        tools: [
          {
            name: "create_follow_up_task",
            description: "Creates a task",
            parameters: { type: "object", properties: {} },
            sideEffecting: true
          }
        ]
      })
      const { exit, at } = yield* runFor(cmd, 2_000)
      assert.strictEqual(at, 400)
      assert.isTrue(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "AmbiguousOutcome")
      assert.deepStrictEqual(starts(yield* (yield* scripted).attempts), [[refs.primary, 0, 400]])
    }).pipe(onRoutes([ScriptedProvider.hang], [ScriptedProvider.success({ after: 1 })]))
  )

  it.effect("a definite 503 stays retryable even with state-changing tools", () =>
    Effect.gen(function* () {
      const cmd = command("ticket.reply", {
        tools: [{ name: "create_follow_up_task", description: "x", parameters: {}, sideEffecting: true }]
      })
      const { exit } = yield* runFor(cmd, 2_000)
      assert.isTrue(Exit.isSuccess(exit))
      assert.strictEqual((yield* (yield* scripted).attempts).length, 2)
    }).pipe(
      Effect.withRandom(Random.fixed([0.5])),
      onRoutes([ScriptedProvider.unavailable({ after: 10 }), ScriptedProvider.success({ after: 10 })])
    )
  )

  it.effect("a canary in the prompt and in the output appears in no record, log line or error", () =>
    Effect.gen(function* () {
      const canary = "CANARY-7f3a9c"
      const logs = yield* Ref.make<Array<string>>([])
      const logger = Logger.make(({ message, annotations }) => {
        Effect.runSync(Ref.update(logs, (all) => [...all, JSON.stringify({ message, annotations: [...annotations] })]))
      })
      const program = Effect.gen(function* () {
        const cmd = command("ticket.classify", {
          messages: [{ _tag: "user", content: `My card ${canary} was charged twice` }]
        })
        const ok = yield* runFor(cmd, 2_000)
        const failed = yield* runFor(cmd, 2_000)
        return [ok, failed] as const
      }).pipe(
        Effect.provide(
          ModelGateway.layer(definition).pipe(
            Layer.provideMerge(
              ScriptedProvider.layer({
                providers,
                scripts: {
                  [refs.primary]: [
                    ScriptedProvider.success({
                      after: 10,
                      value: { category: "billing", confidence: 0.5, note: canary }
                    }),
                    ScriptedProvider.success({ after: 10, text: `{"category": "${canary}"}` })
                  ],
                  [refs.fallback]: [ScriptedProvider.success({ after: 10, text: `not json ${canary}` })]
                }
              })
            ),
            Layer.provideMerge(
              Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerLog)
            )
          )
        ),
        Effect.provide(Logger.add(logger)),
        // Debug too: the log recorder writes the whole record there
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      const [ok, failed] = yield* program
      assert.isTrue(Exit.isSuccess(ok.exit))
      assert.isTrue(Exit.isFailure(failed.exit))
      const errorText = Exit.isFailure(failed.exit)
        ? JSON.stringify(failed.exit.cause) +
          String(failed.exit.cause) +
          (failed.exit.cause._tag === "Fail" ? failed.exit.cause.error.message : "")
        : ""
      const recordsText = JSON.stringify(Exit.isSuccess(ok.exit) ? ok.exit.value.evidence : {})
      const logText = (yield* Ref.get(logs)).join("\n")
      assert.isTrue(logText.includes("modelgate call"), "records are logged")
      assert.isTrue(logText.includes("callRecord"), "whole records are logged (at Debug)")
      for (const text of [errorText, recordsText, logText]) assert.notInclude(text, canary)
    })
  )
  it.effect(
    "generateObject: the structured value typed by the workflow's schema; another schema is InvalidOutput",
    () =>
      Effect.gen(function* () {
        const settle = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          Effect.flatMap(Effect.fork(effect), (fiber) => Effect.zipRight(TestClock.adjust(100), Fiber.join(fiber)))
        const { value, result } = yield* settle(ModelGateway.generateObject(command("ticket.classify"), Classification))
        const category: "billing" | "technical" | "other" = value.category
        assert.strictEqual(category, "billing")
        assert.strictEqual(value.confidence, 0.75)
        assert.isTrue(result.evidence.schemaValid)
        const Other = Schema.Struct({ orderId: Schema.String })
        const error = yield* Effect.flip(settle(ModelGateway.generateObject(command("ticket.classify"), Other)))
        assert.strictEqual(error._tag, "InvalidOutput")
        if (error._tag === "InvalidOutput") assert.deepStrictEqual(error.issues, ["$.orderId: Missing"])
      }).pipe(onRoutes([ScriptedProvider.success({ after: 10, value: { category: "billing", confidence: 0.75 } })]))
  )
})
