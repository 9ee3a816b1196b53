/**
 * Issue 27 item 4: with budgets and permits on one Redis client, a call's reservation and permit
 * are one script (all or nothing) and its settlement and release one script. Against a real
 * `redis-server`: a refused permit leaves the budget untouched and a refused budget takes no
 * permit; the call's deadline cuts a paused Redis and what Redis takes once it answers again is
 * given back; an emptied Redis is detected through the joint script; two gateway instances keep
 * the budget and the permit limit under concurrent callers; a call costs two scripts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway } from "@modelgate/core"
import type * as BudgetStore from "@modelgate/core/BudgetStore"
import { Usage } from "@modelgate/core/ModelResult"
import type * as PermitStore from "@modelgate/core/PermitStore"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Duration, Effect, Either, Layer, Schedule, Stream } from "effect"
import { jointCapabilityOf } from "../src/internal/redis/joint.js"
import {
  commandStats,
  oneTargetDefinition,
  ownRedis,
  redisPerFile,
  replyCommand,
  twoProcesses
} from "./redis-fixtures.js"

const { server, freshOptions } = redisPerFile()

const account = "acme/2026-12"

const requestAt = (now: number, id: string, amount: number, deadline = now + 5_000): BudgetStore.ReserveRequest => ({
  account,
  id,
  amount,
  limit: 100,
  now,
  expiresAt: now + 60_000,
  accountExpiresAt: Number.POSITIVE_INFINITY,
  deadline
})

const poolOptions: PermitStore.PoolOptions = { name: "tenants", shared: 2, reservedOf: () => 0, maxOf: () => 1 }

/** The joint admission of `stores` over its tenants pool (fails the test when there is none). */
const jointOf = (stores: Redis.Stores, pool: PermitStore.Pool) =>
  Effect.suspend(() => {
    const joint = jointCapabilityOf(stores.budget)?.jointWith(pool)
    return joint === undefined
      ? Effect.dieMessage("the Redis budget store has no joint admission")
      : Effect.succeed(joint)
  })

/** Scripts run by the server so far (`EVALSHA` and `EVAL`), read on a connection of its own. */
const scriptsRun = (url: string) => Effect.map(commandStats(url), (calls) => (calls.evalsha ?? 0) + (calls.eval ?? 0))

/** Retries `check` every 20 ms for up to 2 s. */
const eventually = <A>(check: Effect.Effect<A, string>) =>
  Effect.retry(check, { times: 100, schedule: Schedule.spaced("20 millis") })

