import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, GatewayConfig, ModelGateway } from "@modelgate/core"
import * as Health from "@modelgate/core/Health"
import type { GatewayError } from "@modelgate/core/Errors"
import type { ModelTarget } from "@modelgate/core/ModelTarget"
import type { Workflow } from "@modelgate/core/Workflow"
import { ScriptedProvider } from "@modelgate/testing"
import { Clock, Duration, Effect, Exit, Fiber, HashMap, Layer, Logger, Metric, Option, TestClock } from "effect"
import { Classification, command, providers, target, workflow, exclusionsOf } from "./fixtures.js"
import { driven, failureOf, generateFor } from "./virtualTime.js"
import { metrics as healthMetrics } from "../src/internal/healthRecord.js"

const primary = "model://openai/small@eu"
const fallback = "model://anthropic/haiku@eu"
const us = "model://gemini/flash@us"

const targetsWith = (maxAttempts: number): ReadonlyArray<ModelTarget> => [
  target(primary, "openai", { limits: { maxAttempts } }),
  target(fallback, "anthropic", { limits: { maxAttempts } }),
  target(us, "gemini", { regions: ["us"], limits: { maxAttempts } })
]

const workflows: ReadonlyArray<Workflow> = [
  workflow({ name: "h.reply", route: [primary, fallback] }),
  workflow({ name: "h.only", route: [primary] }),
  workflow({
    name: "h.classify",
    output: { schema: "Classification", schemaVersion: "1" },
    route: [primary, fallback]
  }),
  workflow({ name: "h.multi", regions: ["eu", "us"], route: [primary, fallback, us] }),
  // retries without backoff, so a whole outage plays out at one virtual instant
  workflow({ name: "h.fast", route: [primary, fallback], retry: { baseDelay: 0, maxDelay: 0 } })
]

const definition = (maxAttempts: number): GatewayConfig.Definition => ({
  config: GatewayConfig.GatewayConfig.make({ targets: targetsWith(maxAttempts), workflows }),
  schemas: { Classification }
})

/** The gateway over scripted providers with the given health layer. */
const gateway = (scripts: ScriptedProvider.Scripts, health: Layer.Layer<Health.Health, unknown>, maxAttempts = 1) =>
  ModelGateway.layer(definition(maxAttempts)).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, health, CallRecorder.layerMemory)),
    Layer.orDie
  )

const healthConfig = (breaker: ConstructorParameters<typeof Health.BreakerSettings>[0], retryBudget = {}) =>
  Health.HealthConfig.make({
    breaker: Health.BreakerSettings.make(breaker),
    retryBudget: Health.RetryBudgetSettings.make(retryBudget)
  })

/** Runs `cmd` starting at absolute virtual instant `startAt`, lets `window` ms pass, returns its exit and end. */
const callAt = (startAt: number, cmd: ReturnType<typeof command>, window = 1000) =>
  Effect.zipRight(
    TestClock.setTime(startAt),
    Effect.map(generateFor(cmd, window, `call at ${startAt} did not finish within ${window} ms`), ({ exit, at }) => ({
      exit,
      endedAt: at
    }))
  )

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

/** Asserts the call ended at virtual 0 with NoEligibleRoute excluding exactly `excluded` (target, reason). */
const excludedAtOnce = (exit: Exit.Exit<unknown, GatewayError>, excluded: ReadonlyArray<readonly [string, string]>) =>
  Effect.map(Clock.currentTimeMillis, (now) => {
    assert.strictEqual(now, 0)
    const error = failureOf(exit)
    assert.strictEqual(error?._tag, "NoEligibleRoute")
    if (error?._tag === "NoEligibleRoute") {
      assert.deepStrictEqual(
        exclusionsOf(error),
        excluded.map(([target, reason]) => [target, reason])
      )
    }
  })
const attemptsOn = (ref: string) =>
  Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) =>
    Effect.map(p.attemptsOn(ref), (l) => l.map((a) => a.startedAt))
  )
