import { assert, describe, it } from "@effect/vitest"
import * as BreakerStore from "@modelgate/core/BreakerStore"
import { StoreError } from "@modelgate/core/Errors"
import * as Health from "@modelgate/core/Health"
import { Cause, Config, Duration, Effect, Exit, HashMap, Layer, Logger, Metric, Option, TestClock } from "effect"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import * as FastPath from "../src/internal/fastPath.js"
import { maxBytesPerRoute } from "../src/internal/healthConfig.js"
import { target } from "./fixtures.js"
import { metrics as healthMetrics } from "../src/internal/healthRecord.js"
import { decode } from "../src/internal/healthConfig.js"
import type { BreakerOverrides } from "../src/internal/healthConfig.js"

type Signal = Health.AttemptSignal

const ok = (latencyMs = 100, ttftMs?: number): Signal => ({
  outcome: "success",
  availabilityFailure: false,
  latencyMs,
  ttftMs,
  errorTag: undefined
})
const unavailable: Signal = {
  outcome: "unavailable",
  availabilityFailure: true,
  latencyMs: 50,
  ttftMs: undefined,
  errorTag: "ProviderUnavailable"
}
const timedOut: Signal = { ...unavailable, outcome: "timeout", latencyMs: 400 }
const rateLimited = (retryAfterMs: number): Signal => ({
  outcome: "rate_limited",
  availabilityFailure: true,
  latencyMs: 5,
  ttftMs: undefined,
  errorTag: "RateLimited",
  retryAfterMs
})
/** Outcomes that say nothing about the route's availability. */
const neutral: ReadonlyArray<Signal> = [
  {
    outcome: "invalid_request",
    availabilityFailure: false,
    latencyMs: 10,
    ttftMs: undefined,
    errorTag: "InvalidRequest"
  },
  { outcome: "refusal", availabilityFailure: false, latencyMs: 10, ttftMs: undefined, errorTag: "Refusal" },
  {
    outcome: "invalid_output",
    availabilityFailure: false,
    latencyMs: 10,
    ttftMs: undefined,
    errorTag: "InvalidOutput"
  },
  { outcome: "rejected", availabilityFailure: false, latencyMs: 10, ttftMs: undefined, errorTag: "ProviderRejected" },
  // An attempt cut by the call's own deadline: the engine reports it as a timeout that does not count.
  { outcome: "timeout", availabilityFailure: false, latencyMs: 200, ttftMs: undefined, errorTag: "ProviderUnavailable" }
]

let seq = 0
/** A target with a ref unique to this test file run, so global metrics do not mix between tests. */
/** The health key of a target (its ref and model version). */
const routeKey = Health.routeKey

const route = (name: string) => target(`model://health-${name}-${++seq}/m@eu`, "openai")

const config = (fields: {
  readonly breaker?: ConstructorParameters<typeof Health.BreakerSettings>[0]
  readonly targets?: Record<string, BreakerOverrides>
  readonly window?: ConstructorParameters<typeof Health.WindowSettings>[0]
  readonly retryBudget?: ConstructorParameters<typeof Health.RetryBudgetSettings>[0]
  readonly maxRoutes?: number
}) =>
  Health.HealthConfig.make({
    breaker: Health.BreakerSettings.make(fields.breaker ?? {}),
    targets: fields.targets ?? {},
    window: Health.WindowSettings.make(fields.window ?? {}),
    retryBudget: Health.RetryBudgetSettings.make(fields.retryBudget ?? {}),
    ...(fields.maxRoutes !== undefined ? { maxRoutes: fields.maxRoutes } : {})
  })

/** The memory health layer with these breaker settings (everything else default). */
const breakerLayer = (breaker: ConstructorParameters<typeof Health.BreakerSettings>[0]) =>
  Health.layerMemory(config({ breaker }))

interface LogLine {
  readonly message: string
  readonly level: string
  readonly route: unknown
  readonly from: unknown
  readonly to: unknown
  readonly at: unknown
}

/** A logger that keeps breaker transition lines. */
const captureLogs = () => {
  const lines: Array<LogLine> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
    if (!text.startsWith("circuit breaker")) return
    const get = (k: string) => Option.getOrUndefined(HashMap.get(annotations, k))
    lines.push({
      message: text,
      level: logLevel.label,
      route: get("route"),
      from: get("from"),
      to: get("to"),
      at: get("at")
    })
  })
  return { lines, layer: Logger.add(logger) }
}

const snapshot = (ref: string) => Effect.flatMap(Health.Health, (h) => Effect.map(h.snapshot(ref), Option.getOrThrow))

