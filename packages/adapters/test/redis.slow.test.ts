/**
 * The Redis stores against a real `redis-server` (one per file): the memory stores' behaviour
 * through `Budgets`, `Health` and `ToolLedger`, shared by two services over two clients (two
 * gateway processes), and budget safety under 200 concurrent reserves.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import * as Budgets from "@modelgate/core/Budgets"
import type * as BudgetStore from "@modelgate/core/BudgetStore"
import * as Health from "@modelgate/core/Health"
import { TenantId } from "@modelgate/core/ModelCommand"
import { Capabilities, ModelTarget, Pricing, ProviderId, TargetRef } from "@modelgate/core/ModelTarget"
import * as ToolLedger from "@modelgate/core/ToolLedger"
import * as BudgetScenarios from "@modelgate/testing/BudgetScenarios"
import { ConfigProvider, Context, Duration, Effect, Exit, Layer, Ref, Schema, TestClock } from "effect"
import { Redis as IORedis } from "ioredis"
import { redisPerFile, twoProcesses } from "./redis-fixtures.js"

const { freshOptions } = redisPerFile()
/** Distinct target refs across tests. */
let seq = 0

const acme = TenantId.make("acme")
const units = (x: number) => Math.round(x * Budgets.unitsPerCurrency)

const failureTag = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : undefined

/** The service of `layer`, built in the test's scope (its Redis client lives as long as the test). */
const serviceOf = <I, S, E>(tag: Context.Tag<I, S>, layer: Layer.Layer<I, E>) =>
  Effect.map(Layer.build(layer), Context.get(tag))

/** Budgets over a Redis store with a client of its own (one gateway process). */
const budgetsOver = (options: Redis.Options, budget: Budgets.Options) =>
  serviceOf(Budgets.Budgets, Budgets.layer(budget).pipe(Layer.provide(Redis.layerBudgetStore(options))))

