/**
 * The Redis stores when Redis dies (SIGKILL): every budget and ledger operation fails with
 * `StoreError` naming the store and the operation, within the command timeout (no hang), and never
 * echoes the URL; the store health metrics show it; breakers fall back to this process's state.
 * A Redis that stops answering (SIGSTOP, connection kept) times out by the client's own timer.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import * as Budgets from "@modelgate/core/Budgets"
import type { BreakerState } from "@modelgate/core/BreakerStore"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import { TenantId } from "@modelgate/core/ModelCommand"
import { StoreError } from "@modelgate/core/Errors"
import * as StoreHealth from "@modelgate/core/StoreHealth"
import { IdempotencyKey, ToolRecord } from "@modelgate/core/ToolLedgerStore"
import { Duration, Effect, Exit, Metric, Schedule } from "effect"
import { ownRedis, redisPerFile } from "./redis-fixtures.js"

const { server } = redisPerFile()

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
          url: server().url,
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
        server().kill()
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
            assert.notInclude(error?.message ?? "", String(server().port))
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
        const paused = yield* ownRedis
        const stores = yield* Redis.make({
          url: paused.url,
          keyPrefix: "paused:",
          commandTimeout: Duration.millis(commandTimeout),
          connectTimeout: Duration.millis(commandTimeout)
        })
        assert.deepStrictEqual((yield* stores.budget.balance("acme/total", 0)).committed, 0)
        const budgets = yield* Budgets.make({ tenants: { acme: { limit: 1, period: "total" } } }).pipe(
          Effect.provideService(BudgetStore.BudgetStore, stores.budget)
        )
        // a reservation held by a call with 150 ms left, settled once Redis stopped answering
        const held = yield* budgets
          .reserve(TenantId.make("acme"), 0.25, Date.now() + 150)
          .pipe(Effect.catchTag("BudgetExceeded", Effect.die))
        paused.pause()
        try {
          // the commit waits at most the call's remaining time: pending, retried in the background
          const settleStarted = Date.now()
          const settlement = yield* held.settle(0.2)
          assert.isBelow(Date.now() - settleStarted, commandTimeout - 50)
          assert.deepStrictEqual(settlement, { committed: 0, overspent: 0, pending: true })
          // the connection stays open; only our own timer can end the wait
          const { error, elapsed } = yield* timed(stores.budget.balance("acme/total", 0))
          assert.deepStrictEqual([error?.store, error?.operation, error?.detail], ["budget", "balance", "timed out"])
          assert.isAtLeast(elapsed, commandTimeout - 5)
          assert.isBelow(elapsed, commandTimeout + 200)
          // a reserve whose caller has 100 ms left fails by then (not after the command timeout)
          const now = Date.now()
          const reserve = {
            account: "raw/total",
            id: "late",
            amount: 5,
            limit: 10,
            now,
            expiresAt: now + 60_000,
            accountExpiresAt: Number.POSITIVE_INFINITY,
            deadline: now + 100
          }
          const bounded = yield* timed(stores.budget.reserve(reserve))
          assert.deepStrictEqual(
            [bounded.error?.store, bounded.error?.operation, bounded.error?.detail],
            ["budget", "reserve", "timed out"]
          )
          assert.isAtLeast(bounded.elapsed, 95)
          assert.isBelow(bounded.elapsed, commandTimeout - 50)
          // and one whose caller's time is already gone is not sent at all
          const gone = yield* timed(stores.budget.reserve({ ...reserve, id: "gone", deadline: now }))
          assert.deepStrictEqual([gone.error?.operation, gone.error?.detail], ["reserve", "timed out"])
          assert.isBelow(gone.elapsed, 50)
          // through Budgets: a reserve cut by its deadline is released without waiting for the store
          const cut = yield* timed(
            budgets
              .reserve(TenantId.make("acme"), 0.5, Date.now() + 100)
              .pipe(Effect.catchTag("BudgetExceeded", Effect.die))
          )
          assert.deepStrictEqual([cut.error?._tag, cut.error?.detail], ["StoreError", "timed out"])
          assert.isBelow(cut.elapsed, commandTimeout - 50)
        } finally {
          paused.resume()
        }
        // answering again: the same client works without a restart. The store-level reserve whose
        // answer was lost was applied once the server woke ("gone" never left the process): the
        // store leaves its release to the caller, which Budgets does —
        const after = yield* Effect.retry(
          Effect.flatMap(stores.budget.balance("raw/total", Date.now()), (b) =>
            b.reserved === 5 ? Effect.succeed(b) : Effect.fail("not applied yet")
          ),
          { times: 20, schedule: Schedule.spaced("10 millis") }
        )
        assert.deepStrictEqual([after.committed, after.reserved], [0, 5])
        // the reservation Budgets gave up on was released once the store answered again
        const balance = yield* Effect.retry(
          Effect.flatMap(budgets.balance(TenantId.make("acme")), (b) =>
            b.reserved === 0 ? Effect.succeed(b) : Effect.fail("still reserved")
          ),
          { times: 20, schedule: Schedule.spaced("10 millis") }
        )
        assert.deepStrictEqual([balance.committed, balance.reserved], [0.2, 0])
      })
    )
  )

  it.live("a client that never reaches Redis fails within the command timeout", () =>
    Effect.scoped(
      Effect.gen(function* () {
        server().kill()
        const stores = yield* Redis.make({
          // the port of the killed server: nothing listens there any more
          url: server().url,
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