describe("Redis joint admission (reserve + permit in one script)", () => {
  it.live("all or nothing: a refused permit leaves the budget untouched, a refused budget takes no permit", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const stores = yield* Redis.make(freshOptions())
        const pool = stores.permit.pool(poolOptions)
        const joint = yield* jointOf(stores, pool)
        const now = Date.now()
        const first = yield* joint(requestAt(now, "a", 60), "acme", now + 5_000)
        assert.strictEqual(first._tag, "Admitted")
        // acme is at its max: no permit, and nothing reserved
        const second = yield* joint(requestAt(now, "b", 30), "acme", now + 5_000)
        assert.strictEqual(second._tag, "NoPermit")
        const afterNoPermit = yield* stores.budget.balance(account, now)
        assert.deepStrictEqual(afterNoPermit, { committed: 0, reserved: 60, overspent: 0 })
        // beta has a permit free, but 60 + 50 exceeds the limit: refused, no permit taken
        const third = yield* joint(requestAt(now, "c", 50), "beta", now + 5_000)
        assert.deepStrictEqual(third, { _tag: "Rejected", committed: 0, reserved: 60 })
        const snapshot = yield* pool.snapshot
        assert.strictEqual(snapshot.inUse, 1)
        assert.isUndefined(snapshot.byKey.get("beta"))
        // The permit released, then the commit (in the same tick, as the engine's exit handler
        // does): one script; the pool and the account settle. (The first settle loads the script.)
        if (first._tag !== "Admitted") return
        first.permit.release()
        yield* stores.budget.commit({ account, id: "a", amount: 60, spend: 40, limit: 100 })
        const next = yield* joint(requestAt(now, "d", 20), "acme", now + 5_000)
        if (next._tag !== "Admitted") return assert.fail(`expected Admitted, got ${next._tag}`)
        const before = yield* scriptsRun(server().url)
        next.permit.release()
        const settled = yield* stores.budget.commit({ account, id: "d", amount: 20, spend: 15, limit: 100 })
        assert.deepStrictEqual(settled, { committed: 15, overspent: 0 })
        assert.strictEqual((yield* scriptsRun(server().url)) - before, 1)
        assert.strictEqual((yield* pool.snapshot).inUse, 0)
        assert.deepStrictEqual(yield* stores.budget.balance(account, now), { committed: 55, reserved: 0, overspent: 0 })
      })
    )
  )

  it.live("the deadline cuts a paused Redis; what it takes once it answers again is given back", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const redis = yield* ownRedis
        const stores = yield* Redis.make({ url: redis.url, keyPrefix: "joint-deadline:", commandTimeout: "1 second" })
        const pool = stores.permit.pool(poolOptions)
        const joint = yield* jointOf(stores, pool)
        // warm: the connection is ready and the scripts are known
        const warm = yield* joint(requestAt(Date.now(), "warm", 1), "acme", Date.now() + 5_000)
        if (warm._tag === "Admitted") warm.permit.release()
        yield* stores.budget.release({ account, id: "warm" })
        yield* Effect.sleep("50 millis")
        redis.pause()
        const left = 300
        const started = performance.now()
        const now = Date.now()
        const cut = yield* Effect.ensuring(
          Effect.either(joint(requestAt(now, "late", 10, now + left), "acme", now + left)),
          Effect.sync(() => redis.resume())
        )
        const overrun = performance.now() - started - left
        console.log(`joint admission, Redis paused, ${left} ms deadline: overrun ${overrun.toFixed(1)} ms`)
        assert.isTrue(Either.isLeft(cut) && cut.left._tag === "StoreError" && cut.left.detail === "timed out")
        assert.isBelow(overrun, 100)
        // Redis answers again: the reservation and the permit it then took are given back.
        yield* eventually(
          Effect.flatMap(Effect.orDie(stores.budget.balance(account, Date.now())), (b) =>
            b.reserved === 0 ? Effect.void : Effect.fail("still reserved")
          )
        )
        yield* eventually(
          Effect.flatMap(pool.snapshot, (s) => (s.inUse === 0 ? Effect.void : Effect.fail("still held")))
        )
      })
    )
  )

  it.live("an emptied Redis is detected through the joint script (no separate epoch read)", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const losses: Array<Redis.DataLoss> = []
        const options = freshOptions({ epochCheckInterval: Duration.hours(1), onDataLoss: (l) => losses.push(l) })
        const stores = yield* Redis.make(options)
        const pool = stores.permit.pool(poolOptions)
        const joint = yield* jointOf(stores, pool)
        const now = Date.now()
        const first = yield* joint(requestAt(now, "a", 60), "acme", now + 5_000)
        if (first._tag === "Admitted") first.permit.release()
        yield* stores.budget.commit({ account, id: "a", amount: 60, spend: 25, limit: 100 })
        yield* Effect.promise(() => stores.connection.flushall())
        const before = yield* scriptsRun(server().url)
        const again = yield* joint(requestAt(now, "b", 10), "acme", now + 5_000)
        assert.strictEqual(again._tag, "Admitted")
        // one script: the joint admission itself noticed the missing epoch
        assert.strictEqual((yield* scriptsRun(server().url)) - before, 1)
        assert.isTrue(stores.dataLost())
        assert.deepStrictEqual(losses, [{ budgets: [{ account, committedUnits: 25 }] }])
        // acknowledged: a new epoch, claims resume
        yield* stores.acknowledgeDataLoss
        assert.isFalse(stores.dataLost())
      })
    )
  )
})

// ---------------------------------------------------------------------------------------------
// Through gateways
// ---------------------------------------------------------------------------------------------

const { definition } = oneTargetDefinition("bench", {}, { timeout: 8_000, maxOutputTokens: 1_000 })
const command = replyCommand

const usage = new Usage({ inputTokens: 42, outputTokens: 12 })
const response: ProviderAdapter.ProviderResponse = {
  text: "It ships today.",
  toolCalls: [],
  finishReason: "stop",
  refusal: false,
  usage,
  modelVersion: "small-1",
  requestId: "req_1",
  httpStatus: 200
}

/** Calls in flight across every gateway of a test, and the most seen at once. */
interface Flight {
  now: number
  most: number
}