describe("Redis BudgetStore through Budgets", () => {
  it.scoped(
    "settle commits all of the spend, beyond the reservation too; what the limit has no room for is overspent",
    () =>
      Effect.gen(function* () {
        const b = yield* budgetsOver(freshOptions(), { tenants: { acme: { limit: 10, period: "total" } } })
        const r = yield* b.reserve(acme, 8)
        assert.strictEqual(failureTag(yield* Effect.exit(b.reserve(acme, 3))), "BudgetExceeded")
        // the provider reported more than was reserved: all of it is committed (it fits the limit)
        const settlement = yield* r.settle(9)
        assert.deepStrictEqual([units(settlement.committed), units(settlement.overspent)], [units(9), 0])
        const r2 = yield* b.reserve(acme, 0.5)
        yield* r2.settle(0.25)
        // no room left under the limit: 1 reserved, 2.5 spent, 1.5 overspent (and committed)
        const r3 = yield* b.reserve(acme, 0.75)
        const over = yield* r3.settle(2.25)
        assert.deepStrictEqual([units(over.committed), units(over.overspent)], [units(2.25), units(1.5)])
        const balance = yield* b.balance(acme)
        assert.deepStrictEqual(
          [units(balance.committed), units(balance.reserved), units(balance.overspent)],
          [units(11.5), 0, units(1.5)]
        )
        // over its limit, the tenant is refused
        assert.strictEqual(failureTag(yield* Effect.exit(b.reserve(acme, 0.01))), "BudgetExceeded")
      })
  )

  it.scoped("the reservation of a crashed holder expires after reservationTtl and frees its amount", () =>
    Effect.gen(function* () {
      const b = yield* budgetsOver(freshOptions(), {
        tenants: { acme: { limit: 10, period: "total" } },
        reservationTtl: "1 minute"
      })
      yield* b.reserve(acme, 8)
      assert.strictEqual(failureTag(yield* Effect.exit(b.reserve(acme, 8))), "BudgetExceeded")
      yield* TestClock.adjust("59999 millis")
      assert.strictEqual((yield* b.balance(acme)).reserved, 8)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual((yield* b.balance(acme)).reserved, 0)
      const again = yield* b.reserve(acme, 8)
      yield* again.settle(0)
    })
  )

  it.scoped("a reservation repeated after its first one expired is reserved again, once", () =>
    Effect.gen(function* () {
      const { budget } = yield* Redis.make(freshOptions())
      const request = (now: number): BudgetStore.ReserveRequest => ({
        account: "acme/total",
        id: "r-1",
        amount: 5,
        limit: 8,
        now,
        expiresAt: now + 1_000,
        accountExpiresAt: Number.POSITIVE_INFINITY
      })
      assert.strictEqual((yield* budget.reserve(request(0)))._tag, "Reserved")
      // repeated while held: not reserved twice
      assert.deepStrictEqual(yield* budget.reserve(request(500)), { _tag: "Reserved", committed: 0, reserved: 5 })
      assert.deepStrictEqual(yield* budget.balance("acme/total", 500), { committed: 0, reserved: 5, overspent: 0 })
      // repeated after it expired (purged in the same script): reserved again
      assert.deepStrictEqual(yield* budget.reserve(request(2_000)), { _tag: "Reserved", committed: 0, reserved: 5 })
      assert.deepStrictEqual(yield* budget.balance("acme/total", 2_000), { committed: 0, reserved: 5, overspent: 0 })
      assert.deepStrictEqual(yield* budget.release({ account: "acme/total", id: "r-1" }), undefined)
      assert.deepStrictEqual(yield* budget.balance("acme/total", 2_000), { committed: 0, reserved: 0, overspent: 0 })
    })
  )

  it.scoped("a late commit after its reservation expired is committed in full; what does not fit is overspent", () =>
    Effect.gen(function* () {
      const b = yield* budgetsOver(freshOptions(), BudgetScenarios.lateCommitOptions)
      const seen = yield* BudgetScenarios.lateCommitAfterExpiry(b, Effect.void)
      assert.deepStrictEqual(seen, BudgetScenarios.lateCommitExpected)
    })
  )

  it.scoped("daily windows reset at 00:00 UTC; a reservation settles into the window it was made in", () =>
    Effect.gen(function* () {
      const b = yield* budgetsOver(freshOptions(), { tenants: { acme: { limit: 10, period: "daily" } } })
      yield* TestClock.setTime(Date.UTC(2026, 10, 3, 23, 59))
      const r = yield* b.reserve(acme, 6)
      yield* TestClock.adjust("2 minutes")
      // a new day: a fresh account
      const today = yield* b.balance(acme)
      assert.deepStrictEqual([today.committed, today.reserved, today.windowStart], [0, 0, Date.UTC(2026, 10, 4)])
      yield* r.settle(6)
      assert.strictEqual((yield* b.balance(acme)).committed, 0)
      const fresh = yield* b.reserve(acme, 10)
      yield* fresh.settle(0)
    })
  )

  it.scoped("two gateways over one redis-server (two clients) see one budget", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const budget: Budgets.Options = { tenants: { acme: { limit: 10, period: "monthly" } } }
      const [one, two] = yield* twoProcesses(budgetsOver(options, budget))
      const r = yield* one.reserve(acme, 7)
      assert.strictEqual((yield* two.balance(acme)).reserved, 7)
      assert.strictEqual(failureTag(yield* Effect.exit(two.reserve(acme, 4))), "BudgetExceeded")
      yield* r.settle(2)
      const r2 = yield* two.reserve(acme, 8)
      yield* r2.settle(8)
      const balance = yield* one.balance(acme)
      assert.deepStrictEqual([units(balance.committed), units(balance.reserved)], [units(10), 0])
    })
  )
})

describe("Redis BudgetStore under concurrency", () => {
  it.scoped("200 concurrent reserves over two clients never exceed the limit, after every operation", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const stores = yield* Effect.all([Redis.make(options), Redis.make(options)])
      const limit = 50
      const account = "acme/total"
      const violations = yield* Ref.make(0)
      const check = (committed: number, reserved: number) =>
        committed + reserved > limit ? Ref.update(violations, (n) => n + 1) : Effect.void
      const request = (i: number): BudgetStore.ReserveRequest => ({
        account,
        id: `c-${i}`,
        amount: 1 + (i % 3),
        limit,
        now: 0,
        expiresAt: 60_000,
        accountExpiresAt: Number.POSITIVE_INFINITY
      })
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => {
          const store = (i % 2 === 0 ? stores[0] : stores[1]).budget
          const r = request(i)
          return Effect.gen(function* () {
            const outcome = yield* store.reserve(r)
            yield* check(outcome.committed, outcome.reserved)
            if (outcome._tag === "Rejected") return 0
            // settle a third, release a third, keep a third
            if (i % 3 === 0) yield* store.commit({ account, id: r.id, amount: r.amount, spend: r.amount, limit })
            else if (i % 3 === 1) yield* store.release({ account, id: r.id })
            const b = yield* store.balance(account, 0)
            yield* check(b.committed, b.reserved)
            return 1
          })
        },
        { concurrency: "unbounded" }
      )
      const final = yield* stores[0].budget.balance(account, 0)
      assert.strictEqual(yield* Ref.get(violations), 0)
      assert.isAtMost(final.committed + final.reserved, limit)
      assert.strictEqual(final.overspent, 0)
      // the limit was reached: some reserves passed, some were refused
      assert.isAbove(outcomes.filter((n) => n === 1).length, 0)
      assert.isAbove(outcomes.filter((n) => n === 0).length, 0)
    })
  )
})

