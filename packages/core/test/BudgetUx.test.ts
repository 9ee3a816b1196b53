/**
 * Budget UX and budget-aware selection (issue 23 item 6, issue 25 classes 1 and 4): the default
 * output cap of a reservation, refusals that say how to fix them, an undeclared tenant's own
 * reason, the budget's exclusions on the caller's error, "pick what fits" before availability
 * fallback (and the degraded answer when nothing fits), and model versions within one ref in the
 * budget re-plan. Virtual time throughout; providers are scripted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Budgets, BudgetStore, CallRecorder, Concurrency, GatewayConfig, Health, ModelGateway } from "@modelgate/core"
import type { GatewayError } from "@modelgate/core/Errors"
import type { ModelResult } from "@modelgate/core/ModelResult"
import { Capabilities, ModelTarget, Pricing } from "@modelgate/core/ModelTarget"
import * as Cost from "@modelgate/core/Pricing"
import * as Workflow from "@modelgate/core/Workflow"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { keyOn } from "./lifecycleFixtures.js"
import { command, refs, target, workflow } from "./fixtures.js"
import { driven, generateExit } from "./virtualTime.js"
import { makeMemory as makeMemoryBudgetStore } from "../src/internal/budgetMemoryStore.js"
import { affordableOutput } from "../src/internal/affordable.js"
import { merge as mergeCatalogue } from "../src/internal/catalogueMerge.js"

const P = refs.primary
const F = refs.fallback
const limits = { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }

/** `t` at `inputPerMillion` / `outputPerMillion` dollars. */
const priced = (t: ModelTarget, inputPerMillion: number, outputPerMillion: number, model?: string) =>
  new ModelTarget({
    ...t,
    ...(model === undefined ? {} : { model }),
    pricing: new Pricing({ inputPerMillion, outputPerMillion, currency: "USD", pricingVersion: "prices-test-1" })
  })

/**
 * A budget store answering through Effects only, as a remote one does: the engine takes its Effect
 * path (no synchronous reserve), where the memory store takes the fast path.
 */
const remoteStore = Layer.effect(
  BudgetStore.BudgetStore,
  Effect.map(
    makeMemoryBudgetStore,
    (inner): BudgetStore.Service => ({
      reserve: inner.reserve,
      commit: inner.commit,
      release: inner.release,
      balance: inner.balance
    })
  )
)

/** The gateway over scripted providers, budgets over a `store` (in memory by default), records in memory. */
const layerOf = (
  definition: GatewayConfig.Definition,
  budgets: Budgets.Options,
  scripts: ScriptedProvider.Scripts = {},
  store: "memory" | "remote" = "memory"
) =>
  ModelGateway.layer(definition).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers: ["openai", "anthropic"], scripts })),
    Layer.provideMerge(
      Layer.mergeAll(
        store === "memory" ? Budgets.layerMemory(budgets) : Budgets.layer(budgets).pipe(Layer.provide(remoteStore)),
        Concurrency.layerOff,
        Health.layerOff,
        CallRecorder.layerMemory
      )
    )
  )

/** Each case over the in-memory store (fast path) and over a store with I/O (Effect path). */
const stores = ["memory", "remote"] as const

/** Runs `generate` to its end under the TestClock: its exit. */
const runCall = (cmd: ReturnType<typeof command>) => driven(generateExit(cmd), 10_000)

const errorOf = (exit: Exit.Exit<ModelResult, GatewayError>): GatewayError | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

const noBudgetBalance = Effect.flatMap(Budgets.Budgets, (b) => b.balance(command("x").tenant))

