/**
 * The engine v2 pipeline's own guarantees: stores are used once per call and fail closed, the
 * evidence is built once, and input tokens are counted only when a limit needs the count.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  BreakerStore,
  Budgets,
  BudgetStore,
  CallRecorder,
  Concurrency,
  Errors,
  type GatewayConfig,
  Health,
  ModelGateway,
  TokenEstimator
} from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Effect, Exit, Layer, Logger, LogLevel, Option } from "effect"
import {
  command,
  definition,
  providers,
  refs,
  target,
  targets,
  workflow,
  definitionOf,
  exclusionsOf
} from "./fixtures.js"
import { driven, generateExit } from "./virtualTime.js"
import { makeMemory as makeMemoryBudgetStore } from "../src/internal/budgetMemoryStore.js"
import { noopPermit } from "../src/internal/permitTypes.js"

const services = (parts: {
  readonly budgets?: Layer.Layer<Budgets.Budgets, Errors.GatewayConfigError>
  readonly concurrency?: Layer.Layer<Concurrency.Concurrency, Errors.GatewayConfigError>
  readonly health?: Layer.Layer<Health.Health, Errors.GatewayConfigError>
}) =>
  Layer.mergeAll(
    parts.budgets ?? Budgets.layerOff,
    parts.concurrency ?? Concurrency.layerOff,
    parts.health ?? Health.layerOff,
    CallRecorder.layerMemory
  )

const gatewayWith = (
  scripts: ScriptedProvider.Scripts,
  parts: Parameters<typeof services>[0] = {},
  def: GatewayConfig.Definition = definition
) =>
  ModelGateway.layer(def).pipe(
    Layer.provideMerge(ScriptedProvider.layer({ providers, scripts })),
    Layer.provideMerge(services(parts))
  )

/** Runs `generate` in a fiber and moves virtual time until it is done. */
const run = (cmd: ReturnType<typeof command>, ms = 5_000) => driven(generateExit(cmd), ms)

const errorOf = <A>(exit: Exit.Exit<A, Errors.GatewayError>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
const attempts = Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)

/** A memory BudgetStore that counts its operations and can be told to fail. */
const countingStore = (failReserve: boolean) =>
  Effect.map(makeMemoryBudgetStore, (memory) => {
    const ops = { reserve: 0, commit: 0, release: 0 }
    const failing = new Errors.StoreError({ store: "budget", operation: "reserve", detail: "connection refused" })
    const store: BudgetStore.Service = {
      ...memory,
      reserve: (r) => {
        ops.reserve++
        return failReserve ? Effect.fail(failing) : memory.reserve(r)
      },
      commit: (r) => {
        ops.commit++
        return memory.commit(r)
      },
      release: (r) => {
        ops.release++
        return memory.release(r)
      }
    }
    return { store, ops }
  })

const limitedBudgets = { tenants: { acme: { limit: 100, period: "monthly" as const } } }

describe("pipeline: one reserve and one settle per store, whatever the attempts", () => {
  it.effect("3 attempts (two 503s, then a fallback) make one reserve and one commit", () =>
    Effect.gen(function* () {
      const { store, ops } = yield* countingStore(false)
      const layer = gatewayWith(
        {
          [refs.primary]: [
            ScriptedProvider.unavailable({ after: 10 }),
            ScriptedProvider.unavailable({ after: 10 }),
            ScriptedProvider.unavailable({ after: 10 })
          ],
          [refs.fallback]: [ScriptedProvider.success({ after: 20, text: "ok" })]
        },
        { budgets: Budgets.layer(limitedBudgets).pipe(Layer.provide(Layer.succeed(BudgetStore.BudgetStore, store))) }
      )
      const exit = yield* run(command("ticket.reply")).pipe(Effect.provide(layer))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) assert.isTrue(exit.value.evidence.attempts.length >= 2)
      assert.deepStrictEqual(ops, { reserve: 1, commit: 1, release: 0 })
    })
  )

  it.effect("the envelope's evidence is the record's evidence: built once", () =>
    Effect.gen(function* () {
      const exit = yield* run(command("ticket.reply"))
      const [record] = yield* records
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) assert.strictEqual(record!.evidence, exit.value.evidence)
    }).pipe(Effect.provide(gatewayWith({ [refs.primary]: [ScriptedProvider.success({ after: 5, text: "hi" })] })))
  )
})

