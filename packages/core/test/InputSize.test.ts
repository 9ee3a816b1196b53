/**
 * Hostile input (issue 12, item 1): input size is capped before anything is counted, reserved or
 * sent, and large inputs are counted in slices that give the event loop turns.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Budgets,
  BudgetStore,
  CallRecorder,
  Concurrency,
  Health,
  ModelGateway,
  Router,
  TokenEstimator
} from "@modelgate/core"
import { ScriptedProvider } from "@modelgate/testing"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { command, definition, providers } from "./fixtures.js"

const message = (content: string) => command("ticket.reply", { messages: [{ _tag: "user", content }] })

describe("input size limit", () => {
  it.effect("an input over the limit is InvalidRequest naming the limit; nothing reserved, nothing sent", () =>
    Effect.gen(function* () {
      const store = yield* BudgetStore.makeMemory
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
        const exit = yield* Effect.exit(gateway.generate(message("a".repeat(Router.defaultMaxInputCharacters + 1))))
        const attempts = yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts)
        return { exit, attempts }
      }).pipe(Effect.provide(layer))
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      assert.strictEqual(error?._tag, "InvalidRequest")
      if (error?._tag === "InvalidRequest") {
        assert.strictEqual(error.reason, "input_too_large")
        assert.include(error.detail, `limit of ${Router.defaultMaxInputCharacters} characters`)
      }
      assert.strictEqual(reserves, 0)
      assert.strictEqual(attempts.length, 0)
    })
  )
})

describe("counting large inputs in slices", () => {
  it.effect(
    "the count matches the one-shot count up to one token per slice, with event-loop turns between slices",
    () =>
      Effect.gen(function* () {
        const words = Array.from({ length: 12_000 }, (_, i) => `word${i % 97} and more text ${i}`).join(" ")
        const input = { messages: [{ _tag: "user" as const, content: words }] }
        const once = TokenEstimator.estimateInput(input)
        // A ticker that runs whenever the event loop gets a turn (the counting itself is synchronous
        // JavaScript: without turns between slices the ticker would not run until the end).
        let ticks = 0
        let running = true
        const tick = () => {
          if (!running) return
          ticks++
          setImmediate(tick)
        }
        setImmediate(tick)
        const counted = yield* TokenEstimator.estimateInputYielding(input)
        const ticksWhileCounting = ticks
        running = false
        const slices = Math.ceil(words.length / TokenEstimator.sliceCharacters)
        assert.isAtLeast(counted, once)
        assert.isAtMost(counted, once + slices)
        assert.isAtLeast(ticksWhileCounting, slices - 1)
      })
  )
})