const adapterOf = (flight: Flight, latencyMs: number): Omit<ProviderAdapter.ProviderAdapter, "provider"> => ({
  generate: () =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        flight.now++
        flight.most = Math.max(flight.most, flight.now)
      }),
      () => Effect.as(Effect.sleep(Duration.millis(latencyMs)), response),
      () =>
        Effect.sync(() => {
          flight.now--
        })
    ),
  stream: () =>
    Stream.make<Array<ProviderAdapter.ProviderStreamEvent>>({
      _tag: "Finish",
      finishReason: "stop",
      refusal: false,
      usage,
      modelVersion: "small-1"
    })
})

/** A gateway (one process) over its own Redis client: budgets and permits on Redis. */
const gatewayOn = (options: Redis.Options, flight: Flight, limit: number, latencyMs: number) =>
  ModelGateway.layer(definition).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        Budgets.layer({ tenants: { acme: { limit, period: "monthly" } } }),
        Concurrency.layer({ permits: 2 }),
        Health.layerOff,
        CallRecorder.layerMemory,
        ProviderAdapter.layer("bench", Effect.succeed(adapterOf(flight, latencyMs)))
      ).pipe(Layer.provideMerge(Redis.layer(options)))
    )
  )

const balanceOfAcme = Effect.flatMap(Budgets.Budgets, (b) => b.balance(command.tenant))
const permitSnapshot = Effect.flatMap(Concurrency.Concurrency, (c) => c.snapshot)

describe("Redis joint admission through gateways", () => {
  it.live("a call is two scripts: the joint admission, then settle and release", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const flight: Flight = { now: 0, most: 0 }
        const context = yield* Layer.build(gatewayOn(freshOptions(), flight, 10, 0))
        const generate = Effect.provide(ModelGateway.generate(command), context)
        // warm-up: the scripts are known to the server
        yield* generate
        yield* generate
        yield* Effect.sleep("20 millis")
        const before = yield* scriptsRun(server().url)
        for (let i = 0; i < 5; i++) yield* generate
        yield* Effect.sleep("20 millis")
        assert.strictEqual((yield* scriptsRun(server().url)) - before, 10)
        const balance = yield* Effect.provide(balanceOfAcme, context)
        assert.strictEqual(balance.reserved, 0)
        assert.closeTo(balance.committed, 7 * (42 * 0.4 + 12 * 1.6) * 1e-6, 1e-9)
        const permits = yield* Effect.provide(permitSnapshot, context)
        assert.strictEqual(permits.inUse, 0)
      })
    )
  )

  it.live("two gateway instances: the budget and the permit limit hold under concurrent callers", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const options = freshOptions()
        const flight: Flight = { now: 0, most: 0 }
        // A reservation is ~$0.0016 (1,000 output tokens at $1.6/M plus the input): 0.01 fits a few
        // at once, so callers waiting for a permit are refused once the waiting ones hold the rest.
        const limit = 0.01
        const [one, two] = yield* twoProcesses(Layer.build(gatewayOn(options, flight, limit, 15)))
        const calls = (context: typeof one) =>
          Effect.forEach(
            Array.from({ length: 20 }, (_, i) => i),
            () => Effect.either(Effect.provide(ModelGateway.generate(command), context)),
            { concurrency: "unbounded" }
          )
        const [a, b] = yield* Effect.all([calls(one), calls(two)], { concurrency: 2 })
        const outcomes = [...a, ...b]
        const served = outcomes.filter(Either.isRight)
        const refused = outcomes.filter(Either.isLeft)
        console.log(`two gateways, 40 callers, 2 permits: ${served.length} served, ${refused.length} refused`)
        assert.isAtLeast(served.length, 1)
        for (const r of refused) assert.strictEqual(r.left._tag, "BudgetExceeded")
        // never more than the shared limit of 2 calls in flight across both processes
        assert.isAtMost(flight.most, 2)
        // everything settled: nothing reserved, the spend is what the served calls cost, within the limit
        yield* eventually(
          Effect.flatMap(Effect.orDie(Effect.provide(balanceOfAcme, one)), (balance) =>
            balance.reserved === 0 ? Effect.succeed(balance) : Effect.fail("still reserved")
          )
        )
        const balance = yield* Effect.provide(balanceOfAcme, two)
        const spent = served.reduce((sum, r) => sum + r.right.evidence.cost.actual, 0)
        assert.closeTo(balance.committed, spent, 1e-9)
        assert.isAtMost(balance.committed, limit)
        yield* eventually(
          Effect.flatMap(Effect.provide(permitSnapshot, one), (s) =>
            s.inUse === 0 ? Effect.void : Effect.fail("still held")
          )
        )
      })
    )
  )
})