describe("model versions within a ref (issue 25 class 1)", () => {
  const oldP = priced(target(P, "openai", { limits }), 0.4, 1.6)
  /** The primary's new model version, a hundred times the price. */
  const newP = priced(oldP, 40, 160, "small-2026-12")
  const id = "new-version:small-2026-12"
  const versioned = (primary: ModelTarget, allowFallback: boolean): GatewayConfig.Definition => ({
    config: GatewayConfig.GatewayConfig.make({
      targets: [primary, priced(target(F, "anthropic", { limits }), 0.4, 1.6)],
      workflows: [
        workflow({
          name: "w.single",
          route: [P],
          maxOutputTokens: 1_000,
          onNewVersion: "canary",
          newVersionCanary: { share: 0.5 }
        }),
        workflow({
          name: "w.pinned",
          route: [P, F],
          allowFallback,
          maxOutputTokens: 1_000,
          onNewVersion: "canary",
          newVersionCanary: { share: 0.5 }
        })
      ]
    }),
    schemas: {}
  })

  for (const [allowFallback, store] of stores.flatMap((s) => [true, false].map((a) => [a, s] as const))) {
    it.effect(
      `a canary of a new version the budget cannot afford: the running version serves (allowFallback: ${allowFallback}, ${store} store)`,
      () =>
        Effect.gen(function* () {
          const gateway = yield* ModelGateway.ModelGateway
          yield* gateway.reload(versioned(newP, allowFallback))
          const key = keyOn({ id, share: 0.5 }, "candidate")
          for (const name of ["w.single", "w.pinned"]) {
            const exit = yield* runCall(command(name, { sessionKey: key }))
            assert.isTrue(Exit.isSuccess(exit), `${name}: ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""}`)
            if (!Exit.isSuccess(exit)) return
            const e = exit.value.evidence
            // The old version of the same ref served; the new one is excluded by the budget.
            assert.deepStrictEqual([e.target, e.model, e.canary?.side], [P, "small", "candidate"])
            assert.deepStrictEqual(
              e.excluded.filter((x) => x.reason === "BUDGET_DOES_NOT_FIT").map((x) => String(x.target)),
              [P]
            )
            assert.match(
              e.excluded.find((x) => x.reason === "BUDGET_DOES_NOT_FIT")?.detail ?? "",
              /model small-2026-12/
            )
          }
          const balance = yield* noBudgetBalance
          assert.strictEqual(balance.reserved, 0)
        }).pipe(
          Effect.provide(layerOf(versioned(oldP, allowFallback), { tenants: { acme: { limit: 0.01 } } }, {}, store))
        )
    )
  }
})

/** $0.001 per input token, $0.002 per output token: every cost is a whole number of store units. */
const wholeUnits = (t: ModelTarget) => priced(t, 1_000, 2_000)
const single: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [wholeUnits(target(P, "openai", { limits })), wholeUnits(target(F, "anthropic", { limits }))],
    workflows: [
      workflow({ name: "w.reply", route: [P], timeout: 10_000, maxOutputTokens: 1_000 }),
      workflow({
        name: "w.degraded",
        route: [P, F],
        timeout: 10_000,
        maxOutputTokens: 1_000,
        degrade: { _tag: "static", value: "try again later" }
      })
    ]
  }),
  schemas: {}
}
/** The router's input tokens of `cmd` (always counted by `resolve`), times the target's safety factor. */
const inputOf = (cmd: ReturnType<typeof command>) =>
  Effect.gen(function* () {
    const route = yield* (yield* ModelGateway.ModelGateway).router.resolve(cmd)
    return Math.ceil(route.inputTokens! * route.targets[0]!.tokenizerSafetyFactor)
  })