const recordAll = (t: ReturnType<typeof route>, signals: ReadonlyArray<Signal>) =>
  Effect.flatMap(Health.Health, (h) => Effect.forEach(signals, (s) => h.record(t, s), { discard: true }))

describe("Health breaker", () => {
  it.effect("opens after N consecutive availability failures, probes after the cool-down, closes on success", () => {
    const logs = captureLogs()
    const t = route("lifecycle")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      yield* h.record(t, unavailable)
      yield* TestClock.adjust(10)
      yield* h.record(t, timedOut)
      assert.isFalse(yield* h.isOpen(t))
      yield* TestClock.adjust(10)
      yield* h.record(t, rateLimited(0))
      // third availability failure at t=20: open from that instant for 1 s
      assert.isTrue(yield* h.isOpen(t))
      assert.isFalse(yield* h.tryAcquire(t))
      const open = yield* snapshot(routeKey(t))
      assert.deepStrictEqual(
        [open.breaker, open.breakerSince, open.probeAt, open.consecutiveFailures],
        ["open", 20, 1020, 3]
      )
      yield* TestClock.adjust(999)
      assert.isTrue(yield* h.isOpen(t), "still open at 1019")
      yield* TestClock.adjust(1)
      // 1020: the cool-down is over, one probe may go
      assert.isFalse(yield* h.isOpen(t))
      assert.isTrue(yield* h.tryAcquire(t))
      // the only probe slot is taken: everyone else still sees the route as open
      assert.isTrue(yield* h.isOpen(t))
      assert.isFalse(yield* h.tryAcquire(t))
      assert.strictEqual((yield* snapshot(routeKey(t))).breaker, "half_open")
      yield* TestClock.adjust(80)
      yield* h.record(t, ok(80))
      assert.isFalse(yield* h.isOpen(t))
      const closed = yield* snapshot(routeKey(t))
      assert.deepStrictEqual([closed.breaker, closed.consecutiveFailures], ["closed", 0])
      assert.deepStrictEqual(
        logs.lines.map((l) => [l.message, l.level, l.route, l.from, l.to, l.at]),
        [
          ["circuit breaker opened", "WARN", routeKey(t), "closed", "open", 20],
          ["circuit breaker half-open", "INFO", routeKey(t), "open", "half_open", 1020],
          ["circuit breaker closed", "INFO", routeKey(t), "half_open", "closed", 1100]
        ]
      )
      const gauge = yield* Metric.value(Metric.tagged(healthMetrics.breakerState, "route", routeKey(t)))
      assert.strictEqual(gauge.value, 0)
      const opened = yield* Metric.value(
        healthMetrics.breakerTransitions.pipe(
          Metric.tagged("route", routeKey(t)),
          Metric.tagged("from", "closed"),
          Metric.tagged("to", "open")
        )
      )
      assert.strictEqual(opened.count, 1)
    }).pipe(
      Effect.provide(breakerLayer({ consecutiveFailures: 3, failureRatio: 0, coolDown: Duration.seconds(1) })),
      Effect.provide(logs.layer)
    )
  })

  it.effect("a failed probe re-opens with a fresh cool-down; with 2 probes it closes after both succeed", () => {
    const logs = captureLogs()
    const t = route("reopen")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      yield* recordAll(t, [unavailable, unavailable])
      assert.isTrue(yield* h.isOpen(t))
      yield* TestClock.adjust(500)
      assert.isTrue(yield* h.tryAcquire(t))
      assert.isTrue(yield* h.tryAcquire(t))
      assert.isFalse(yield* h.tryAcquire(t), "only two probes")
      yield* TestClock.adjust(30)
      yield* h.record(t, unavailable)
      // re-opened at 530, open until 1030
      const s = yield* snapshot(routeKey(t))
      assert.deepStrictEqual([s.breaker, s.breakerSince, s.probeAt], ["open", 530, 1030])
      // the other probe's late answer changes nothing while open
      yield* h.record(t, ok())
      assert.strictEqual((yield* snapshot(routeKey(t))).breaker, "open")
      yield* TestClock.adjust(499)
      assert.isTrue(yield* h.isOpen(t))
      yield* TestClock.adjust(1)
      assert.isTrue(yield* h.tryAcquire(t))
      assert.isTrue(yield* h.tryAcquire(t))
      yield* h.record(t, ok())
      assert.strictEqual((yield* snapshot(routeKey(t))).breaker, "half_open", "one success of two")
      assert.isTrue(yield* h.isOpen(t), "no third probe while one is out")
      yield* h.record(t, ok())
      assert.strictEqual((yield* snapshot(routeKey(t))).breaker, "closed")
      assert.deepStrictEqual(
        logs.lines.map((l) => [l.from, l.to, l.at]),
        [
          ["closed", "open", 0],
          ["open", "half_open", 500],
          ["half_open", "open", 530],
          ["open", "half_open", 1030],
          ["half_open", "closed", 1030]
        ]
      )
    }).pipe(
      Effect.provide(
        breakerLayer({ consecutiveFailures: 2, failureRatio: 0, coolDown: Duration.millis(500), halfOpenProbes: 2 })
      ),
      Effect.provide(logs.layer)
    )
  })

  it.effect("failure ratio: needs minimumCalls availability outcomes in the window, ignores older ones", () => {
    const t = route("ratio")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      // F S F: 3 calls < minimumCalls 4
      yield* recordAll(t, [unavailable, ok(), unavailable])
      assert.isFalse(yield* h.isOpen(t))
      // neutral outcomes are not calls for the ratio either
      yield* recordAll(t, neutral)
      assert.isFalse(yield* h.isOpen(t))
      // 60 s later the window holds none of them: S F is 1/2 over 2 calls
      yield* TestClock.adjust(60_001)
      yield* recordAll(t, [ok(), unavailable])
      assert.isFalse(yield* h.isOpen(t))
      // S F S F: 2/4 = 0.5 with 4 calls
      yield* recordAll(t, [ok(), unavailable])
      assert.isTrue(yield* h.isOpen(t))
      // after a probe closes it, the failures before the close no longer count
      yield* TestClock.adjust(1000)
      assert.isTrue(yield* h.tryAcquire(t))
      yield* h.record(t, ok())
      yield* recordAll(t, [unavailable, ok(), ok(), ok()])
      assert.isFalse(yield* h.isOpen(t))
    }).pipe(
      Effect.provide(
        breakerLayer({ consecutiveFailures: 0, failureRatio: 0.5, minimumCalls: 4, coolDown: Duration.seconds(1) })
      )
    )
  })

  it.effect("400s, refusals, invalid output, rejections and deadline cuts neither count nor reset the count", () => {
    const t = route("neutral")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      yield* recordAll(t, [...neutral, ...neutral, ...neutral])
      let s = yield* snapshot(routeKey(t))
      assert.deepStrictEqual([s.breaker, s.consecutiveFailures, s.samples, s.failureRate], ["closed", 0, 15, 0])
      assert.strictEqual(s.lastErrorClass, "deadline")
      yield* h.record(t, unavailable)
      yield* recordAll(t, neutral)
      s = yield* snapshot(routeKey(t))
      assert.deepStrictEqual([s.breaker, s.consecutiveFailures], ["closed", 1])
      // the second availability failure in a row (neutral ones in between) opens it
      yield* h.record(t, unavailable)
      assert.isTrue(yield* h.isOpen(t))
      // a neutral probe gives its slot back without closing or re-opening
      yield* TestClock.adjust(1000)
      assert.isTrue(yield* h.tryAcquire(t))
      yield* h.record(t, neutral[0]!)
      assert.strictEqual((yield* snapshot(routeKey(t))).breaker, "half_open")
      assert.isTrue(yield* h.tryAcquire(t))
      yield* h.record(t, ok())
      assert.strictEqual((yield* snapshot(routeKey(t))).breaker, "closed")
    }).pipe(
      Effect.provide(
        breakerLayer({ consecutiveFailures: 2, failureRatio: 0.5, minimumCalls: 2, coolDown: Duration.seconds(1) })
      )
    )
  })

  it.effect("a probe that never reports is forgotten after one cool-down; release gives the slot back at once", () => {
    const t = route("lease")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      yield* recordAll(t, [unavailable])
      yield* TestClock.adjust(100)
      assert.isTrue(yield* h.tryAcquire(t))
      yield* h.release(t)
      assert.isTrue(yield* h.tryAcquire(t), "released slot is free again")
      yield* TestClock.adjust(99)
      assert.isTrue(yield* h.isOpen(t))
      yield* TestClock.adjust(1)
      assert.isFalse(yield* h.isOpen(t), "the lost probe's lease ran out")
      assert.isTrue(yield* h.tryAcquire(t))
    }).pipe(Effect.provide(breakerLayer({ consecutiveFailures: 1, failureRatio: 0, coolDown: Duration.millis(100) })))
  })

  it.effect("per-target overrides: a disabled breaker never opens, others use their own threshold", () => {
    const off = route("off")
    const strict = route("strict")
    const normal = route("normal")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      for (const t of [off, strict, normal]) yield* recordAll(t, [unavailable, unavailable])
      assert.deepStrictEqual(
        [yield* h.isOpen(off), yield* h.isOpen(strict), yield* h.isOpen(normal)],
        [false, true, false]
      )
      assert.isTrue(yield* h.tryAcquire(off))
      yield* recordAll(normal, [unavailable])
      assert.isTrue(yield* h.isOpen(normal))
      // the disabled route's health is still recorded
      assert.strictEqual((yield* snapshot(routeKey(off))).failureRate, 1)
    }).pipe(
      Effect.provide(
        Health.layerMemory(
          config({
            breaker: { consecutiveFailures: 3, failureRatio: 0 },
            targets: { [off.ref]: { enabled: false }, [strict.ref]: { consecutiveFailures: 2 } }
          })
        )
      )
    )
  })
})

