/**
 * Budgets and concurrency as the engine uses them: reservations, shrinking output caps, settlement
 * on every exit, permits and their deadlines, per-target caps. Virtual time throughout.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Budgets from "@modelgate/core/Budgets"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import type { GatewayError } from "@modelgate/core/Errors"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import * as Health from "@modelgate/core/Health"
import { TenantId } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { type ModelResult, Usage } from "@modelgate/core/ModelResult"
import { ModelTarget, Pricing } from "@modelgate/core/ModelTarget"
import * as TokenEstimator from "@modelgate/core/TokenEstimator"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import { Clock, Effect, Exit, Fiber, Layer, TestClock } from "effect"
import { Classification, command, target, workflow, exclusionsOf } from "./fixtures.js"
import { generateFor } from "./virtualTime.js"
import { makeMemory as makeMemoryBudgetStore } from "../src/internal/budgetMemoryStore.js"

const P = "model://openai/small@eu"
const F = "model://anthropic/haiku@eu"
const acme = TenantId.make("acme")
const beta = TenantId.make("beta")

/** $0.001 per input token, $0.002 per output token: every cost is a whole number of store units. */
const priced = (t: ModelTarget, outputPerMillion = 2_000, inputPerMillion = 1_000) =>
  new ModelTarget({
    ...t,
    pricing: new Pricing({ inputPerMillion, outputPerMillion, currency: "USD", pricingVersion: "prices-test-1" })
  })

const limits = { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }
const targetP = priced(target(P, "openai", { limits }))
const targetF = priced(target(F, "anthropic", { limits }))

const definitionWith = (targets: ReadonlyArray<ModelTarget>): GatewayConfig.Definition => ({
  config: GatewayConfig.GatewayConfig.make({
    targets,
    workflows: [
      workflow({ name: "w.reply", route: [P], timeout: 10_000, maxOutputTokens: 100 }),
      workflow({ name: "w.short", route: [P, F], timeout: 1_000, maxOutputTokens: 100 }),
      workflow({
        name: "w.classify",
        route: [P, F],
        timeout: 10_000,
        maxOutputTokens: 1_000,
        output: { schema: "Classification", schemaVersion: "1" }
      })
    ]
  }),
  schemas: { Classification }
})
const definition = definitionWith([targetP, targetF])
const compiled = GatewayConfig.compile(definition)

/** The router's input-token estimate of a command (asserted against the router below). */
const tokensOf = (cmd: ReturnType<typeof command>) =>
  TokenEstimator.estimateInput({
    messages: cmd.messages,
    tools: cmd.tools,
    outputJsonSchema: compiled.get(cmd.workflow)!.jsonSchema
  })
const nClassify = tokensOf(command("w.classify"))
const nReply = tokensOf(command("w.reply"))

const layer = (options: {
  readonly scripts: ScriptedProvider.Scripts
  readonly budgets?: Budgets.Options
  readonly store?: BudgetStore.Service
  readonly concurrency?: Concurrency.Options
  readonly definition?: GatewayConfig.Definition
}) =>
  ModelGateway.layer(options.definition ?? definition).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts: options.scripts })),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layer(options.budgets ?? { tenants: { acme: { limit: 100 }, beta: { limit: 100 } } }).pipe(
          Layer.provide(options.store ? Layer.succeed(BudgetStore.BudgetStore, options.store) : BudgetStore.layerMemory)
        ),
        options.concurrency ? Concurrency.layerMemory(options.concurrency) : Concurrency.layerOff,
        Health.layerOff,
        CallRecorder.layerMemory
      )
    )
  )

const gateway = ModelGateway.ModelGateway
const scripted = ScriptedProvider.ScriptedProvider
const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const units = (x: number) => Math.round(x * Budgets.unitsPerCurrency)
const balance = (tenant: TenantId = acme) =>
  Effect.map(
    Effect.flatMap(Budgets.Budgets, (b) => b.balance(tenant)),
    (b) => ({ committed: units(b.committed), reserved: units(b.reserved) })
  )
const permits = Effect.map(
  Effect.flatMap(Concurrency.Concurrency, (c) => c.snapshot),
  (s) => ({ inUse: s.inUse, waiting: s.waiting, tenants: s.tenants })
)
const noPermits = { inUse: 0, waiting: 0, tenants: 0 }
const inputTokens = (cmd: ReturnType<typeof command>) =>
  Effect.flatMap(
    Effect.flatMap(gateway, (g) => g.router.resolve(cmd)),
    // `Router.resolve` always counts (only the gateway skips counting when nothing is limited).
    (route) =>
      route.inputTokens === undefined ? Effect.dieMessage("resolve did not count") : Effect.succeed(route.inputTokens)
  )