describe("refusals that say how to fix them (issue 23 item 6)", () => {
  it.effect("a reservation that does not fit names tenant, limit, requested amount and the output cap that fits", () =>
    Effect.gen(function* () {
      const cmd = command("w.reply")
      const n = yield* inputOf(cmd)
      // The limit pays for the input and 250 output tokens; the workflow asks for 1,000.
      const limit = (n * 1_000 + 250 * 2_000) / 1e6
      const error = errorOf(yield* runCall(cmd).pipe(Effect.provide(layerOf(single, { tenants: { acme: { limit } } }))))
      assert.strictEqual(error?._tag, "BudgetExceeded")
      if (error?._tag !== "BudgetExceeded") return
      const requested = (n * 1_000 + 1_000 * 2_000) / 1e6
      assert.deepStrictEqual(
        [error.tenant, error.limit, error.committed, error.reserved, error.requested, error.reason],
        [cmd.tenant, limit, 0, 0, requested, "limit"]
      )
      assert.include(error.fix ?? "", "lower maxOutputTokens to 250 ")
      assert.include(
        error.fix ?? "",
        `raise the tenant's limit by at least ${Number((requested - limit).toPrecision(6))}`
      )
      assert.include(error.message, `budget of acme exceeded: limit ${limit}`)
      assert.include(error.message, `requested ${requested}`)
      assert.include(error.message, "lower maxOutputTokens to 250 ")
      // Never the prompt's content.
      for (const m of cmd.messages) {
        if (typeof m.content === "string") assert.notInclude(error.message, m.content)
      }
      // Following the fix makes the call fit.
      const fixed = yield* runCall(command("w.reply", { maxOutputTokens: 250 })).pipe(
        Effect.provide(layerOf(single, { tenants: { acme: { limit } } }))
      )
      assert.isTrue(Exit.isSuccess(fixed))
    }).pipe(Effect.provide(layerOf(single, { tenants: { acme: { limit: 1_000 } } })))
  )

  for (const store of stores) {
    it.effect(`an undeclared tenant is refused with its own reason, not a limit of 0 (${store} store)`, () =>
      Effect.gen(function* () {
        const budgets = yield* Budgets.Budgets
        const direct = yield* Effect.flip(budgets.reserve(command("x", { tenant: "globex" }).tenant, 0.01))
        const exit = yield* runCall(command("w.reply", { tenant: "globex" }))
        const error = errorOf(exit)
        for (const e of [direct, error]) {
          assert.strictEqual(e?._tag, "BudgetExceeded")
          if (e?._tag !== "BudgetExceeded") return
          assert.deepStrictEqual([e.tenant, e.reason], ["globex", "undeclared_tenant"])
          assert.include(e.message, "tenant globex is not declared")
          assert.include(e.message, "declare globex under budgets.tenants")
        }
        assert.deepStrictEqual((yield* (yield* ScriptedProvider.ScriptedProvider).attempts).length, 0)
      }).pipe(Effect.provide(layerOf(single, { tenants: { acme: { limit: 1 } } }, {}, store)))
    )
  }
})