describe("Health: the private fast path (internal/fastPath)", () => {
  it.effect("a route whose breaker is off is admitted at once; the first-attempt deposit needs no Effect", () => {
    const off = route("fast-off")
    const on = route("fast-on")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      const fast = FastPath.health(h)
      assert.deepStrictEqual([fast?.tryAcquire?.(off), fast?.isOpen?.(off)], [true, false])
      // a route with a breaker, closed in a store read at once (in memory): answered at once
      assert.deepStrictEqual([fast?.tryAcquire?.(on), fast?.isOpen?.(on)], [true, false])
      // a route with a breaker state (open) in that store: the Effect runs (clock, transitions)
      const memory = yield* BreakerStore.makeMemory
      const inMemory = FastPath.health(
        yield* Effect.provideService(Health.make(config({})), BreakerStore.BreakerStore, memory)
      )
      const opened = { status: "open", since: 0, probes: 0, probeSuccesses: 0, lastProbeAt: 0 } as const
      yield* memory.modify(routeKey(on), () => [undefined, opened] as const)
      assert.deepStrictEqual([inMemory?.tryAcquire?.(on), inMemory?.isOpen?.(on)], [undefined, undefined])
      // a route with a breaker in a store without a synchronous read (a spread copy has none): the Effect runs
      const elsewhere = FastPath.health(
        yield* Effect.provideService(Health.make(config({})), BreakerStore.BreakerStore, { ...memory })
      )
      assert.deepStrictEqual([elsewhere?.tryAcquire?.(off), elsewhere?.isOpen?.(off)], [undefined, undefined])
      fast?.onFirstAttempt?.(0)
      assert.strictEqual((yield* h.retryBudget).firstAttempts, 1)
      // a wrapper made by spreading the service has no fast path: its own operations run
      assert.isUndefined(FastPath.health({ ...h, tryAcquire: () => Effect.succeed(false) }))
      // health off answers everything at once
      const none = yield* Effect.provide(Health.Health, Health.layerOff)
      assert.deepStrictEqual(
        [FastPath.health(none)?.tryAcquire?.(on), FastPath.health(none)?.isOpen?.(on)],
        [true, false]
      )
    }).pipe(Effect.provide(Health.layerMemory(config({ targets: { [off.ref]: { enabled: false } } }))))
  })
})