describe("pipeline: stores fail closed", () => {
  it.effect("a budget store that cannot reserve: StoreError naming the store, no provider call, one record", () =>
    Effect.gen(function* () {
      const { store } = yield* countingStore(true)
      const layer = gatewayWith(
        {},
        { budgets: Budgets.layer(limitedBudgets).pipe(Layer.provide(Layer.succeed(BudgetStore.BudgetStore, store))) }
      )
      const { exit, seen, recorded } = yield* Effect.gen(function* () {
        const exit = yield* run(command("ticket.reply"))
        return { exit, seen: yield* attempts, recorded: yield* records }
      }).pipe(Effect.provide(layer))
      const error = errorOf(exit)
      assert.strictEqual(error?._tag, "StoreError")
      if (error?._tag === "StoreError") {
        assert.strictEqual(error.store, "budget")
        assert.isDefined(error.callId)
      }
      assert.strictEqual(seen.length, 0)
      assert.strictEqual(recorded.length, 1)
      assert.strictEqual(recorded[0]!.errorTag, "StoreError")
      assert.strictEqual(recorded[0]!.errorReason, "budget")
    })
  )

  it.effect("a shared budget store that cannot reserve gives back the in-memory permit taken at once", () =>
    Effect.gen(function* () {
      const { store } = yield* countingStore(true)
      const layer = gatewayWith(
        {},
        {
          budgets: Budgets.layer(limitedBudgets).pipe(Layer.provide(Layer.succeed(BudgetStore.BudgetStore, store))),
          concurrency: Concurrency.layerMemory({ permits: 1 })
        }
      )
      const { first, second, inUse } = yield* Effect.gen(function* () {
        const first = yield* run(command("ticket.reply"))
        // With the only permit still held, this call would wait in the queue until its deadline.
        const second = yield* run(command("ticket.reply"))
        const inUse = (yield* Effect.flatMap(Concurrency.Concurrency, (c) => c.snapshot)).inUse
        return { first, second, inUse }
      }).pipe(Effect.provide(layer))
      assert.strictEqual(errorOf(first)?._tag, "StoreError")
      const error = errorOf(second)
      assert.strictEqual(error?._tag, "StoreError")
      if (error?._tag === "StoreError") assert.strictEqual(error.store, "budget")
      assert.strictEqual(inUse, 0)
    })
  )

  it.effect("a breaker store that cannot answer: StoreError naming the store, no provider call", () =>
    Effect.gen(function* () {
      const failing: BreakerStore.Service = {
        get: () => Effect.fail(new Errors.StoreError({ store: "breaker", operation: "get", detail: "timeout" })),
        modify: () => Effect.fail(new Errors.StoreError({ store: "breaker", operation: "modify", detail: "timeout" }))
      }
      const layer = gatewayWith(
        {},
        { health: Health.layer().pipe(Layer.provide(Layer.succeed(BreakerStore.BreakerStore, failing))) }
      )
      const { exit, seen } = yield* Effect.gen(function* () {
        const exit = yield* run(command("ticket.reply"))
        return { exit, seen: yield* attempts }
      }).pipe(Effect.provide(layer))
      const error = errorOf(exit)
      assert.strictEqual(error?._tag, "StoreError")
      if (error?._tag === "StoreError") assert.strictEqual(error.store, "breaker")
      assert.strictEqual(seen.length, 0)
    })
  )

  it.effect("a permit store that cannot answer: StoreError naming the store; the reservation is released", () =>
    Effect.gen(function* () {
      const { store, ops } = yield* countingStore(false)
      const failingPermits = Layer.succeed(
        Concurrency.Concurrency,
        Concurrency.Concurrency.of({
          acquire: () => Effect.fail(new Errors.StoreError({ store: "permit", operation: "acquire", detail: "down" })),
          acquireTarget: () => Effect.succeed(noopPermit),
          isCapped: () => false,
          snapshot: Effect.die("not used")
        })
      )
      const layer = gatewayWith(
        {},
        {
          budgets: Budgets.layer(limitedBudgets).pipe(Layer.provide(Layer.succeed(BudgetStore.BudgetStore, store))),
          concurrency: failingPermits
        }
      )
      const exit = yield* run(command("ticket.reply")).pipe(Effect.provide(layer))
      const error = errorOf(exit)
      assert.strictEqual(error?._tag, "StoreError")
      if (error?._tag === "StoreError") assert.strictEqual(error.store, "permit")
      // Settled with nothing spent: one reserve, then its release.
      assert.deepStrictEqual(ops, { reserve: 1, commit: 0, release: 1 })
      const balance = yield* Effect.flatMap(Budgets.Budgets, (b) => b.balance(command("ticket.reply").tenant)).pipe(
        Effect.provide(Budgets.layer(limitedBudgets).pipe(Layer.provide(Layer.succeed(BudgetStore.BudgetStore, store))))
      )
      assert.strictEqual(balance.reserved, 0)
      assert.strictEqual(balance.committed, 0)
    })
  )
})