describe("pick what fits before availability fallback (issue 25 class 4)", () => {
  /** P costs ten times F. */
  const pickDefinition = (allowFallback: boolean): GatewayConfig.Definition => ({
    config: GatewayConfig.GatewayConfig.make({
      targets: [
        priced(target(P, "openai", { limits }), 10_000, 20_000),
        wholeUnits(target(F, "anthropic", { limits }))
      ],
      workflows: [
        workflow({ name: "w.pinned", route: [P, F], allowFallback, timeout: 10_000, maxOutputTokens: 100 }),
        workflow({
          name: "w.degraded",
          route: [P, F],
          allowFallback,
          timeout: 10_000,
          maxOutputTokens: 100,
          degrade: { _tag: "static", value: "try again later" }
        })
      ]
    }),
    schemas: {}
  })
  const balance = Effect.flatMap(Budgets.Budgets, (b) => b.balance(command("x").tenant))

  for (const store of stores) {
    it.effect(
      `allowFallback: false and a budget the primary cannot afford: the cheaper eligible target serves (${store} store)`,
      () =>
        Effect.gen(function* () {
          const cmd = command("w.pinned")
          const n = yield* inputOf(cmd)
          // F's worst case fits; P's is ten times as much.
          const limit = (n * 1_000 + 100 * 2_000) / 1e6
          const exit = yield* runCall(cmd).pipe(
            Effect.provide(layerOf(pickDefinition(false), { tenants: { acme: { limit } } }, {}, store))
          )
          assert.isTrue(Exit.isSuccess(exit), JSON.stringify(errorOf(exit)))
          if (!Exit.isSuccess(exit)) return
          const e = exit.value.evidence
          assert.deepStrictEqual([e.target, e.eligible, e.selectionReason], [F, [F], "ONLY_ELIGIBLE"])
          assert.deepStrictEqual(
            e.excluded.map((x) => [x.target, x.reason]),
            [[P, "BUDGET_DOES_NOT_FIT"]]
          )
          assert.deepStrictEqual(
            e.attempts.map((a) => String(a.target)),
            [F]
          )
          assert.strictEqual(e.cost.reserved, limit)
        }).pipe(Effect.provide(layerOf(pickDefinition(false), { tenants: { acme: { limit: 1_000 } } })))
    )
  }

  for (const [allowFallback, store] of stores.flatMap((s) => [true, false].map((a) => [a, s] as const))) {
    it.effect(
      `nothing fits and the workflow degrades: the degraded answer serves (allowFallback: ${allowFallback}, ${store} store)`,
      () =>
        Effect.gen(function* () {
          const exit = yield* runCall(command("w.degraded"))
          assert.isTrue(Exit.isSuccess(exit), JSON.stringify(errorOf(exit)))
          if (!Exit.isSuccess(exit)) return
          const e = exit.value.evidence
          assert.deepStrictEqual(
            [exit.value.content.text, e.degraded, e.target, e.attempts.length, e.cost.reserved],
            ["try again later", true, undefined, 0, 0]
          )
          assert.deepStrictEqual(
            e.excluded.map((x) => [x.target, x.reason]),
            [
              [P, "BUDGET_DOES_NOT_FIT"],
              [F, "BUDGET_DOES_NOT_FIT"]
            ]
          )
          const b = yield* balance
          assert.deepStrictEqual([b.committed, b.reserved], [0, 0])
          // Without a degraded mode the same call is refused.
          const refused = errorOf(yield* runCall(command("w.pinned")))
          assert.strictEqual(refused?._tag, "BudgetExceeded")
        }).pipe(
          Effect.provide(layerOf(pickDefinition(allowFallback), { tenants: { acme: { limit: 0.01 } } }, {}, store))
        )
    )
  }
})

describe("the output cap a reservation pays for (issue 23 item 6)", () => {
  /** `t` with an output limit of `maxOutputTokens` (the catalogue's gpt-4.1-mini has 32,768). */
  const withOutputLimit = (t: ModelTarget, maxOutputTokens: number) =>
    new ModelTarget({ ...t, capabilities: new Capabilities({ ...t.capabilities, maxOutputTokens }) })
  const uncapped: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({
      targets: [
        withOutputLimit(wholeUnits(target(P, "openai", { limits })), 32_768),
        withOutputLimit(wholeUnits(target(F, "anthropic", { limits })), 1_000)
      ],
      workflows: [
        workflow({ name: "w.large", route: [P], timeout: 10_000 }),
        workflow({ name: "w.small", route: [F], timeout: 10_000 })
      ]
    }),
    schemas: {}
  }

  it.effect("a workflow without maxOutputTokens reserves for and asks for the default cap, not the model's limit", () =>
    Effect.gen(function* () {
      const cmd = command("w.large")
      const n = yield* inputOf(cmd)
      const exit = yield* runCall(cmd)
      assert.isTrue(Exit.isSuccess(exit), JSON.stringify(errorOf(exit)))
      if (!Exit.isSuccess(exit)) return
      // Worst case: the input and 4,096 output tokens (not 32,768).
      assert.strictEqual(exit.value.evidence.cost.reserved, (n * 1_000 + 4_096 * 2_000) / 1e6)
      // A target whose own limit is lower: its limit.
      const small = yield* runCall(command("w.small"))
      assert.isTrue(Exit.isSuccess(small))
      if (Exit.isSuccess(small)) {
        assert.strictEqual(small.value.evidence.cost.reserved, (n * 1_000 + 1_000 * 2_000) / 1e6)
      }
      // A command's own cap is what it asks for, up to the target's limit.
      const asked = yield* runCall(command("w.large", { maxOutputTokens: 8_000 }))
      assert.isTrue(Exit.isSuccess(asked))
      // The adapter is asked for exactly what was reserved.
      const logs = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      assert.deepStrictEqual(
        logs.map((l) => [String(l.target), l.maxOutputTokens]),
        [
          [P, 4_096],
          [F, 1_000],
          [P, 8_000]
        ]
      )
      assert.strictEqual(Workflow.defaultMaxOutputTokens, 4_096)
    }).pipe(Effect.provide(layerOf(uncapped, { tenants: { acme: { limit: 100 } } })))
  )
})

