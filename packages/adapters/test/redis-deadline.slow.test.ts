/**
 * Issue 26, item 4: every store operation is bounded by the call's deadline. With the file's own
 * `redis-server` paused (SIGSTOP: connections kept, no answers), a permit ask and a rate-limit take
 * whose caller has 300 ms left end by then (not after the 1 s command timeout), and what Redis
 * grants or counts once it answers again is given back: the permit returns to the pool, the
 * request returns to the window. The overrun is asserted under 100 ms (a loaded 2-core machine);
 * it measures a few ms to a few tens of ms, against ~700 ms before the fix.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import type * as PermitStore from "@modelgate/core/PermitStore"
import { startRedis } from "@modelgate/testing/RedisServer"
import { Duration, Effect, Either, Schedule } from "effect"

const commandTimeout = 1000
const left = 300

const server = Effect.acquireRelease(
  Effect.promise(() => startRedis()),
  (s) => Effect.promise(() => s.stop())
)

const storesOn = (url: string, keyPrefix: string) =>
  Redis.make({ url, keyPrefix, commandTimeout: Duration.millis(commandTimeout) })

const pool: PermitStore.PoolOptions = { name: "tenants", shared: 1, reservedOf: () => 0, maxOf: () => 1 }

/** Milliseconds `effect` took, with its outcome. */
const timed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function* () {
    const started = performance.now()
    const outcome = yield* Effect.either(effect)
    return { outcome, elapsed: performance.now() - started }
  })

describe("Redis stores under the call's deadline, Redis paused", () => {
  it.live("a permit ask ends at the deadline; a permit granted after the caller left is given back", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const redis = yield* server
        const stores = yield* storesOn(redis.url, "permit-deadline:")
        const permits = stores.permit.pool(pool)
        // warm: the connection is ready and the scripts are known
        const warm = yield* permits.acquire("acme", Date.now() + 5000)
        warm?.release()
        yield* Effect.sleep("50 millis")
        redis.pause()
        const cut = yield* Effect.ensuring(
          timed(permits.acquire("acme", Date.now() + left)),
          Effect.sync(() => redis.resume())
        )
        const overrun = cut.elapsed - left
        console.log(`permit ask, Redis paused, ${left} ms deadline: overrun ${overrun.toFixed(1)} ms`)
        assert.isTrue(Either.isRight(cut.outcome) && cut.outcome.right === undefined)
        assert.isBelow(overrun, 100)
        // Redis answers again: the ask it now grants is released; the only permit is free.
        const again = yield* Effect.retry(
          Effect.flatMap(permits.acquire("acme", Date.now() + 100), (permit) =>
            permit === undefined ? Effect.fail("not given back yet") : Effect.succeed(permit)
          ),
          { times: 20, schedule: Schedule.spaced("50 millis") }
        )
        again.release()
        const snapshot = yield* Effect.retry(
          Effect.flatMap(permits.snapshot, (s) => (s.inUse === 0 ? Effect.succeed(s) : Effect.fail("held"))),
          { times: 20, schedule: Schedule.spaced("20 millis") }
        )
        assert.strictEqual(snapshot.inUse, 0)
      })
    )
  )

  it.live("a rate-limit take ends at the deadline; a request counted after the caller left is given back", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const redis = yield* server
        const stores = yield* storesOn(redis.url, "ratelimit-deadline:")
        // One window for every take (the store picks it from the caller's `now`).
        const now = 1_800_000_000_000
        const request = {
          key: "openai",
          tokens: 10,
          requestsPerMinute: 2,
          tokensPerMinute: undefined,
          now,
          deadline: now + left
        }
        // warm: one of the two requests of the minute
        assert.strictEqual((yield* stores.rateLimit.take(request))._tag, "Taken")
        redis.pause()
        const cut = yield* Effect.ensuring(
          timed(stores.rateLimit.take(request)),
          Effect.sync(() => redis.resume())
        )
        const overrun = cut.elapsed - left
        console.log(`rate-limit take, Redis paused, ${left} ms deadline: overrun ${overrun.toFixed(1)} ms`)
        assert.deepStrictEqual(Either.isLeft(cut.outcome) ? cut.outcome.left.detail : undefined, "timed out")
        assert.isBelow(overrun, 100)
        // The cut take landed once Redis woke and was given back: the minute's second request is free.
        yield* Effect.sleep("100 millis")
        const unbounded = { ...request, deadline: undefined }
        assert.strictEqual((yield* stores.rateLimit.take(unbounded))._tag, "Taken")
        assert.strictEqual((yield* stores.rateLimit.take(unbounded))._tag, "Limited")
      })
    )
  )
})