const config = Health.HealthConfig.make({
  breaker: Health.BreakerSettings.make({ consecutiveFailures: 1, failureRatio: 0, coolDown: Duration.seconds(1) }),
  targets: {},
  window: Health.WindowSettings.make({}),
  retryBudget: Health.RetryBudgetSettings.make({})
})

const unavailable: Health.AttemptSignal = {
  outcome: "unavailable",
  availabilityFailure: true,
  latencyMs: 50,
  ttftMs: undefined,
  errorTag: "ProviderUnavailable"
}
const ok: Health.AttemptSignal = {
  outcome: "success",
  availabilityFailure: false,
  latencyMs: 80,
  ttftMs: undefined,
  errorTag: undefined
}

const target = (name: string) =>
  new ModelTarget({
    ref: TargetRef.make(`model://redis-${name}-${++seq}/m`),
    provider: ProviderId.make("openai"),
    model: "m",
    capabilities: new Capabilities({ contextWindow: 128_000, maxOutputTokens: 4096 }),
    regions: ["eu"],
    dataClasses: ["public"],
    pricing: new Pricing({ inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "test-1" })
  })

const healthOver = (options: Redis.Options) =>
  serviceOf(Health.Health, Health.layer(config).pipe(Layer.provide(Redis.layerBreakerStore(options))))

/**
 * `read` once it answers `expected`, or its last answer after 500 ms of real time: a breaker
 * change reaches another process's mirror when its pub/sub message is delivered (well under 500 ms).
 */
const heard = <A, E>(read: Effect.Effect<A, E>, expected: A) =>
  Effect.gen(function* () {
    const until = Date.now() + 500
    let value = yield* read
    while (value !== expected && Date.now() < until) {
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1)))
      value = yield* read
    }
    return value
  })

/** Core's read-at-once breaker capability (`internal/fastPath.ts` there), as a Redis store offers it. */
const isReadAtOnce = (
  u: unknown
): u is {
  readonly ready: () => boolean
  readonly get: (route: string) => { readonly status: string } | undefined
} =>
  typeof u === "object" &&
  u !== null &&
  Reflect.get(u, "_tag") === "BreakerStore" &&
  typeof Reflect.get(u, "ready") === "function" &&
  typeof Reflect.get(u, "get") === "function"