describe("pipeline: input tokens are counted only when a limit needs the count", () => {
  const cmd = command("ticket.reply")
  const counted = TokenEstimator.estimateInput({ messages: cmd.messages })

  it.effect("nothing limited: no estimate in the decision or the cost", () =>
    Effect.gen(function* () {
      const exit = yield* run(cmd)
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        assert.isUndefined(exit.value.evidence.cost.estimated)
        assert.strictEqual(exit.value.evidence.cost.reserved, 0)
      }
    }).pipe(Effect.provide(gatewayWith({ [refs.primary]: [ScriptedProvider.success({ after: 5, text: "hi" })] })))
  )

  it.effect("a limited budget, a cost cap or an input limit: counted", () =>
    Effect.gen(function* () {
      const limited = yield* run(cmd).pipe(
        Effect.provide(
          gatewayWith(
            { [refs.primary]: [ScriptedProvider.success({ after: 5 })] },
            { budgets: Budgets.layerMemory(limitedBudgets) }
          )
        )
      )
      const capped = yield* run(command("ticket.reply", { maxCost: 1 })).pipe(
        Effect.provide(gatewayWith({ [refs.primary]: [ScriptedProvider.success({ after: 5 })] }))
      )
      const inputLimited = yield* run(command("ticket.reply", { maxInputTokens: 10_000 })).pipe(
        Effect.provide(gatewayWith({ [refs.primary]: [ScriptedProvider.success({ after: 5 })] }))
      )
      for (const exit of [limited, capped, inputLimited]) {
        assert.isTrue(Exit.isSuccess(exit))
        if (Exit.isSuccess(exit)) assert.isAbove(exit.value.evidence.cost.estimated ?? 0, 0)
      }
    })
  )

  it.effect("an input that may not fit a context window is counted (and excluded when it does not fit)", () =>
    Effect.gen(function* () {
      // A 20-token window: the length bound of the fixture command cannot prove it fits.
      const def: GatewayConfig.Definition = definitionOf({
        targets: [targets[0]!, target(refs.fallback, "anthropic", { contextWindow: 20 })],
        workflows: [workflow({ name: "ticket.reply" })]
      })
      const gateway = yield* ModelGateway.ModelGateway.pipe(Effect.provide(gatewayWith({}, {}, def)))
      const route = yield* gateway.router.resolve(cmd)
      assert.deepStrictEqual(exclusionsOf(route.decision), [[refs.fallback, "CONTEXT_TOO_SMALL"]])
    })
  )

  it.effect("an attempt cut by its timeout is still billed its input when the call was not counted", () =>
    Effect.gen(function* () {
      yield* run(cmd)
      // The primary hangs: its first attempt is cut at 400 ms (later ones depend on the jitter).
      const [record] = yield* records
      const [cut] = record?.evidence.attempts ?? []
      assert.strictEqual(cut!.outcome, "timeout")
      assert.strictEqual(cut!.usage?.inputTokens, counted)
      assert.isAbove(cut!.cost ?? 0, 0)
    }).pipe(Effect.provide(gatewayWith({ [refs.primary]: [ScriptedProvider.hang] })))
  )
})

/** A logger that keeps every message it is given, as text. */
const collectingLogger = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ message }) => {
    lines.push(String(message))
  })
  return { lines, logger }
}