const errorOf = (exit: Exit.Exit<ModelResult, GatewayError>): GatewayError | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

const runFor = generateFor

const cmd = command("w.reply", {
  messages: [
    { _tag: "user", content: "Summarise this ticket thread for the on-call engineer, please, in a few lines." }
  ]
})
const nLong = tokensOf(cmd)

describe("budgets during execution", () => {
  it.effect(
    "the output cap shrinks as the reservation is used; the commit is the actual cost; the rest is refunded",
    () =>
      Effect.gen(function* () {
        const n = nClassify
        assert.strictEqual(yield* inputTokens(command("w.classify")), n)
        // reservation R = maxCost = both attempts' input + 150 output tokens
        const maxCost = (2 * n * 1_000 + 150 * 2_000) / 1e6
        const { exit } = yield* runFor(command("w.classify", { maxCost }), 1_000)
        assert.isTrue(Exit.isSuccess(exit))
        const logs = yield* (yield* scripted).attempts
        // first attempt: what R pays for after its own input (n + 150 tokens of output money);
        // the fallback: what is left after the first attempt's usage (input n, output 30) and its own input
        assert.deepStrictEqual(
          logs.map((l) => [l.target, l.maxOutputTokens]),
          [
            [P, Math.min(1_000, Math.floor((n * 1_000 + 150 * 2_000) / 2_000))],
            [F, 120]
          ]
        )
        const [record] = yield* records
        const cost = record!.evidence.cost
        // actual: 2n input + 30 + 118 output tokens, 2 output tokens (= $0.004) under the reservation
        assert.strictEqual(units(cost.actual), units((2 * n * 1_000 + 148 * 2_000) / 1e6))
        assert.strictEqual(units(cost.reserved), units(maxCost))
        assert.deepStrictEqual(yield* balance(), { committed: units(cost.actual), reserved: 0 })
        assert.strictEqual(units(cost.reserved) - units(cost.actual), units(0.004))
      }).pipe(
        Effect.provide(
          layer({
            scripts: {
              [P]: [ScriptedProvider.invalidJson({ after: 100, usage: { inputTokens: nClassify, outputTokens: 30 } })],
              [F]: [
                ScriptedProvider.success({
                  after: 100,
                  value: { category: "billing", confidence: 0.9 },
                  usage: { inputTokens: nClassify, outputTokens: 118 }
                })
              ]
            }
          })
        )
      )
  )

  it.effect("a provider that overshoots its cap: the call commits what was spent, more than it reserved", () =>
    Effect.gen(function* () {
      const n = nReply
      const { exit } = yield* runFor(command("w.reply"), 1_000)
      assert.isTrue(Exit.isSuccess(exit))
      const [record] = yield* records
      const cost = record!.evidence.cost
      // reserved: input + 100 output tokens; used: input + 150 output tokens
      assert.strictEqual(units(cost.reserved), units((n * 1_000 + 100 * 2_000) / 1e6))
      assert.strictEqual(units(cost.actual), units((n * 1_000 + 150 * 2_000) / 1e6))
      // the budget records what was spent, never less; it fits the limit, so nothing is overspent
      assert.deepStrictEqual(yield* balance(), { committed: units(cost.actual), reserved: 0 })
      assert.isUndefined(cost.overspent)
    }).pipe(
      Effect.provide(
        layer({
          scripts: { [P]: [ScriptedProvider.success({ after: 10, usage: { inputTokens: nReply, outputTokens: 150 } })] }
        })
      )
    )
  )

  it.effect("when the rest no longer pays for the minimum useful output, the next attempt does not start", () =>
    Effect.gen(function* () {
      const n = nClassify
      const maxCost = (2 * n * 1_000 + 150 * 2_000) / 1e6
      const { exit } = yield* runFor(command("w.classify", { maxCost }), 1_000)
      assert.strictEqual(errorOf(exit)?._tag, "BudgetExceeded")
      // the first attempt used 140 output tokens: 10 are left for the fallback, below the minimum of 16
      assert.deepStrictEqual(
        (yield* (yield* scripted).attempts).map((l) => l.target),
        [P]
      )
      assert.deepStrictEqual(yield* balance(), { committed: units((n * 1_000 + 140 * 2_000) / 1e6), reserved: 0 })
    }).pipe(
      Effect.provide(
        layer({
          scripts: {
            [P]: [ScriptedProvider.invalidJson({ after: 100, usage: { inputTokens: nClassify, outputTokens: 140 } })]
          }
        })
      )
    )
  )

  it.effect("a failed attempt's reported usage is committed too, and shrinks the fallback's cap", () =>
    Effect.gen(function* () {
      const n = nReply
      const { exit } = yield* runFor(command("w.short"), 1_000)
      assert.isTrue(Exit.isSuccess(exit))
      const logs = yield* (yield* scripted).attempts
      // R = n input + 100 output; the 503 reported n input + 40 output, so F may write 60 minus its input's worth
      const afterFirst = (n * 1_000 + 100 * 2_000 - (n * 1_000 + 40 * 2_000) - n * 1_000) / 2_000
      assert.deepStrictEqual(
        logs.map((l) => [l.target, l.maxOutputTokens]),
        [
          [P, 100],
          [F, Math.floor(afterFirst + 1e-9)]
        ]
      )
      const [record] = yield* records
      assert.deepStrictEqual(
        record?.evidence.attempts.map((a) => [a.outcome, a.usage?.outputTokens]),
        [
          ["unavailable", 40],
          ["success", 10]
        ]
      )
      assert.deepStrictEqual(yield* balance(), {
        committed: units((n * 1_000 + 40 * 2_000 + 10 * 2_000) / 1e6),
        reserved: 0
      })
    }).pipe(
      Effect.provide(
        layer({
          scripts: {
            [P]: [
              ScriptedProvider.fail(50, {
                kind: "server_error",
                processed: "no",
                httpStatus: 503,
                usage: new Usage({ inputTokens: nReply, outputTokens: 40 })
              })
            ],
            [F]: [ScriptedProvider.success({ after: 50, usage: { inputTokens: 0, outputTokens: 10 } })]
          }
        })
      )
    )
  )

  it.effect(
    "1,000 concurrent calls on one budget: committed + reserved never exceeds the limit; spend = sum of actual costs",
    () =>
      Effect.gen(function* () {
        const limit = 20
        const limitUnits = units(limit)
        const inner = yield* makeMemoryBudgetStore
        const seen = { checks: 0, violations: 0, peak: 0, samples: 0 }
        const check = (account: string) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.map(inner.balance(account, now), (b) => {
              seen.checks++
              seen.peak = Math.max(seen.peak, b.committed + b.reserved)
              if (b.committed + b.reserved > limitUnits) seen.violations++
            })
          )
        // every store operation is followed by a look at the account
        const store: BudgetStore.Service = {
          reserve: (r) => Effect.tap(inner.reserve(r), () => check(r.account)),
          commit: (r) => Effect.tap(inner.commit(r), () => check(r.account)),
          release: (r) => Effect.tap(inner.release(r), () => check(r.account)),
          balance: inner.balance
        }
        const program = Effect.gen(function* () {
          const g = yield* gateway
          const b = yield* Budgets.Budgets
          assert.strictEqual(yield* inputTokens(cmd), nLong)
          // a sampler of the service's view, every 5 virtual milliseconds
          const sampler = yield* Effect.fork(
            Effect.forever(
              Effect.zipRight(
                Effect.map(b.balance(acme), (x) => {
                  seen.samples++
                  if (units(x.committed) + units(x.reserved) > limitUnits) seen.violations++
                }),
                Effect.sleep(5)
              )
            )
          )
          // 1,000 calls arrive in 40 waves of 25, 10 ms apart, each taking 50–199 ms
          const calls: Array<Fiber.RuntimeFiber<Exit.Exit<ModelResult, GatewayError>>> = []
          for (let wave = 0; wave < 40; wave++) {
            for (let j = 0; j < 25; j++) calls.push(yield* Effect.fork(Effect.exit(g.generate(cmd))))
            yield* TestClock.adjust(10)
          }
          yield* TestClock.adjust(1_000)
          const exits = yield* Effect.forEach(calls, Fiber.join)
          yield* Fiber.interrupt(sampler)
          const ok = exits.filter(Exit.isSuccess)
          const failed = exits.map(errorOf).filter((e) => e !== undefined)
          assert.strictEqual(ok.length + failed.length, 1_000)
          assert.deepStrictEqual([...new Set(failed.map((e) => e._tag))], ["BudgetExceeded"])
          assert.isAbove(ok.length, 100)
          assert.isAbove(failed.length, 100)
          assert.strictEqual(seen.violations, 0)
          assert.isAtLeast(seen.checks, 1_000 + ok.length)
          assert.isAtLeast(seen.samples, 280)
          assert.isAtMost(seen.peak, limitUnits)
          // the budget really was the binding constraint
          assert.isAbove(seen.peak, limitUnits * 0.95)
          const spent = ok.reduce((sum, e) => sum + units(e.value.evidence.cost.actual), 0)
          const successes = (yield* records).filter((r) => r.outcome === "success")
          assert.strictEqual(successes.length, ok.length)
          assert.deepStrictEqual(yield* balance(), { committed: spent, reserved: 0 })
          assert.isAtMost(spent, limitUnits)
        })
        yield* program.pipe(
          Effect.provide(
            layer({
              store,
              budgets: { tenants: { acme: { limit, period: "total" } } },
              scripts: {
                [P]: Array.from({ length: 1_000 }, (_, i) =>
                  ScriptedProvider.success({
                    after: 50 + ((i * 37) % 150),
                    // at most the estimated input, at most the output cap: actual ≤ reserved for every call
                    usage: { inputTokens: nLong - (i % 7), outputTokens: 10 + ((i * 53) % 91) }
                  })
                )
              }
            })
          )
        )
      }),
    120_000
  )
})