describe("Redis BreakerStore through Health", () => {
  it.scoped("a breaker opened by one service is open for the other; the half-open probe slot is shared", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const [one, two] = yield* twoProcesses(healthOver(options))
      const t = target("shared")
      assert.isFalse(yield* two.isOpen(t))
      yield* one.record(t, unavailable)
      // (each change reaches the other process's mirror by pub/sub: as soon as it is delivered)
      assert.isTrue(yield* heard(two.isOpen(t), true))
      assert.isFalse(yield* two.tryAcquire(t))
      yield* TestClock.adjust("1 second")
      // the cool-down is over: one probe in all, whichever service asks first
      assert.isTrue(yield* two.tryAcquire(t))
      assert.isFalse(yield* heard(one.tryAcquire(t), false))
      assert.isTrue(yield* one.isOpen(t))
      yield* two.record(t, ok)
      assert.isFalse(yield* heard(one.isOpen(t), false))
      assert.isTrue(yield* one.tryAcquire(t))
    })
  )

  it.scoped("only a layer with the breaker store subscribes to breaker changes: a budget store layer does not", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const channel = `${options.keyPrefix}breaker-changes`
      const admin = (yield* Redis.make(freshOptions())).connection
      const subscribers = Effect.map(
        Effect.promise(() => admin.pubsub("NUMSUB", channel)),
        (reply: ReadonlyArray<unknown>) => Number(reply[1])
      )
      const b = yield* budgetsOver(options, { tenants: { acme: { limit: 10, period: "total" } } })
      yield* b.reserve(acme, 1)
      yield* healthOver(options)
      assert.strictEqual(yield* heard(subscribers, 1), 1)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      assert.strictEqual(yield* subscribers, 1)
    })
  )

  it.scoped("modify is compare-and-set: 50 concurrent increments over two clients all count", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const stores = yield* Effect.all([Redis.make(options), Redis.make(options)])
      yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => i),
        (i) =>
          (i % 2 === 0 ? stores[0] : stores[1]).breaker.modify("r", (current) => [
            undefined,
            {
              status: "half_open" as const,
              since: 0,
              probes: (current?.probes ?? 0) + 1,
              probeSuccesses: 0,
              lastProbeAt: 0
            }
          ]),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(
        yield* heard(
          Effect.map(stores[1].breaker.get("r"), (s) => s?.probes),
          50
        ),
        50
      )
      yield* stores[0].breaker.modify("r", () => [undefined, undefined])
      assert.isUndefined(yield* heard(stores[1].breaker.get("r"), undefined))
    })
  )

  it.scoped("in sync, the store offers core's Health its mirror to read at once: the state another client wrote", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const stores = yield* Effect.all([Redis.make(options), Redis.make(options)])
      const fast: unknown = Reflect.get(stores[1].breaker, Symbol.for("@modelgate/core/FastPath"))
      if (!isReadAtOnce(fast)) return assert.fail("the Redis breaker store carries no read-at-once capability")
      // loaded once after its subscription, the mirror answers
      assert.isTrue(yield* heard(Effect.sync(fast.ready), true))
      assert.isUndefined(fast.get("r"))
      const open = { status: "open" as const, since: 0, probes: 0, probeSuccesses: 0, lastProbeAt: 0 }
      yield* stores[0].breaker.modify("r", () => [undefined, open])
      assert.strictEqual(
        yield* heard(
          Effect.sync(() => fast.get("r")?.status),
          "open"
        ),
        "open"
      )
      // the same state its `get` answers
      assert.deepStrictEqual(yield* stores[1].breaker.get("r"), fast.get("r"))
      yield* stores[0].breaker.modify("r", () => [undefined, undefined])
      assert.isUndefined(
        yield* heard(
          Effect.sync(() => fast.get("r")),
          undefined
        )
      )
    })
  )
})

class Task extends Schema.Class<Task>("Task")({ id: Schema.String, due: Schema.Date }) {}
const createTask = ToolLedger.sideEffecting({ name: "create_follow_up_task", result: Task })

const ledgerOver = (options: Redis.Options) =>
  serviceOf(ToolLedger.ToolLedger, ToolLedger.layer.pipe(Layer.provide(Redis.layerToolLedgerStore(options))))

describe("Redis ToolLedgerStore through ToolLedger", () => {
  it.scoped("runOnce with one key from two services runs the tool once; both get its result", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const [one, two] = yield* twoProcesses(ledgerOver(options))
      const created = yield* Ref.make(0)
      const create = Effect.map(
        Ref.updateAndGet(created, (n) => n + 1),
        (n) => new Task({ id: `T${n}`, due: new Date(0) })
      )
      const key = ToolLedger.key(createTask, { runId: "run-1", step: 1 })
      const first = yield* one.runOnce(key, create)
      const second = yield* two.runOnce(key, create)
      assert.strictEqual(yield* Ref.get(created), 1)
      assert.deepStrictEqual(second, first)
      // concurrent: one runs, the other is refused while in doubt or replays once completed
      const key2 = ToolLedger.key(createTask, { runId: "run-1", step: 2 })
      const exits = yield* Effect.all(
        [Effect.exit(one.runOnce(key2, create)), Effect.exit(two.runOnce(key2, create))],
        {
          concurrency: 2
        }
      )
      assert.strictEqual(yield* Ref.get(created), 2)
      assert.isTrue(exits.some(Exit.isSuccess))
      for (const exit of exits) if (Exit.isFailure(exit)) assert.strictEqual(failureTag(exit), "ToolReplayRefused")
      const records = yield* two.records("run-1")
      assert.deepStrictEqual(
        records.map((r) => [r.step, r.status]),
        [
          [1, "completed"],
          [2, "completed"]
        ]
      )
    })
  )

  it.scoped("a typed failure drops the claim (a later attempt runs); an unfinished claim is in doubt", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const [one, two] = yield* twoProcesses(ledgerOver(options))
      const key = ToolLedger.key(createTask, { runId: "run-2", step: 1 })
      assert.strictEqual(
        failureTag(yield* Effect.exit(one.runOnce(key, Effect.fail({ _tag: "Nope" as const })))),
        "Nope"
      )
      assert.isTrue(
        Exit.isSuccess(yield* Effect.exit(two.runOnce(key, Effect.succeed(new Task({ id: "x", due: new Date(0) })))))
      )
      // a holder that died mid-tool: its claim stays, the key is in doubt for every service
      const stuck = ToolLedger.key(createTask, { runId: "run-2", step: 2 })
      yield* Effect.exit(one.runOnce(stuck, Effect.die("crash")))
      assert.strictEqual(
        failureTag(yield* Effect.exit(two.runOnce(stuck, Effect.succeed(new Task({ id: "y", due: new Date(0) }))))),
        "ToolReplayRefused"
      )
      const record = yield* two.record(stuck.id)
      assert.strictEqual(record._tag === "Some" ? record.value.status : undefined, "started")
      assert.strictEqual(failureTag(yield* Effect.exit(two.checkReplay([stuck]))), "ToolReplayRefused")
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(two.checkReplay([key]))))
    })
  )
})