describe("Health record", () => {
  it.effect("success, failure and timeout rates, p50/p95 latency and TTFT, last error, headroom, window expiry", () => {
    const t = route("stats")
    return Effect.gen(function* () {
      const h = yield* Health.Health
      for (let i = 1; i <= 20; i++) yield* h.record(t, ok(i * 10, i))
      yield* recordAll(t, [timedOut, timedOut, neutral[1]!])
      yield* TestClock.adjust(1000)
      yield* h.record(t, rateLimited(2000))
      const s = yield* snapshot(routeKey(t))
      assert.strictEqual(s.samples, 24)
      assert.strictEqual(s.successRate, 20 / 24)
      assert.strictEqual(s.failureRate, 3 / 24)
      assert.strictEqual(s.timeoutRate, 2 / 24)
      // nearest rank over the 20 successes: p50 = 10th, p95 = 19th
      assert.deepStrictEqual([s.latencyP50Ms, s.latencyP95Ms, s.ttftP50Ms, s.ttftP95Ms], [100, 190, 10, 19])
      assert.deepStrictEqual(
        [s.lastErrorClass, s.lastErrorTag, s.lastErrorAt, s.lastAttemptAt],
        ["rate_limited", "RateLimited", 1000, 1000]
      )
      // a 429 without headers: no requests left until its retry-after
      assert.deepStrictEqual(
        [s.rateLimit?.remainingRequests, s.rateLimit?.resetAt, s.rateLimit?.reportedAt],
        [0, 3000, 1000]
      )
      yield* h.record(t, {
        ...ok(50),
        rateLimit: {
          remainingRequests: 40,
          limitRequests: 500,
          remainingTokens: 9000,
          limitTokens: 100_000,
          resetAt: 1700,
          reportedAt: 1000
        }
      })
      const r = (yield* snapshot(routeKey(t))).rateLimit
      assert.deepStrictEqual(
        [r?.remainingRequests, r?.limitRequests, r?.remainingTokens, r?.limitTokens, r?.resetAt, r?.reportedAt],
        [40, 500, 9000, 100_000, 1700, 1000]
      )
      // at 60,000 the samples of t=0 are exactly 60 s old and still inside the window
      yield* TestClock.adjust(59_000)
      assert.strictEqual((yield* snapshot(routeKey(t))).samples, 25)
      // 1 ms later only the two of t=1000 are
      yield* TestClock.adjust(1)
      const later = yield* snapshot(routeKey(t))
      assert.deepStrictEqual([later.samples, later.successRate, later.latencyP50Ms], [2, 0.5, 50])
      yield* TestClock.adjust(1000)
      const empty = yield* snapshot(routeKey(t))
      assert.deepStrictEqual([empty.samples, empty.successRate, empty.latencyP95Ms], [0, undefined, undefined])
      assert.isTrue(Option.isNone(yield* h.snapshot("model://never/seen@eu")))
    }).pipe(Effect.provide(Health.layerMemory(config({}))))
  })

  it.effect("the ring keeps the last `samples` attempts; maxRoutes drops the least recently used record", () => {
    const [a, b, c, d] = [route("lru-a"), route("lru-b"), route("lru-c"), route("lru-d")]
    return Effect.gen(function* () {
      const h = yield* Health.Health
      for (let i = 1; i <= 12; i++) yield* h.record(a, ok(i))
      const s = yield* snapshot(routeKey(a))
      // 12 recorded, the last 5 kept: 8..12
      assert.deepStrictEqual([s.samples, s.latencyP50Ms, s.latencyP95Ms], [5, 10, 12])
      yield* recordAll(b, [ok()])
      yield* recordAll(c, [ok()])
      yield* recordAll(a, [ok()]) // a is now the most recent
      yield* recordAll(d, [ok()]) // evicts b, the least recently used
      const all = yield* h.snapshotAll
      assert.deepStrictEqual(
        all.map((x) => x.route),
        [routeKey(c), routeKey(a), routeKey(d)]
      )
    }).pipe(
      Effect.provide(Health.layerMemory(config({ breaker: { minimumCalls: 5 }, window: { samples: 5 }, maxRoutes: 3 })))
    )
  })
})

