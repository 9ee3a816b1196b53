/**
 * Hostile input (issue 12, item 1): input size is capped before anything is counted, reserved or
 * sent, and large inputs are counted in slices that give the event loop turns (under the live
 * clock). Under `TestClock` the slices yield through Effect's scheduler only, so a test that moves
 * virtual time sees the count finished first, whatever the input size (issue 23, item 8).
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Budgets,
  BudgetStore,
  CallRecorder,
  Concurrency,
  type GatewayConfig,
  Health,
  ModelGateway,
  TokenEstimator
} from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Clock, Effect, Exit, Fiber, Layer, Option, TestClock } from "effect"
import { command, budgetedGateway, definition, providers, refs, target, workflow, definitionOf } from "./fixtures.js"
import { defaultMaxInputCharacters } from "../src/internal/router/engine.js"
import { sliceCharacters } from "../src/internal/tokenLimits.js"
import { makeMemory as makeMemoryBudgetStore } from "../src/internal/budgetMemoryStore.js"

const message = (content: string) => command("ticket.reply", { messages: [{ _tag: "user", content }] })

describe("input size limit", () => {
  it.effect("an input over the limit is InvalidRequest naming the limit; nothing reserved, nothing sent", () =>
    Effect.gen(function* () {
      const store = yield* makeMemoryBudgetStore
      let reserves = 0
      const counting: BudgetStore.Service = {
        ...store,
        reserve: (r) => {
          reserves++
          return store.reserve(r)
        }
      }
      const layer = ModelGateway.layer(definition).pipe(
        Layer.provideMerge(ScriptedProvider.layer({ providers, scripts: {} })),
        Layer.provideMerge(
          Layer.mergeAll(
            Budgets.layer({ tenants: { acme: { limit: 10 } } }).pipe(
              Layer.provide(Layer.succeed(BudgetStore.BudgetStore, counting))
            ),
            Concurrency.layerOff,
            Health.layerOff,
            CallRecorder.layerMemory
          )
        )
      )
      const { exit, attempts } = yield* Effect.gen(function* () {
        const gateway = yield* ModelGateway.ModelGateway
        const exit = yield* Effect.exit(gateway.generate(message("a".repeat(defaultMaxInputCharacters + 1))))
        const attempts = yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)
        return { exit, attempts }
      }).pipe(Effect.provide(layer))
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      assert.strictEqual(error?._tag, "InvalidRequest")
      if (error?._tag === "InvalidRequest") {
        assert.strictEqual(error.reason, "input_too_large")
        assert.include(error.detail, `limit of ${defaultMaxInputCharacters} characters`)
      }
      assert.strictEqual(reserves, 0)
      assert.strictEqual(attempts.length, 0)
    })
  )
})

/**
 * Counts `input` in slices while a ticker runs whenever the event loop gets a turn (the counting
 * itself is synchronous JavaScript: without turns between slices the ticker would not run until the
 * end); the count and how many turns the ticker got meanwhile.
 */
const countingTicks = (input: TokenEstimator.Input) =>
  Effect.suspend(() => {
    let ticks = 0
    let running = true
    const tick = () => {
      if (!running) return
      ticks++
      setImmediate(tick)
    }
    setImmediate(tick)
    return Effect.map(TokenEstimator.estimateInputYielding(input), (counted) => {
      running = false
      return [counted, ticks] as const
    })
  })

describe("counting large inputs in slices", () => {
  // Live clock: the turns between slices are real event-loop turns (timers and I/O run).
  it.live(
    "the count matches the one-shot count up to one token per slice, with an event-loop turn every turnMilliseconds",
    () =>
      Effect.gen(function* () {
        const words = Array.from({ length: 12_000 }, (_, i) => `word${i % 97} and more text ${i}`).join(" ")
        const input = { messages: [{ _tag: "user" as const, content: words }] }
        const once = TokenEstimator.estimateInput(input)
        const started = performance.now()
        const [counted, ticksWhileCounting] = yield* countingTicks(input)
        const elapsedMs = performance.now() - started
        const slices = Math.ceil(words.length / sliceCharacters)
        assert.isAtLeast(counted, once)
        assert.isAtMost(counted, once + slices)
        // Turns come by time, not by slice: one whenever turnMilliseconds of counting went by, so at
        // least one per 100 ms (the documented bound) of the count's real time, and at least one.
        assert.isAtLeast(ticksWhileCounting, Math.max(1, Math.floor(elapsedMs / 100)))
      })
  )
})