describe("permits during execution", () => {
  it.effect("saturating tenant A: tenant B's call starts at once on B's reserved permit", () =>
    Effect.gen(function* () {
      const g = yield* gateway
      const a = yield* Effect.forEach([1, 2, 3, 4], () => Effect.fork(g.generate(command("w.reply"))))
      yield* TestClock.adjust(10)
      assert.deepStrictEqual(yield* permits, { inUse: 2, waiting: 2, tenants: 1 })
      const b = yield* Effect.fork(
        Effect.zipRight(g.generate(command("w.reply", { tenant: beta })), Clock.currentTimeMillis)
      )
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* permits, { inUse: 3, waiting: 2, tenants: 2 })
      yield* TestClock.adjust(3_000)
      assert.strictEqual(yield* Fiber.join(b), 1_010)
      yield* Effect.forEach(a, Fiber.join)
      const starts = (yield* records).map((r) => [
        r.tenant,
        r.evidence.startedAt + r.evidence.attempts[0]!.startOffsetMs
      ])
      assert.deepStrictEqual(
        starts.sort((x, y) => Number(x[1]) - Number(y[1]) || String(x[0]).localeCompare(String(y[0]))),
        [
          [acme, 0],
          [acme, 0],
          [beta, 10],
          [acme, 1_000],
          [acme, 1_000]
        ]
      )
      assert.deepStrictEqual(yield* permits, noPermits)
    }).pipe(
      Effect.provide(
        layer({
          scripts: { [P]: [ScriptedProvider.success({ after: 1_000 })] },
          // A: 1 reserved + the 1 shared permit; B: 1 reserved nobody else may take
          concurrency: { permits: 3, tenants: { acme: { reserved: 1, max: 2 }, beta: { reserved: 1 } } }
        })
      )
    )
  )

  it.effect("a call queued for a permit past its deadline fails with DeadlineExceeded and calls no provider", () =>
    Effect.gen(function* () {
      const g = yield* gateway
      const first = yield* Effect.fork(g.generate(command("w.reply")))
      yield* TestClock.adjust(1)
      const { exit, at } = yield* runFor(command("w.reply", { timeout: 1_000 }), 1_000)
      assert.strictEqual(at, 1_001)
      const error = errorOf(exit)
      assert.strictEqual(error?._tag, "DeadlineExceeded")
      assert.strictEqual(error?._tag === "DeadlineExceeded" ? error.stage : undefined, "queue")
      assert.strictEqual((yield* (yield* scripted).attempts).length, 1)
      // its reservation is gone; only the first call's remains
      assert.deepStrictEqual(yield* balance(), { committed: 0, reserved: units((nReply * 1_000 + 100 * 2_000) / 1e6) })
      assert.deepStrictEqual(yield* permits, { inUse: 1, waiting: 0, tenants: 1 })
      yield* TestClock.adjust(3_000)
      yield* Fiber.join(first)
      assert.deepStrictEqual(yield* permits, noPermits)
      assert.strictEqual((yield* balance()).reserved, 0)
      const queued = (yield* records).find((r) => r.outcome === "failed")
      assert.deepStrictEqual([queued?.errorTag, queued?.evidence.attempts.length], ["DeadlineExceeded", 0])
    }).pipe(
      Effect.provide(
        layer({ scripts: { [P]: [ScriptedProvider.success({ after: 3_000 })] }, concurrency: { permits: 1 } })
      )
    )
  )

  it.effect(
    "interrupt during an in-flight attempt: permit returned, input cost committed, the rest released, record cancelled",
    () =>
      Effect.gen(function* () {
        const g = yield* gateway
        const n = nReply
        const fiber = yield* Effect.fork(g.generate(command("w.reply")))
        yield* TestClock.adjust(300)
        assert.deepStrictEqual(yield* permits, { inUse: 1, waiting: 0, tenants: 1 })
        yield* Fiber.interrupt(fiber)
        assert.deepStrictEqual(yield* permits, noPermits)
        assert.deepStrictEqual(yield* balance(), { committed: units((n * 1_000) / 1e6), reserved: 0 })
        const [log] = yield* (yield* scripted).attempts
        assert.deepStrictEqual([log?.interrupted, log?.endedAt], [true, 300])
        const [record] = yield* records
        assert.strictEqual(record?.outcome, "cancelled")
        assert.strictEqual(record?.evidence.usage.inputTokens, n)
        assert.strictEqual(units(record!.evidence.cost.actual), units((n * 1_000) / 1e6))
        assert.deepStrictEqual(
          record?.evidence.attempts.map((a) => [a.outcome, a.latencyMs]),
          [["cancelled", 300]]
        )
      }).pipe(
        Effect.provide(
          layer({
            scripts: { [P]: [ScriptedProvider.hang] },
            concurrency: { permits: 2, tenants: { acme: { reserved: 1 } } }
          })
        )
      )
  )

  it.effect("a per-target cap queues attempts within the deadline, then falls back", () =>
    Effect.gen(function* () {
      const g = yield* gateway
      const first = yield* Effect.fork(g.generate(command("w.short")))
      const second = yield* Effect.fork(g.generate(command("w.short")))
      const third = yield* Effect.fork(Effect.zipRight(Effect.sleep(1), g.generate(command("w.short"))))
      yield* TestClock.adjust(2_000)
      yield* Effect.forEach([first, second, third], Fiber.join)
      const logs = yield* (yield* scripted).attempts
      // P holds one attempt at a time; the second waits for it (300 ms off its timeout); the third
      // would wait past 900 ms (deadline 1001 − minimumAttemptTime 100), so it takes the fallback
      assert.deepStrictEqual(
        logs.map((l) => [l.target, l.startedAt, l.timeoutMs]),
        [
          [P, 0, 1_000],
          [P, 300, 700],
          [F, 901, 100]
        ]
      )
      assert.deepStrictEqual(yield* permits, noPermits)
    }).pipe(
      Effect.provide(
        layer({
          scripts: {
            [P]: [ScriptedProvider.success({ after: 300 }), ScriptedProvider.success({ after: 650 })],
            [F]: [ScriptedProvider.success({ after: 50 })]
          },
          concurrency: { permits: 10, targets: { [P]: 1 } }
        })
      )
    )
  )
})