describe("Health retry budget", () => {
  it.effect("starts with `burst` tokens, earns `ratio` per first attempt and `minPerSecond` per second", () =>
    Effect.gen(function* () {
      const h = yield* Health.Health
      const before = (yield* Metric.value(healthMetrics.retryBudgetRejections)).count
      assert.isTrue(yield* h.tryRetry)
      assert.isTrue(yield* h.tryRetry)
      assert.isFalse(yield* h.tryRetry)
      // 4 first attempts × 0.25 = 1 token
      for (let i = 0; i < 4; i++) yield* h.onFirstAttempt
      assert.isTrue(yield* h.tryRetry)
      assert.isFalse(yield* h.tryRetry)
      yield* TestClock.adjust(1999)
      assert.isFalse(yield* h.tryRetry, "0.5 tokens/s: 0.9995 after 1999 ms")
      yield* TestClock.adjust(1)
      assert.isTrue(yield* h.tryRetry)
      // idle for a minute: capped at burst
      yield* TestClock.adjust(60_000)
      const s = yield* h.retryBudget
      assert.deepStrictEqual(
        [s.tokens, s.capacity, s.firstAttempts, s.retriesGranted, s.retriesRejected],
        [2, 2, 4, 4, 3]
      )
      const after = (yield* Metric.value(healthMetrics.retryBudgetRejections)).count
      assert.strictEqual(after - before, 3)
    }).pipe(Effect.provide(Health.layerMemory(config({ retryBudget: { ratio: 0.25, minPerSecond: 0.5, burst: 2 } }))))
  )

  it.effect("disabled: every retry is allowed", () =>
    Effect.gen(function* () {
      const h = yield* Health.Health
      for (let i = 0; i < 100; i++) assert.isTrue(yield* h.tryRetry)
    }).pipe(
      Effect.provide(
        Health.layerMemory(config({ retryBudget: { enabled: false, ratio: 0, minPerSecond: 0, burst: 1 } }))
      )
    )
  )
})