describe("counting large inputs under TestClock", () => {
  it.effect("the same slices and count as under the live clock, with no timer or I/O turn in between", () =>
    Effect.gen(function* () {
      const words = Array.from({ length: 12_000 }, (_, i) => `word${i % 97} and more text ${i}`).join(" ")
      const input = { messages: [{ _tag: "user" as const, content: words }] }
      const [counted, ticksWhileCounting] = yield* countingTicks(input)
      const live = yield* Effect.provide(TokenEstimator.estimateInputYielding(input), Layer.setClock(Clock.make()))
      assert.strictEqual(counted, live)
      assert.isAbove(words.length, 4 * sliceCharacters)
      // Yields through Effect's scheduler only: nothing waiting for a timer (TestClock.adjust) runs.
      assert.strictEqual(ticksWhileCounting, 0)
    })
  )
})

/** Targets with room for 1 MB of input; `ticket.reply` times out after 1 s. */
const roomy: GatewayConfig.Definition = definitionOf({
  targets: [
    target(refs.primary, "openai", { contextWindow: 4_000_000 }),
    target(refs.fallback, "anthropic", { contextWindow: 4_000_000 })
  ],
  workflows: [workflow({ name: "ticket.reply", timeout: 1_000 })]
})

/** The gateway over scripted providers with a limited budget for `acme` (so every input is counted). */
const countedLayer = (scripts: ScriptedProvider.Scripts) => budgetedGateway(scripts, roomy, 1_000)

describe("large inputs under TestClock", () => {
  // ~1 MB of prose-like text (64 slices), just under the default input limit.
  const megabyte = Array.from({ length: 40_000 }, (_, i) => `word${i % 89} text ${i % 7}`)
    .join(" ")
    .slice(0, defaultMaxInputCharacters - 64)

  it.effect("a 1 MB input: one TestClock adjustment past the deadline finds the count done, every run", () =>
    Effect.gen(function* () {
      const outcomes: Array<string> = []
      // Several runs in one test: the same virtual instants and the same count each time.
      for (let run = 0; run < 3; run++) {
        const result = yield* Effect.gen(function* () {
          const gateway = yield* ModelGateway.ModelGateway
          const fiber = yield* Effect.fork(
            Effect.exit(gateway.generate(message(megabyte)).pipe(Effect.map((r) => r.evidence)))
          )
          // Past the workflow's 1 s timeout in one step: a count still waiting for real event-loop
          // turns here would leave the attempt unscheduled and the call DeadlineExceeded.
          yield* TestClock.adjust(5_000)
          const exit = yield* Fiber.join(fiber)
          const records = yield* Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)
          return { exit, records: records.length }
        }).pipe(
          Effect.provide(countedLayer({ [refs.primary]: [ScriptedProvider.success({ after: 200, text: "ok" })] }))
        )
        assert.isTrue(Exit.isSuccess(result.exit), Exit.isFailure(result.exit) ? Cause.pretty(result.exit.cause) : "")
        if (Exit.isSuccess(result.exit)) {
          const e = result.exit.value
          assert.strictEqual(result.records, 1)
          assert.strictEqual<string | undefined>(e.target, refs.primary)
          assert.strictEqual(e.totalLatencyMs, 200)
          assert.deepStrictEqual(
            e.attempts.map((a) => [a.target, a.outcome, a.startOffsetMs, a.latencyMs]),
            [[refs.primary, "success", 0, 200]]
          )
          outcomes.push(`${e.cost.reserved}`)
        }
      }
      // The reservation is computed from the count: the same count every run.
      assert.strictEqual(new Set(outcomes).size, 1)
    })
  )
})