describe("every failure path leaves no reservation and no permit behind", () => {
  const cases: ReadonlyArray<{
    readonly name: string
    readonly tag: GatewayError["_tag"]
    readonly cmd: ReturnType<typeof command>
    readonly scripts: ScriptedProvider.Scripts
    readonly budgets?: Budgets.Options
  }> = [
    {
      name: "refusal",
      tag: "Refusal",
      cmd: command("w.short"),
      scripts: { [P]: [ScriptedProvider.refusal({ after: 50 })] }
    },
    {
      name: "invalid request from the provider",
      tag: "InvalidRequest",
      cmd: command("w.short"),
      scripts: { [P]: [ScriptedProvider.invalidRequest({ after: 50 })] }
    },
    {
      name: "input over the command's limit",
      tag: "InvalidRequest",
      cmd: command("w.short", { maxInputTokens: 3 }),
      scripts: {}
    },
    {
      name: "all routes failed",
      tag: "ProviderUnavailable",
      cmd: command("w.short"),
      scripts: {
        [P]: [ScriptedProvider.unavailable({ after: 50 })],
        [F]: [ScriptedProvider.unavailable({ after: 50 })]
      }
    },
    {
      name: "deadline",
      tag: "DeadlineExceeded",
      cmd: command("w.short"),
      scripts: { [P]: [ScriptedProvider.hang], [F]: [ScriptedProvider.hang] }
    },
    {
      name: "budget exceeded at reservation",
      tag: "BudgetExceeded",
      cmd: command("w.short"),
      scripts: {},
      budgets: { tenants: { acme: { limit: 0.0001 } } }
    },
    {
      name: "no route fits maxCost",
      tag: "NoEligibleRoute",
      cmd: command("w.short", { maxCost: 0.000001 }),
      scripts: {}
    }
  ]
  for (const c of cases) {
    it.effect(c.name, () =>
      Effect.gen(function* () {
        const { exit } = yield* runFor(c.cmd, 5_000)
        assert.strictEqual(errorOf(exit)?._tag, c.tag)
        assert.strictEqual((yield* balance()).reserved, 0)
        assert.deepStrictEqual(yield* permits, noPermits)
        const [record] = yield* records
        assert.deepStrictEqual([record?.outcome, record?.errorTag], ["failed", c.tag])
      }).pipe(
        Effect.provide(
          layer({
            scripts: c.scripts,
            ...(c.budgets ? { budgets: c.budgets } : {}),
            concurrency: { permits: 2, tenants: { acme: { reserved: 1 } } }
          })
        )
      )
    )
  }
})