/** A memory breaker store that fails every operation while `broken.on` is set. */
const breakableStore = (broken: { on: boolean }) =>
  Effect.map(BreakerStore.makeMemory, (memory) =>
    BreakerStore.BreakerStore.of({
      get: (route) =>
        broken.on
          ? Effect.fail(new StoreError({ store: "breaker", operation: "get", detail: "unreachable" }))
          : memory.get(route),
      modify: (route, f) =>
        broken.on
          ? Effect.fail(new StoreError({ store: "breaker", operation: "modify", detail: "unreachable" }))
          : memory.modify(route, f)
    })
  )

/** A logger that keeps breaker-store failure lines with all their annotations. */
const captureStoreLogs = () => {
  const lines: Array<{ readonly message: string; readonly annotations: Record<string, unknown> }> = []
  const logger = Logger.make(({ annotations, message }) => {
    const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
    if (!text.startsWith("breaker store")) return
    lines.push({ message: text, annotations: Object.fromEntries(HashMap.toEntries(annotations)) })
  })
  return { lines, layer: Logger.add(logger) }
}

describe("Health with a failing breaker store", () => {
  it.effect('admission fails closed: isOpen and tryAcquire fail with StoreError store "breaker"', () => {
    const t = route("store-admission")
    const broken = { on: false }
    return Effect.gen(function* () {
      const h = yield* Health.Health
      // open the breaker while the store works: admission has to read (and modify) the store now
      yield* recordAll(t, [unavailable])
      yield* TestClock.adjust(1_000)
      broken.on = true
      const acquire = yield* Effect.flip(h.tryAcquire(t))
      assert.deepStrictEqual([acquire._tag, acquire.store], ["StoreError", "breaker"])
      const open = yield* Effect.flip(h.isOpen(t))
      assert.deepStrictEqual([open._tag, open.store, open.operation], ["StoreError", "breaker", "get"])
      // a store that reads but cannot write: the probe slot cannot be taken, so no attempt starts
      const half = yield* BreakerStore.makeMemory
      yield* half.modify(
        routeKey(t),
        () => [undefined, { status: "half_open", since: 0, probes: 0, probeSuccesses: 0, lastProbeAt: 0 }] as const
      )
      const readOnly = yield* Health.make(config({})).pipe(
        Effect.provideService(
          BreakerStore.BreakerStore,
          BreakerStore.BreakerStore.of({
            get: half.get,
            modify: () => Effect.fail(new StoreError({ store: "breaker", operation: "modify" }))
          })
        )
      )
      const e = yield* Effect.flip(readOnly.tryAcquire(t))
      assert.deepStrictEqual([e._tag, e.store, e.operation], ["StoreError", "breaker", "modify"])
    }).pipe(
      Effect.provide(
        Health.layer(
          config({ breaker: { consecutiveFailures: 1, failureRatio: 0, coolDown: Duration.seconds(1) } })
        ).pipe(Layer.provide(Layer.effect(BreakerStore.BreakerStore, breakableStore(broken))))
      )
    )
  })

  it.effect(
    "record and release never fail: the failure is logged (route, operation) and counted; the sample is kept",
    () => {
      const t = route("store-bookkeeping")
      const broken = { on: true }
      const logs = captureStoreLogs()
      const failures = (operation: string) =>
        Effect.map(
          Metric.value(Metric.tagged(healthMetrics.breakerStoreFailures, "operation", operation)),
          (c) => c.count
        )
      return Effect.gen(function* () {
        const h = yield* Health.Health
        const [records, releases] = [yield* failures("record"), yield* failures("release")]
        // the third failure in a row would open the breaker: its store write fails, the call goes on
        yield* recordAll(t, [unavailable, unavailable, unavailable])
        yield* h.release(t)
        assert.deepStrictEqual([(yield* failures("record")) - records, (yield* failures("release")) - releases], [3, 1])
        assert.deepStrictEqual(
          logs.lines.map((l) => [l.message, l.annotations]),
          [
            ...Array.from({ length: 3 }, () => [
              "breaker store failed; breaker bookkeeping skipped",
              { route: routeKey(t), operation: "record" }
            ]),
            ["breaker store failed; breaker bookkeeping skipped", { route: routeKey(t), operation: "release" }]
          ]
        )
        broken.on = false
        const s = yield* snapshot(routeKey(t))
        // the health record has all three samples; the lost write left the breaker closed
        assert.deepStrictEqual([s.samples, s.consecutiveFailures, s.breaker], [3, 3, "closed"])
        // the next failure, with the store back, opens it
        yield* h.record(t, unavailable)
        assert.isTrue(yield* h.isOpen(t))
      }).pipe(
        Effect.provide(
          Health.layer(config({ breaker: { consecutiveFailures: 3, failureRatio: 0 } })).pipe(
            Layer.provide(Layer.effect(BreakerStore.BreakerStore, breakableStore(broken)))
          )
        ),
        Effect.provide(logs.layer)
      )
    }
  )
})

