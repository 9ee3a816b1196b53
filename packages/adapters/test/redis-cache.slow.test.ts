/**
 * The response cache on Redis, against a real `redis-server`: entries expire by Redis (`PX`), two
 * gateways share answers through it, a hit is one `GET` (one round trip) and nothing else, and a
 * Redis that is down fails open (a normal call, counted as `error`).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import { CallRecorder, Concurrency, Health, ModelGateway, Budgets, ResponseCache } from "@modelgate/core"
import { startRedis } from "@modelgate/testing/RedisServer"
import { ScriptedProvider } from "@modelgate/testing"
import { Duration, Effect, Layer } from "effect"
import { commandStats, oneTargetDefinition, redisPerFile, replyCommand } from "./redis-fixtures.js"

const { server, freshOptions } = redisPerFile()

const { ref, definition } = oneTargetDefinition(
  "openai",
  { tools: true, structuredOutput: { mode: "json_schema" } },
  { cache: { ttl: 600_000, scope: "tenant" } }
)
const command = replyCommand

/** A gateway over scripted providers whose response cache is on Redis (`options`). */
const gatewayOn = (options: Redis.Options) =>
  ModelGateway.layer(definition).pipe(
    Layer.provideMerge(
      ScriptedProvider.layer({
        providers: ["openai"],
        scripts: { [ref]: [ScriptedProvider.success({ after: 0, text: "It ships today." })] }
      })
    ),
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layerOff,
        Concurrency.layerOff,
        Health.layerOff,
        CallRecorder.layerMemory,
        Redis.layerResponseCache(options)
      )
    )
  )

const generate = ModelGateway.generate(command)
const providerCalls = Effect.map(
  Effect.flatMap(ScriptedProvider.ScriptedProvider, (p) => p.attempts),
  (a) => a.length
)

describe("ResponseCacheStore on Redis", () => {
  it.live("stores the entry encoded with its Schema, with a PX TTL, and reads it back", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const options = freshOptions()
        const stores = yield* Redis.make(options)
        const entry = { value: '{"content":"x"}', storedAt: 1_234 }
        yield* stores.responseCache.set("abc", entry, 60_000)
        assert.deepStrictEqual(yield* stores.responseCache.get("abc"), entry)
        assert.isUndefined(yield* stores.responseCache.get("missing"))
        const ttl = yield* Effect.promise(() => stores.connection.pttl(`${options.keyPrefix}cache:abc`))
        assert.isTrue(ttl > 59_000 && ttl <= 60_000, `PTTL ${ttl}`)
        // Redis expires it: 50 ms later it is gone.
        yield* stores.responseCache.set("short", entry, 50)
        yield* Effect.sleep(Duration.millis(120))
        assert.isUndefined(yield* stores.responseCache.get("short"))
      })
    )
  )

  it.live("two gateways share answers through Redis; a hit is one GET and no other command", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const first = yield* Effect.provide(Effect.zip(generate, providerCalls), gatewayOn(options))
      assert.strictEqual(first[0].evidence.cache?.lookup, "miss")
      assert.strictEqual(first[0].evidence.cache?.stored, true)
      assert.strictEqual(first[1], 1)
      // Another gateway (another process): its first call is served from Redis.
      yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(gatewayOn(options))
          const before = yield* commandStats(server().url)
          const hit = yield* Effect.provide(generate, context)
          const after = yield* commandStats(server().url)
          assert.strictEqual(hit.evidence.cache?.hit, true)
          assert.strictEqual(hit.evidence.cache?.callId, first[0].evidence.callId)
          assert.strictEqual(hit.content.text, "It ships today.")
          assert.strictEqual(yield* Effect.provide(providerCalls, context), 0)
          const delta = Object.fromEntries(
            Object.keys(after)
              .filter((k) => k !== "info" && (after[k] ?? 0) !== (before[k] ?? 0))
              .map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)])
          )
          assert.deepStrictEqual(delta, { get: 1 })
        })
      )
    })
  )

  it.live("fails open when Redis is down: a normal call, counted as an error, no failure", () =>
    Effect.gen(function* () {
      const own = yield* Effect.promise(() => startRedis())
      const options = {
        ...freshOptions({ commandTimeout: Duration.millis(200), connectTimeout: Duration.millis(200) }),
        url: own.url
      }
      yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(gatewayOn(options))
          own.kill()
          const started = Date.now()
          const result = yield* Effect.provide(generate, context)
          assert.isBelow(Date.now() - started, 1_000)
          assert.deepStrictEqual(result.evidence.cache?.lookup, "error")
          assert.strictEqual(result.evidence.cache?.stored, false)
          assert.strictEqual(result.content.text, "It ships today.")
          assert.strictEqual(yield* Effect.provide(providerCalls, context), 1)
          const stats = yield* Effect.provide(
            Effect.flatMap(ResponseCache.ResponseCache, (c) => c.stats),
            context
          )
          // the failed read and the failed write
          assert.strictEqual(stats.errors, 2)
        })
      )
      yield* Effect.promise(() => own.stop())
    })
  )
})