describe("router: BUDGET_DOES_NOT_FIT", () => {
  it.effect("a target whose input plus the minimum useful output costs more than maxCost is excluded", () =>
    Effect.gen(function* () {
      const g = yield* gateway
      const base = command("w.short")
      const n = yield* inputTokens(base)
      // P: $0.02 per output token; F: $0.002. maxCost covers F's minimum but not P's.
      const maxCost = (n * 1_000 + 16 * 2_000 * 5) / 1e6
      const route = yield* g.router.resolve(command("w.short", { maxCost }))
      assert.deepStrictEqual(route.decision.eligible.map(String), [F])
      assert.deepStrictEqual(exclusionsOf(route.decision), [[P, "BUDGET_DOES_NOT_FIT"]])
      const { exit } = yield* runFor(command("w.short", { maxCost }), 1_000)
      assert.isTrue(Exit.isSuccess(exit))
      // the fallback's cap is what maxCost pays for after its input
      assert.deepStrictEqual(
        (yield* (yield* scripted).attempts).map((l) => [l.target, l.maxOutputTokens]),
        [[F, 80]]
      )
    }).pipe(
      Effect.provide(
        layer({
          definition: definitionWith([priced(target(P, "openai", { limits }), 20_000), targetF]),
          scripts: { [F]: [ScriptedProvider.success({ after: 10, usage: { inputTokens: 1, outputTokens: 1 } })] }
        })
      )
    )
  )
})