describe("Redis scripts", () => {
  /** A counter of `INFO commandstats` (`cmdstat_<command>:…<field>=<n>`). */
  const commandStat = (info: string, command: string, field: string) =>
    Number(new RegExp(`^cmdstat_${command}:.*\\b${field}=(\\d+)`, "m").exec(info)?.[1] ?? 0)

  it.scoped("a script the server forgot (SCRIPT FLUSH) is sent once more with its text: EVALSHA, then EVAL", () =>
    Effect.gen(function* () {
      // the budget store alone (no breaker mirror), its idle epoch check an hour apart: no script
      // runs in the background while the operations are counted
      const options = freshOptions({ epochCheckInterval: Duration.hours(1) })
      const b = yield* budgetsOver(options, { tenants: { acme: { limit: 10, period: "total" } } })
      const first = yield* b.reserve(acme, 1)
      yield* first.settle(1)
      const redis = yield* Effect.acquireRelease(
        Effect.sync(() => new IORedis(options.url)),
        (r) => Effect.sync(() => r.disconnect())
      )
      yield* Effect.promise(() => redis.script("FLUSH"))
      const before = yield* Effect.promise(() => redis.info("commandstats"))
      // a reserve and its settle: each refused by EVALSHA, then run by EVAL
      const second = yield* b.reserve(acme, 2)
      yield* second.settle(2)
      const after = yield* Effect.promise(() => redis.info("commandstats"))
      assert.strictEqual(
        commandStat(after, "evalsha", "failed_calls") - commandStat(before, "evalsha", "failed_calls"),
        2
      )
      assert.strictEqual(commandStat(after, "eval", "calls") - commandStat(before, "eval", "calls"), 2)
      // known again: the next operations go by EVALSHA alone
      const third = yield* b.reserve(acme, 1)
      yield* third.settle(1)
      const later = yield* Effect.promise(() => redis.info("commandstats"))
      assert.strictEqual(commandStat(later, "eval", "calls"), commandStat(after, "eval", "calls"))
      assert.strictEqual(units((yield* b.balance(acme)).committed), units(4))
    })
  )
})

describe("Redis layers", () => {
  it.scoped("layerConfig reads MODELGATE_REDIS_URL and serves the three stores", () =>
    Effect.gen(function* () {
      const options = freshOptions()
      const env = ConfigProvider.fromMap(
        new Map([
          ["MODELGATE_REDIS_URL", options.url],
          ["MODELGATE_REDIS_COMMAND_TIMEOUT", "2 seconds"],
          ["MODELGATE_REDIS_KEY_PREFIX", options.keyPrefix ?? ""]
        ])
      )
      const stores = Redis.layerConfig().pipe(Layer.provide(Layer.setConfigProvider(env)))
      const services = yield* serviceOf(
        Budgets.Budgets,
        Budgets.layer({ tenants: { acme: { limit: 1, period: "total" } } }).pipe(Layer.provide(stores))
      )
      const r = yield* services.reserve(acme, 1)
      yield* r.settle(1)
      // the same server and prefix through a store layer of its own
      const other = yield* budgetsOver(options, { tenants: { acme: { limit: 1, period: "total" } } })
      assert.strictEqual((yield* other.balance(acme)).committed, 1)
      const context = yield* Layer.build(stores)
      assert.deepStrictEqual(
        yield* Effect.provide(
          Effect.flatMap(ToolLedger.ToolLedger, (l) => l.records("none")),
          ToolLedger.layer.pipe(Layer.provide(Layer.succeedContext(context)))
        ),
        []
      )
    })
  )
})