describe("pipeline: failed attempts leave no unhandled fiber errors", () => {
  it.effect("a 503 and a fallback at Debug level log no 'Fiber terminated with an unhandled error'", () =>
    Effect.gen(function* () {
      const { lines, logger } = collectingLogger()
      const exit = yield* run(command("ticket.reply")).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
      assert.isTrue(Exit.isSuccess(exit))
      assert.deepStrictEqual(
        lines.filter((l) => l.includes("unhandled")),
        []
      )
    }).pipe(
      Effect.provide(
        gatewayWith({
          [refs.primary]: [ScriptedProvider.unavailable({ after: 10 }), ScriptedProvider.unavailable({ after: 10 })],
          [refs.fallback]: [ScriptedProvider.success({ after: 5, text: "ok" })]
        })
      )
    )
  )
})

describe("pipeline: the settlement is in the evidence", () => {
  it.effect("a commit the store counts as overspent (its reservation had expired) shows in evidence.cost", () =>
    Effect.gen(function* () {
      const memory = yield* makeMemoryBudgetStore
      // A store whose reservations have always expired by the time they are committed.
      const late: BudgetStore.Service = {
        ...memory,
        commit: (r) => Effect.succeed({ committed: 0, overspent: r.spend })
      }
      const layer = gatewayWith(
        { [refs.primary]: [ScriptedProvider.success({ after: 5, text: "hi" })] },
        { budgets: Budgets.layer(limitedBudgets).pipe(Layer.provide(Layer.succeed(BudgetStore.BudgetStore, late))) }
      )
      const { exit, recorded } = yield* Effect.gen(function* () {
        const exit = yield* run(command("ticket.reply"))
        return { exit, recorded: yield* records }
      }).pipe(Effect.provide(layer))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const cost = exit.value.evidence.cost
        assert.isAbove(cost.actual, 0)
        assert.closeTo(cost.overspent ?? 0, cost.actual, 1e-9)
        assert.deepStrictEqual(recorded[0]!.evidence.cost, cost)
      }
    })
  )

  it.effect("an ordinary settlement leaves no overspent field", () =>
    Effect.gen(function* () {
      const exit = yield* run(command("ticket.reply"))
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) assert.isUndefined(exit.value.evidence.cost.overspent)
    }).pipe(
      Effect.provide(
        gatewayWith(
          { [refs.primary]: [ScriptedProvider.success({ after: 5, text: "hi" })] },
          { budgets: Budgets.layerMemory(limitedBudgets) }
        )
      )
    )
  )
})

describe("pipeline: the recorder never kills a call", () => {
  it.effect("a recorder that dies or fails: the caller still gets the answer; the failure is logged", () =>
    Effect.gen(function* () {
      const { lines, logger } = collectingLogger()
      // A recorder can only fail by dying (its error channel is `never`) or by being interrupted.
      for (const broken of [Effect.die(new RangeError("Maximum call stack size exceeded")), Effect.interrupt]) {
        const recorder = Layer.succeed(
          CallRecorder.CallRecorder,
          CallRecorder.CallRecorder.of({ record: () => broken })
        )
        const layer = ModelGateway.layer(definition).pipe(
          Layer.provideMerge(
            ScriptedProvider.layer({
              providers,
              scripts: { [refs.primary]: [ScriptedProvider.success({ after: 5, text: "hi" })] }
            })
          ),
          Layer.provideMerge(Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, recorder))
        )
        const exit = yield* run(command("ticket.reply")).pipe(
          Effect.provide(layer),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger))
        )
        assert.isTrue(Exit.isSuccess(exit))
      }
      assert.strictEqual(lines.filter((l) => l.includes("the call recorder failed")).length, 2)
    })
  )
})

describe("router: a plain request reads its workflow's precomputed reasons", () => {
  it.effect("the same decisions as the full check, for every workflow of the fixtures", () =>
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      for (const name of gateway.router.workflows.keys()) {
        const wf = gateway.router.workflows.get(name)!.workflow
        const plain = command(name)
        // Same request, made non-plain by restating the workflow's own regions: the full check runs.
        const full = command(name, { regions: [...wf.regions] })
        const a = yield* Effect.either(gateway.router.resolve(plain))
        const b = yield* Effect.either(gateway.router.resolve(full))
        const summary = (r: typeof a) =>
          r._tag === "Right" ? { eligible: r.right.eligible, excluded: exclusionsOf(r.right) } : { error: r.left._tag }
        assert.deepStrictEqual(summary(a), summary(b), name)
      }
    }).pipe(Effect.provide(gatewayWith({})))
  )
})