describe("exact money", () => {
  // Priced input and free output: the worst case is the input cost alone, and whether the float
  // product of a price and a token count rounds below it depends on the price; none may refuse.
  for (const inputPerMillion of [
    0.1, 0.13, 0.15, 0.2, 0.3, 0.6, 1.1, 0.075, 0.02, 0.07, 0.14, 0.43, 0.61, 0.86, 1.09
  ]) {
    it.effect(`priced input ($${inputPerMillion}/M) and free output fit a $5 budget`, () =>
      Effect.gen(function* () {
        const { exit } = yield* runFor(cmd, 1_000)
        assert.isTrue(Exit.isSuccess(exit), `refused: ${JSON.stringify(errorOf(exit))}`)
        const [record] = yield* records
        assert.isTrue(units(record!.evidence.cost.reserved) >= Math.ceil(nLong * inputPerMillion * 1e3 - 1e-6))
      }).pipe(
        Effect.provide(
          layer({
            definition: definitionWith([priced(targetP, 0, inputPerMillion), targetF]),
            budgets: { tenants: { acme: { limit: 5 } } },
            scripts: {
              [P]: [
                ScriptedProvider.success({ after: 10, value: "ok", usage: { inputTokens: nLong, outputTokens: 7 } })
              ]
            }
          })
        )
      )
    )
  }
})