describe("Health layers", () => {
  it.effect("layer keeps breakers in the BreakerStore from the context; layerMemory in its own", () => {
    const t = route("layer-store")
    return Effect.gen(function* () {
      const store = yield* BreakerStore.makeMemory
      const shared = Layer.succeed(BreakerStore.BreakerStore, store)
      const settings = config({ breaker: { consecutiveFailures: 1, failureRatio: 0 } })
      // two services over one store see one breaker (two processes over a shared store)
      const one = yield* Effect.provide(Health.Health, Health.layer(settings).pipe(Layer.provide(shared)))
      const two = yield* Effect.provide(Health.Health, Health.layer(settings).pipe(Layer.provide(shared)))
      yield* one.record(t, unavailable)
      assert.strictEqual((yield* store.get(routeKey(t)))?.status, "open")
      assert.isTrue(yield* two.isOpen(t))
      // layerMemory: a store of its own
      const alone = yield* Effect.provide(Health.Health, Health.layerMemory(settings))
      assert.isFalse(yield* alone.isOpen(t))
    })
  })

  it.effect(
    "layerConfig reads the configuration from Config over the BreakerStore; invalid settings still fail the layer",
    () =>
      Effect.gen(function* () {
        const t = route("layer-config")
        const h = yield* Effect.provide(
          Health.Health,
          Health.layerConfig(Config.succeed(config({ breaker: { consecutiveFailures: 1, failureRatio: 0 } }))).pipe(
            Layer.provide(BreakerStore.layerMemory)
          )
        )
        yield* h.record(t, unavailable)
        assert.isTrue(yield* h.isOpen(t))
        const error = yield* Effect.flip(
          Effect.provide(
            Health.Health,
            Health.layerConfig(Config.succeed(config({ maxRoutes: 0 }))).pipe(Layer.provide(BreakerStore.layerMemory))
          )
        )
        assert.deepStrictEqual(error._tag === "GatewayConfigError" ? error.problems.map((p) => p.path) : [], [
          "health.maxRoutes"
        ])
      })
  )
})

describe("Health config", () => {
  it.effect("invalid settings fail the layer with one GatewayConfigError listing every problem", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.provide(
          Health.Health,
          Health.layerMemory(
            config({
              breaker: {
                consecutiveFailures: -1,
                failureRatio: 1.5,
                minimumCalls: 500,
                coolDown: Duration.zero,
                halfOpenProbes: 0
              },
              // inherited problems are reported once, at the defaults; the override's own are added
              targets: {
                "model://x/y@eu": { enabled: true, consecutiveFailures: 0, failureRatio: 0, halfOpenProbes: 1.5 },
                "model://ok/y@eu": { consecutiveFailures: 0, failureRatio: 0, enabled: false }
              },
              window: { samples: 0.5 },
              retryBudget: { ratio: 2, minPerSecond: -1, burst: 0 },
              maxRoutes: 0
            })
          )
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? Option.getOrThrow(Cause.failureOption(exit.cause)) : undefined
      assert.strictEqual(error?._tag, "GatewayConfigError")
      assert.deepStrictEqual(
        error?.problems.map((p) => p.path),
        [
          "health.window.samples",
          "health.maxRoutes",
          "health.breaker.consecutiveFailures",
          "health.breaker.failureRatio",
          "health.breaker.minimumCalls",
          "health.breaker.coolDown",
          "health.breaker.halfOpenProbes",
          'health.targets["model://x/y@eu"].halfOpenProbes',
          'health.targets["model://x/y@eu"]',
          "health.retryBudget.ratio",
          "health.retryBudget.minPerSecond",
          "health.retryBudget.burst"
        ]
      )
      assert.strictEqual(error?.problems[8]?.target, "model://x/y@eu")
    })
  )

  it.effect("decodes JSON with defaults; type errors are listed with their paths", () =>
    Effect.gen(function* () {
      const cfg = yield* decode({
        breaker: { consecutiveFailures: 3, coolDown: 5000 },
        targets: { "model://a/b@eu": { enabled: false } }
      })
      assert.deepStrictEqual(
        [
          cfg.breaker.consecutiveFailures,
          cfg.breaker.failureRatio,
          cfg.breaker.minimumCalls,
          cfg.window.samples,
          cfg.retryBudget.ratio
        ],
        [3, 0.5, 20, 100, 0.2]
      )
      const error = yield* Effect.flip(
        decode({ breaker: { coolDown: -1, halfOpenProbes: "2" }, retryBudget: { extra: 1 } })
      )
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason]),
        [
          ["health.breaker.coolDown", "INVALID_VALUE"],
          ["health.breaker.halfOpenProbes", "INVALID_VALUE"],
          ["health.retryBudget.extra", "INVALID_VALUE"]
        ]
      )
      const invalid = yield* Effect.flip(decode({ window: { samples: 10 } }))
      assert.deepStrictEqual(
        invalid.problems.map((p) => p.path),
        ["health.breaker.minimumCalls"]
      )
    })
  )
})