/** The health key of the target `ref` (its ref and model version). */
const keyOf = (ref: string) => Health.routeKey(targetsWith(1).find((t) => t.ref === ref)!)
const breakerOf = (ref: string) =>
  Effect.flatMap(Health.Health, (h) =>
    Effect.map(h.snapshot(keyOf(ref)), (s) => (Option.isSome(s) ? s.value.breaker : "closed"))
  )

const transitionLogs = () => {
  const lines: Array<readonly [unknown, unknown, unknown]> = []
  const layer = Logger.add(
    Logger.make(({ annotations, message }) => {
      const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
      if (!text.startsWith("circuit breaker")) return
      const get = (k: string) => Option.getOrUndefined(HashMap.get(annotations, k))
      lines.push([get("from"), get("to"), get("at")])
    })
  )
  return { lines, layer }
}

const fail503 = ScriptedProvider.unavailable({ after: 50 })

describe("breakers in routing", () => {
  it.effect(
    "3 failures open the breaker; later calls skip the route at once and use the fallback; probes close and re-open it",
    () => {
      const logs = transitionLogs()
      return Effect.gen(function* () {
        const reply = command("h.reply")
        // calls 1-3 at 0, 1000, 2000: the primary fails at +50, the fallback answers at once
        for (const at of [0, 1000, 2000]) {
          const { exit, endedAt } = yield* callAt(at, reply)
          assert.isTrue(Exit.isSuccess(exit))
          assert.strictEqual(endedAt, at + 50)
        }
        assert.strictEqual(yield* breakerOf(primary), "open")
        // call 4 at 3000: primary excluded before any attempt, fallback answers at 3000
        const skipped = yield* callAt(3000, reply)
        assert.strictEqual(skipped.endedAt, 3000)
        assert.isTrue(Exit.isSuccess(skipped.exit))
        if (Exit.isSuccess(skipped.exit)) {
          const ev = skipped.exit.value.evidence
          assert.deepStrictEqual(exclusionsOf(ev), [[primary, "BREAKER_OPEN"]])
          assert.strictEqual(ev.target, fallback)
          assert.deepStrictEqual(
            ev.attempts.map((a) => [a.target, a.startOffsetMs]),
            [[fallback, 0]]
          )
        }
        // still open 1 ms before the cool-down (opened at 2050 for 10 s) ends
        const stillOpen = yield* callAt(12_049, reply)
        assert.strictEqual(stillOpen.endedAt, 12_049)
        // at 12050 one probe goes to the primary (answers in 100 ms) ...
        yield* TestClock.setTime(12_050)
        const gw = yield* ModelGateway.ModelGateway
        const probe = yield* Effect.fork(gw.generate(reply))
        yield* TestClock.adjust(10)
        // ... and a call at 12060, while the probe is out, does not pile onto the primary
        const meanwhile = yield* gw.generate(reply)
        assert.deepStrictEqual(exclusionsOf(meanwhile.evidence), [[primary, "BREAKER_OPEN"]])
        yield* TestClock.adjust(90)
        const probed = yield* Fiber.join(probe)
        assert.strictEqual(probed.evidence.target, primary)
        assert.strictEqual(yield* breakerOf(primary), "closed")
        // three more failures open it again at 15050; the probe at 25050 fails at 25100 and re-opens it
        for (const at of [13_000, 14_000, 15_000]) yield* callAt(at, reply)
        const failedProbe = yield* callAt(25_050, reply)
        assert.strictEqual(failedProbe.endedAt, 25_100)
        assert.strictEqual(yield* breakerOf(primary), "open")
        // the fresh cool-down runs from 25100: excluded at 35099, probed (and closed) at 35100
        assert.strictEqual((yield* callAt(35_099, reply)).endedAt, 35_099)
        const lastProbe = yield* callAt(35_100, reply)
        assert.strictEqual(lastProbe.endedAt, 35_200)
        assert.strictEqual(yield* breakerOf(primary), "closed")
        // every attempt the primary ever saw, at exact instants: none while open
        assert.deepStrictEqual(
          yield* attemptsOn(primary),
          [0, 1000, 2000, 12_050, 13_000, 14_000, 15_000, 25_050, 35_100]
        )
        assert.deepStrictEqual(logs.lines, [
          ["closed", "open", 2050],
          ["open", "half_open", 12_050],
          ["half_open", "closed", 12_150],
          ["closed", "open", 15_050],
          ["open", "half_open", 25_050],
          ["half_open", "open", 25_100],
          ["open", "half_open", 35_100],
          ["half_open", "closed", 35_200]
        ])
      }).pipe(
        Effect.provide(
          gateway(
            {
              [primary]: [
                fail503,
                fail503,
                fail503,
                ScriptedProvider.success({ after: 100 }),
                fail503,
                fail503,
                fail503,
                fail503,
                ScriptedProvider.success({ after: 100 })
              ],
              [fallback]: [ScriptedProvider.success({ after: 0 })]
            },
            Health.layerMemory(
              healthConfig({ consecutiveFailures: 3, failureRatio: 0, coolDown: Duration.seconds(10) })
            )
          )
        ),
        Effect.provide(logs.layer)
      )
    }
  )

  it.effect(
    "400s, refusals, invalid output, auth rejections, deadline cuts and cancellations do not move the breaker",
    () =>
      Effect.gen(function* () {
        const gw = yield* ModelGateway.ModelGateway
        const only = command("h.only")
        const expectTag = (exit: Exit.Exit<unknown, { readonly _tag: string }>, tag: string) =>
          assert.strictEqual(failureOf(exit)?._tag, tag)
        let at = 0
        const next = () => (at += 1000)
        for (let i = 0; i < 3; i++) expectTag((yield* callAt(next(), only)).exit, "InvalidRequest")
        for (let i = 0; i < 3; i++) expectTag((yield* callAt(next(), only)).exit, "Refusal")
        for (let i = 0; i < 3; i++) {
          const { exit } = yield* callAt(next(), command("h.classify"))
          // invalid output from the primary: the fallback answers
          assert.isTrue(Exit.isSuccess(exit) && exit.value.evidence.target === fallback)
        }
        for (let i = 0; i < 3; i++) expectTag((yield* callAt(next(), only)).exit, "ProviderRejected")
        // a 200 ms call deadline cuts the 400 ms attempt short: our deadline, not the provider's fault
        for (let i = 0; i < 3; i++) {
          const { exit, endedAt } = yield* callAt(next(), command("h.only", { timeout: 200 }))
          expectTag(exit, "DeadlineExceeded")
          assert.strictEqual(endedAt, at + 200)
        }
        // the caller cancels while the attempt is in flight
        for (let i = 0; i < 3; i++) {
          yield* TestClock.setTime(next())
          const fiber = yield* Effect.fork(gw.generate(only))
          yield* TestClock.adjust(100)
          yield* Fiber.interrupt(fiber)
        }
        const h = yield* Health.Health
        const s = Option.getOrThrow(yield* h.snapshot(keyOf(primary)))
        // 15 attempts recorded (cancelled ones are not), none an availability failure
        assert.deepStrictEqual(
          [s.breaker, s.consecutiveFailures, s.samples, s.failureRate, s.timeoutRate, s.lastErrorClass],
          ["closed", 0, 15, 0, 0, "deadline"]
        )
        assert.strictEqual((yield* attemptsOn(primary)).length, 18)
        // control: one 503 and one timeout of the target's own 400 ms limit do open it (threshold 2)
        expectTag((yield* callAt(next(), only)).exit, "ProviderUnavailable")
        const timedOut = yield* callAt(next(), only)
        expectTag(timedOut.exit, "ProviderUnavailable")
        assert.strictEqual(timedOut.endedAt, at + 400)
        assert.strictEqual(yield* breakerOf(primary), "open")
      }).pipe(
        Effect.provide(
          gateway(
            {
              [primary]: [
                ...Array.from({ length: 3 }, () => ScriptedProvider.invalidRequest({ after: 10 })),
                ...Array.from({ length: 3 }, () => ScriptedProvider.refusal({ after: 10 })),
                ...Array.from({ length: 3 }, () => ScriptedProvider.invalidJson({ after: 10 })),
                ...Array.from({ length: 3 }, () =>
                  ScriptedProvider.fail(10, { kind: "authentication", processed: "no", httpStatus: 401 })
                ),
                ...Array.from({ length: 6 }, () => ScriptedProvider.hang),
                ScriptedProvider.unavailable({ after: 10 }),
                ScriptedProvider.hang
              ],
              [fallback]: [ScriptedProvider.success({ after: 0, value: { category: "billing", confidence: 0.9 } })]
            },
            Health.layerMemory(
              healthConfig({
                consecutiveFailures: 2,
                failureRatio: 0.5,
                minimumCalls: 2,
                coolDown: Duration.seconds(10)
              })
            )
          )
        )
      )
  )

  it.effect("every compatible route open: NoEligibleRoute listing BREAKER_OPEN at virtual time 0, no attempt", () =>
    Effect.gen(function* () {
      const h = yield* Health.Health
      const gw = yield* ModelGateway.ModelGateway
      const [p, f] = targetsWith(1)
      const outage: Health.AttemptSignal = {
        outcome: "unavailable",
        availabilityFailure: true,
        latencyMs: 0,
        ttftMs: undefined,
        errorTag: "ProviderUnavailable"
      }
      for (let i = 0; i < 3; i++) {
        yield* h.record(p!, outage)
        yield* h.record(f!, outage)
      }
      // the only other route runs in the US, which this request does not allow
      const exit = yield* Effect.exit(gw.generate(command("h.multi", { regions: ["eu"] })))
      yield* excludedAtOnce(exit, [
        [primary, "BREAKER_OPEN"],
        [fallback, "BREAKER_OPEN"],
        [us, "DATA_REGION_MISMATCH"]
      ])
      assert.deepStrictEqual(yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (s) => s.attempts), [])
      const [record] = yield* records
      assert.deepStrictEqual([record?.outcome, record?.errorTag], ["failed", "NoEligibleRoute"])
    }).pipe(Effect.provide(gateway({}, Health.layerMemory(healthConfig({ consecutiveFailures: 3, failureRatio: 0 })))))
  )

  it.effect(
    "a breaker that opens between routing and the attempt: skipped, and NoEligibleRoute when nothing else is left",
    () =>
      Effect.gen(function* () {
        const gw = yield* ModelGateway.ModelGateway
        const exit = yield* Effect.exit(gw.generate(command("h.reply")))
        yield* excludedAtOnce(exit, [
          [primary, "BREAKER_OPEN"],
          [fallback, "BREAKER_OPEN"]
        ])
        assert.deepStrictEqual(yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (s) => s.attempts), [])
      }).pipe(
        Effect.provide(
          gateway(
            {},
            // the router sees closed breakers; every tryAcquire is refused (probe slots taken meanwhile)
            Layer.effect(
              Health.Health,
              Effect.map(Health.Health, (h) => Health.Health.of({ ...h, tryAcquire: () => Effect.succeed(false) }))
            ).pipe(Layer.provide(Health.layerOff))
          )
        )
      )
  )
})

