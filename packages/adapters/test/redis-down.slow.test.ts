/**
 * The Redis stores when Redis dies (SIGKILL): every budget and ledger operation fails with
 * `StoreError` naming the store and the operation, within the command timeout (no hang), and never
 * echoes the URL; the store health metrics show it; breakers fall back to this process's state.
 * A Redis that stops answering (SIGSTOP, connection kept) times out by the client's own timer.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import type { BreakerState } from "@modelgate/core/BreakerStore"
import { StoreError } from "@modelgate/core/Errors"
import * as StoreHealth from "@modelgate/core/StoreHealth"
import { IdempotencyKey, ToolRecord } from "@modelgate/core/ToolLedgerStore"
import { Duration, Effect, Exit, Metric } from "effect"
import { type RedisServer, startRedis } from "./redisServer.js"

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
}, 20_000)
afterAll(async () => {
  await server.stop()
})

const commandTimeout = 300

const open: BreakerState = { status: "open", since: 0, probes: 0, probeSuccesses: 0, lastProbeAt: 0 }

/** The operation's error and how long it took (real time). */
const timed = <A>(effect: Effect.Effect<A, StoreError>) =>
  Effect.gen(function* () {
    const started = Date.now()
    const exit = yield* Effect.exit(effect)
    const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
    return { error, elapsed: Date.now() - started }
  })

describe("Redis stores with Redis killed", () => {
  it.live("budget and ledger operations fail with StoreError within the command timeout; breakers go local", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* Redis.make({
          url: server.url,
          keyPrefix: "down:",
          commandTimeout: Duration.millis(commandTimeout),
          connectTimeout: Duration.millis(commandTimeout)
        })
        const reserve = {
          account: "acme/total",
          id: "r1",
          amount: 5,
          limit: 10,
          now: 0,
          expiresAt: 60_000,
          accountExpiresAt: Number.POSITIVE_INFINITY
        }
        // alive: the operations answer; a breaker is opened through Redis
        assert.strictEqual((yield* stores.budget.reserve(reserve))._tag, "Reserved")
        yield* stores.breaker.modify("route", () => [undefined, open])
        server.kill()
        const operations: ReadonlyArray<readonly [string, string, Effect.Effect<unknown, StoreError>]> = [
          ["budget", "reserve", stores.budget.reserve({ ...reserve, id: "r2" })],
          [
            "budget",
            "commit",
            stores.budget.commit({ account: "acme/total", id: "r1", amount: 5, spend: 5, limit: 10 })
          ],
          ["budget", "release", stores.budget.release({ account: "acme/total", id: "r1" })],
          ["budget", "balance", stores.budget.balance("acme/total", 0)],
          [
            "ledger",
            "claim",
            stores.ledger.claim(
              new ToolRecord({
                key: IdempotencyKey.make("k"),
                runId: "run",
                step: 1,
                index: 0,
                tool: "t",
                status: "started",
                startedAt: 0
              })
            )
          ],
          ["ledger", "complete", stores.ledger.complete(IdempotencyKey.make("k"), { ok: true }, 1)],
          ["ledger", "release", stores.ledger.release(IdempotencyKey.make("k"))],
          ["ledger", "get", stores.ledger.get(IdempotencyKey.make("k"))],
          ["ledger", "list", stores.ledger.list("run")]
        ]
        for (const [store, operation, effect] of operations) {
          // twice: right after the kill and once the client knows the connection is gone
          for (let i = 0; i < 2; i++) {
            const { error, elapsed } = yield* timed(effect)
            assert.instanceOf(error, StoreError, `${store} ${operation}`)
            assert.deepStrictEqual([error?.store, error?.operation], [store, operation])
            assert.notInclude(error?.message ?? "", String(server.port))
            assert.isBelow(elapsed, commandTimeout + 200, `${store} ${operation} took ${elapsed} ms`)
          }
        }
        // the store's health is visible: errors counted by store and operation, the gauge at 0
        const errors = yield* Metric.value(
          Metric.tagged(Metric.tagged(StoreHealth.metrics.errors, "store", "budget"), "operation", "reserve")
        )
        assert.isAtLeast(errors.count, 2)
        const healthy = yield* Metric.value(Metric.tagged(StoreHealth.metrics.healthy, "store", "ledger"))
        assert.strictEqual(healthy.value, 0)
        // breakers fall back to this process's state, each operation within the command timeout:
        // the last state seen, changed locally from then on
        const local = <A>(effect: Effect.Effect<A, StoreError>) =>
          Effect.gen(function* () {
            const started = Date.now()
            const a = yield* effect
            assert.isBelow(Date.now() - started, commandTimeout + 200)
            return a
          })
        assert.deepStrictEqual(yield* local(stores.breaker.get("route")), open)
        const before = yield* local(stores.breaker.modify("route", (current) => [current, undefined]))
        assert.deepStrictEqual(before, open)
        assert.isUndefined(yield* local(stores.breaker.get("route")))
        yield* local(stores.breaker.modify("other", () => [undefined, open]))
        assert.deepStrictEqual(yield* local(stores.breaker.get("other")), open)
      })
    )
  )

  it.live("a Redis that stops answering (SIGSTOP): operations time out within the command timeout, then recover", () =>
    Effect.scoped(
      Effect.gen(function* () {
        // a server of its own (the other tests kill theirs)
        const paused = yield* Effect.acquireRelease(
          Effect.promise(() => startRedis()),
          (s) => Effect.promise(() => s.stop())
        )
        const stores = yield* Redis.make({
          url: paused.url,
          keyPrefix: "paused:",
          commandTimeout: Duration.millis(commandTimeout),
          connectTimeout: Duration.millis(commandTimeout)
        })
        assert.deepStrictEqual((yield* stores.budget.balance("acme/total", 0)).committed, 0)
        paused.pause()
        try {
          // the connection stays open; only our own timer can end the wait
          const { error, elapsed } = yield* timed(stores.budget.balance("acme/total", 0))
          assert.deepStrictEqual([error?.store, error?.operation, error?.detail], ["budget", "balance", "timed out"])
          assert.isAtLeast(elapsed, commandTimeout - 5)
          assert.isBelow(elapsed, commandTimeout + 200)
        } finally {
          paused.resume()
        }
        // answering again: the same client works without a restart
        assert.deepStrictEqual((yield* stores.budget.balance("acme/total", 0)).committed, 0)
      })
    )
  )

  it.live("a client that never reaches Redis fails within the command timeout", () =>
    Effect.scoped(
      Effect.gen(function* () {
        server.kill()
        const stores = yield* Redis.make({
          // the port of the killed server: nothing listens there any more
          url: server.url,
          commandTimeout: Duration.millis(commandTimeout),
          connectTimeout: Duration.millis(commandTimeout)
        })
        const { error, elapsed } = yield* timed(stores.budget.balance("acme/total", 0))
        assert.deepStrictEqual([error?.store, error?.operation], ["budget", "balance"])
        assert.isBelow(elapsed, commandTimeout + 200)
      })
    )
  )
})