/** `global.gc`, exposed at run time when node was started without `--expose-gc`. */
const collect = (): (() => void) => {
  v8.setFlagsFromString("--expose-gc")
  const gc: unknown = vm.runInNewContext("gc")
  if (typeof gc !== "function") throw new Error("gc not available")
  return () => void gc()
}

/** Measures heap and array-buffer bytes in use, after two full collections. */
const heapUsage = () => {
  const gc = collect()
  return () => {
    gc()
    gc()
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
}

describe("Health memory", () => {
  // Stated bound (maxBytesPerRoute, internal/healthConfig): per route, window.samples × 17 B of ring (Float64
  // instant, Float32 latency and TTFT, Uint8 kind) plus 1.5 KiB for the objects around it. With the
  // default 100 samples that is 3,236 B per route: 32.4 MB for 10,000 routes with full windows.
  // Rings grow on demand from 8 samples, so a route with a few attempts is bounded by 1,672 B.
  const routes = 10_000
  const boundPerRoute = (samples: number) => maxBytesPerRoute(config({ window: { samples } }))

  it.effect(
    "10,000 routes with full windows and every 10th breaker open stay within the stated bound",
    () =>
      Effect.gen(function* () {
        const used = heapUsage()
        const targets = Array.from({ length: routes }, (_, i) => target(`model://mem/m${i}@eu`, "openai"))
        const baseline = used()
        const h = yield* Health.make(config({ breaker: { consecutiveFailures: 3, failureRatio: 0 } })).pipe(
          Effect.provide(BreakerStore.layerMemory)
        )
        const samples = 100
        for (let i = 0; i < routes; i++) {
          const t = targets[i]!
          for (let k = 0; k < samples; k++)
            yield* h.record(t, i % 10 === 0 && k >= samples - 3 ? unavailable : ok(k, k))
        }
        const full = used() - baseline
        assert.isTrue(yield* h.isOpen(targets[0]!))
        assert.isFalse(yield* h.isOpen(targets[1]!))
        assert.strictEqual((yield* h.snapshotAll).length, routes)
        const bound = routes * boundPerRoute(samples)
        console.log(
          `health memory: ${routes} routes × ${samples} samples = ${(full / 1e6).toFixed(1)} MB (bound ${(bound / 1e6).toFixed(1)} MB, ${Math.round(full / routes)} B/route)`
        )
        assert.isBelow(full, bound)
      }),
    120_000
  )

  it.effect(
    "10,000 routes with a few attempts each hold a small ring",
    () =>
      Effect.gen(function* () {
        const used = heapUsage()
        const targets = Array.from({ length: routes }, (_, i) => target(`model://few/m${i}@eu`, "openai"))
        const baseline = used()
        const h = yield* Health.make(config({})).pipe(Effect.provide(BreakerStore.layerMemory))
        for (const t of targets)
          yield* recordAll(t, [ok(), unavailable, ok()]).pipe(Effect.provideService(Health.Health, h))
        const few = used() - baseline
        const bound = routes * boundPerRoute(8)
        console.log(
          `health memory: ${routes} routes × 3 samples = ${(few / 1e6).toFixed(1)} MB (bound ${(bound / 1e6).toFixed(1)} MB, ${Math.round(few / routes)} B/route)`
        )
        assert.isBelow(few, bound)
      }),
    60_000
  )
})