describe("breaker skips in evidence", () => {
  it.effect("a route refused at attempt time is listed as BREAKER_OPEN in the envelope of a successful fallback", () =>
    Effect.gen(function* () {
      const result = yield* driven(ModelGateway.generate(command("h.reply")), 1_000)
      assert.strictEqual(String(result.evidence.target), fallback)
      assert.isTrue(result.evidence.fallbackUsed)
      assert.deepStrictEqual(
        result.evidence.excluded.map((e) => [String(e.target), e.reason]),
        [[primary, "BREAKER_OPEN"]]
      )
      const attempts = yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)
      assert.deepStrictEqual(
        attempts.map((a) => a.target),
        [fallback]
      )
    }).pipe(
      Effect.provide(
        gateway(
          { [fallback]: [ScriptedProvider.success({ after: 20 })] },
          // the router sees closed breakers; the primary's probe slot is gone by attempt time
          Layer.effect(
            Health.Health,
            Effect.map(Health.Health, (h) =>
              Health.Health.of({ ...h, tryAcquire: (t) => Effect.succeed(String(t.ref) !== primary) })
            )
          ).pipe(Layer.provide(Health.layerOff))
        )
      )
    )
  )
})

describe("retry budget", () => {
  it.effect(
    "an outage of 1,000 calls: total retries stay within ratio × first attempts (+ the initial burst)",
    () =>
      Effect.gen(function* () {
        const gw = yield* ModelGateway.ModelGateway
        const calls = 1000
        const rejectedBefore = (yield* Metric.value(healthMetrics.retryBudgetRejections)).count
        // 1,000 calls from 10 concurrent callers against providers that answer 503 at once, retries
        // without backoff
        const exits = yield* Effect.forEach(
          Array.from({ length: calls }),
          () => Effect.exit(gw.generate(command("h.fast"))),
          {
            concurrency: 10
          }
        )
        // no virtual time passed, so the time-based allowance (minPerSecond) added nothing
        assert.strictEqual(yield* Clock.currentTimeMillis, 0)
        assert.isTrue(exits.every((e) => failureOf(e)?._tag === "ProviderUnavailable"))
        const all = yield* records
        assert.strictEqual(all.length, calls)
        const retries = all.reduce((n, r) => n + r.evidence.retryCount, 0)
        const exhausted = all.filter((r) => r.evidence.retryBudgetExhausted).length
        const attempts = yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (s) => s.attempts)
        const budget = yield* (yield* Health.Health).retryBudget
        // ratio 0.2 of 1,000 first attempts, plus the bucket of 10 that starts full
        const bound = 10 + 0.2 * calls
        console.log(
          `retry budget: ${calls} calls, ${attempts.length} attempts, ${retries} retries (bound ${bound}; ${4 * calls} without a budget), ${exhausted} calls refused a retry`
        )
        assert.strictEqual(budget.firstAttempts, calls)
        assert.strictEqual(budget.retriesGranted, retries)
        assert.isAtMost(retries, bound)
        // every call made its 2 first attempts (primary and fallback) plus the retries it was granted
        assert.strictEqual(attempts.length, 2 * calls + retries)
        // the budget was what limited retries, and it let the fraction through
        assert.isAtLeast(retries, 0.2 * calls)
        assert.isAbove(exhausted, 0)
        const rejectedAfter = (yield* Metric.value(healthMetrics.retryBudgetRejections)).count
        assert.strictEqual(rejectedAfter - rejectedBefore, budget.retriesRejected)
        // a call refused its first retry went straight to its fallback, without a backoff sleep
        const straight = all.find((r) => r.evidence.attempts[1]?.target === fallback)
        const first = straight?.evidence.attempts[0]
        assert.deepStrictEqual(
          straight?.evidence.attempts.slice(0, 2).map((a) => [a.target, a.startOffsetMs]),
          [
            [primary, 0],
            [fallback, 0]
          ]
        )
        assert.strictEqual(first?.outcome, "unavailable")
        assert.isTrue(straight?.evidence.retryBudgetExhausted)
      }).pipe(
        Effect.provide(
          gateway(
            {
              [primary]: [ScriptedProvider.unavailable({ after: 0 })],
              [fallback]: [ScriptedProvider.unavailable({ after: 0 })]
            },
            Health.layerMemory(healthConfig({ enabled: false }, { ratio: 0.2, minPerSecond: 1, burst: 10 })),
            3
          )
        )
      ),
    120_000
  )
})