describe("the budget's exclusions on the caller's error (issue 23 item 6)", () => {
  /** F, the fallback, costs ten times P. */
  const expensiveFallback: GatewayConfig.Definition = {
    config: GatewayConfig.GatewayConfig.make({
      targets: [
        wholeUnits(target(P, "openai", { limits })),
        priced(target(F, "anthropic", { limits }), 10_000, 20_000)
      ],
      workflows: [workflow({ name: "w.fallback", route: [P, F], timeout: 10_000, maxOutputTokens: 100 })]
    }),
    schemas: {}
  }

  it.effect("the budget removed the fallback and the primary failed: the error says so", () =>
    Effect.gen(function* () {
      const cmd = command("w.fallback")
      const n = yield* inputOf(cmd)
      // P's worst case fits, F's does not.
      const limit = (n * 1_000 + 100 * 2_000) / 1e6
      const exit = yield* runCall(cmd).pipe(
        Effect.provide(
          layerOf(
            expensiveFallback,
            { tenants: { acme: { limit } } },
            { [P]: [ScriptedProvider.unavailable({ after: 10, status: 503 })] }
          )
        )
      )
      const error = errorOf(exit)
      assert.strictEqual(error?._tag, "ProviderUnavailable")
      if (error?._tag !== "ProviderUnavailable") return
      assert.deepStrictEqual(
        error.budgetExcluded?.map((x) => [String(x.target), x.reason]),
        [[F, "BUDGET_DOES_NOT_FIT"]]
      )
      assert.include(error.message, `the budget excluded ${F} (BUDGET_DOES_NOT_FIT)`)
      // Without a budget in the way the error carries nothing of the kind.
      const plain = errorOf(
        yield* runCall(cmd).pipe(
          Effect.provide(
            layerOf(
              expensiveFallback,
              { tenants: { acme: { limit: 100 } } },
              {
                [P]: [ScriptedProvider.unavailable({ after: 10, status: 503 })],
                [F]: [ScriptedProvider.unavailable({ after: 10, status: 503 })]
              }
            )
          )
        )
      )
      assert.deepStrictEqual(
        [plain?._tag, plain !== undefined && "budgetExcluded" in plain],
        ["ProviderUnavailable", false]
      )
    }).pipe(Effect.provide(layerOf(expensiveFallback, { tenants: { acme: { limit: 100 } } })))
  )
})

describe("docs/budgets.md: the worked example", () => {
  it("a 100-token ticket on the catalogue's gpt-4.1-mini: the figures the page gives", () => {
    const mini = Schema.decodeUnknownSync(ModelTarget)(
      mergeCatalogue("openai/gpt-4.1-mini", {
        ref: "model://openai/gpt-4.1-mini",
        regions: ["eu"],
        dataClasses: ["internal"]
      })
    )
    assert.strictEqual(mini.capabilities.maxOutputTokens, 32_768)
    // No cap anywhere: the default 4,096 output tokens, not the model's 32,768.
    assert.strictEqual(Cost.outputCapAt(undefined, undefined, mini), 4_096)
    assert.strictEqual(Cost.costAt(mini, 100, 4_096), 0.0065936)
    assert.strictEqual(Cost.costAt(mini, 100, 32_768), 0.0524688)
    assert.strictEqual(Cost.costAt(mini, 100, 20), 0.000072)
    // The fix a $0.0002 budget's refusal names, and what it then reserves.
    assert.strictEqual(affordableOutput(0.0002, 100, mini), 100)
    assert.strictEqual(Cost.costAt(mini, 100, 100), 0.0002)
  })
})
