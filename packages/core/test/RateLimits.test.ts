/**
 * Provider rate limits in the engine (virtual time): a target without headroom in its minute is
 * skipped with `RATE_LIMITED_LOCAL` (the call goes to the next target), tokens are taken on the
 * worst case and corrected to the usage, a provider key shares one limit across targets, and a
 * store that cannot answer fails the call closed.
 */
import { assert, describe, it } from "@effect/vitest"
import { type GatewayError, StoreError } from "@modelgate/core/Errors"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import type { ModelResult } from "@modelgate/core/ModelResult"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { ModelTarget } from "@modelgate/core/ModelTarget"
import type * as RateLimits from "@modelgate/core/RateLimits"
import * as RateLimitStore from "@modelgate/core/RateLimitStore"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import { Effect, Exit, Fiber, Layer, TestClock } from "effect"
import { command, servicesOff, target, workflow } from "./fixtures.js"

const P = "model://openai/small@eu"
const Q = "model://openai/mini@eu"
const F = "model://anthropic/haiku@eu"
const limits = { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }
const limited = (ref: string, rateLimit: RateLimits.RateLimit) =>
  new ModelTarget({ ...target(ref, "openai", { limits }), rateLimit })

const answer = ScriptedProvider.success({ after: 10, text: "ok", usage: { inputTokens: 20, outputTokens: 10 } })
const many = Array.from({ length: 20 }, () => answer)

const layer = (targets: readonly [ModelTarget, ...Array<ModelTarget>], store?: RateLimitStore.Service) =>
  ModelGateway.layer({
    config: GatewayConfig.GatewayConfig.make({
      targets: [...targets, target(F, "anthropic", { limits })],
      workflows: [
        workflow({
          name: "w.reply",
          route: [targets[0].ref, ...targets.slice(1).map((t) => t.ref), F],
          timeout: 10_000,
          maxOutputTokens: 100
        })
      ]
    }),
    schemas: {}
  }).pipe(
    Layer.provideMerge(
      ScriptedProvider.layer({
        providers: ["openai", "anthropic"],
        scripts: { [P]: many, [Q]: many, [F]: many }
      })
    ),
    Layer.provideMerge(
      Layer.merge(
        servicesOff,
        store === undefined ? RateLimitStore.layerMemory : Layer.succeed(RateLimitStore.RateLimitStore, store)
      )
    )
  )

const call = Effect.gen(function* () {
  const g = yield* ModelGateway.ModelGateway
  const fiber = yield* Effect.fork(Effect.exit(g.generate(command("w.reply"))))
  yield* TestClock.adjust(100)
  return yield* Fiber.join(fiber)
})
const answeredBy = (exit: Exit.Exit<ModelResult, GatewayError>) =>
  Exit.isSuccess(exit) ? exit.value.evidence.target : undefined
const errorOf = (exit: Exit.Exit<ModelResult, GatewayError>): GatewayError | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

describe("provider rate limits", () => {
  it.effect("come from the JSON config (a catalogue target with a provider key); bad limits are refused", () =>
    Effect.gen(function* () {
      const target = (rateLimit: unknown) => ({
        ref: "model://openai/gpt-4.1-mini@eu",
        catalogue: "openai/gpt-4.1-mini",
        regions: ["eu"],
        dataClasses: ["internal"],
        rateLimit
      })
      const decoded = yield* GatewayConfig.decode({
        targets: [target({ key: "acct-1", requestsPerMinute: 500, tokensPerMinute: 200_000 })],
        workflows: []
      })
      assert.deepStrictEqual(decoded.targets[0]?.rateLimit, {
        key: "acct-1",
        requestsPerMinute: 500,
        tokensPerMinute: 200_000
      })
      const bad = yield* Effect.exit(
        GatewayConfig.decode({ targets: [target({ requestsPerMinute: 0 })], workflows: [] })
      )
      assert.isTrue(Exit.isFailure(bad))
    })
  )

  it.effect(
    "requests per minute: a target without headroom is skipped (RATE_LIMITED_LOCAL) until its minute ends",
    () =>
      Effect.gen(function* () {
        assert.strictEqual(answeredBy(yield* call), P)
        assert.strictEqual(answeredBy(yield* call), P)
        const third = yield* call
        assert.strictEqual(answeredBy(third), F)
        if (Exit.isSuccess(third)) {
          const skipped = third.value.evidence.excluded.find((e) => e.target === P)
          assert.strictEqual(skipped?.reason, "RATE_LIMITED_LOCAL")
          assert.include(skipped?.detail, "1970-01-01T00:01:00.000Z")
        }
        // the next UTC minute
        yield* TestClock.setTime(60_000)
        assert.strictEqual(answeredBy(yield* call), P)
      }).pipe(Effect.provide(layer([limited(P, { requestsPerMinute: 2 })])))
  )

  it.effect("tokens per minute: taken on the worst case, corrected to the usage once answered", () =>
    Effect.gen(function* () {
      // worst case per call: its input estimate + 100 output tokens; actual usage: 30 tokens
      const store = yield* RateLimitStore.RateLimitStore
      assert.strictEqual(answeredBy(yield* call), P)
      const after = yield* store.take({
        key: P,
        tokens: 0,
        requestsPerMinute: undefined,
        tokensPerMinute: 30,
        now: 150
      })
      // 30 tokens counted (the correction gave the rest back): nothing more fits in 30
      assert.strictEqual(after._tag, "Taken")
      const full = yield* store.take({ key: P, tokens: 1, requestsPerMinute: undefined, tokensPerMinute: 30, now: 150 })
      assert.strictEqual(full._tag, "Limited")
      // 200 fits the worst case of one more call after the correction, not of two uncorrected ones
      assert.strictEqual(answeredBy(yield* call), P)
      assert.strictEqual(answeredBy(yield* call), P)
    }).pipe(Effect.provide(layer([limited(P, { tokensPerMinute: 200 })])))
  )

  it.effect("a provider key shares one limit across its targets", () =>
    Effect.gen(function* () {
      assert.strictEqual(answeredBy(yield* call), P)
      // P and Q share `acct-1`: its one request per minute is spent
      const second = yield* call
      assert.strictEqual(answeredBy(second), F)
      if (Exit.isSuccess(second)) {
        const reasons = second.value.evidence.excluded
          .filter((e) => e.reason === "RATE_LIMITED_LOCAL")
          .map((e) => e.target)
        assert.deepStrictEqual(reasons, [P, Q])
      }
    }).pipe(
      Effect.provide(
        layer([
          limited(P, { key: "acct-1", requestsPerMinute: 1 }),
          limited(Q, { key: "acct-1", requestsPerMinute: 1 })
        ])
      )
    )
  )

  it.effect("a store that cannot answer fails the call closed with StoreError (ratelimit); nothing is sent", () =>
    Effect.gen(function* () {
      const error = errorOf(yield* call)
      assert.strictEqual(error?._tag, "StoreError")
      if (error?._tag === "StoreError") assert.strictEqual(error.store, "ratelimit")
      const attempts = yield* Effect.flatMap(ScriptedProvider.ScriptedProvider, (s) => s.attempts)
      assert.strictEqual(attempts.length, 0)
    }).pipe(
      Effect.provide(
        layer([limited(P, { requestsPerMinute: 5 })], {
          take: () => Effect.fail(new StoreError({ store: "ratelimit", operation: "take", detail: "unavailable" })),
          adjust: () => {}
        })
      )
    )
  )
})
