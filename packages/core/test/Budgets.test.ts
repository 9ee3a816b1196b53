import { assert, describe, it } from "@effect/vitest"
import * as Budgets from "@modelgate/core/Budgets"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import { BudgetExceeded, StoreError } from "@modelgate/core/Errors"
import { TenantId } from "@modelgate/core/ModelCommand"
import * as BudgetScenarios from "@modelgate/testing/BudgetScenarios"
import {
  Cause,
  Clock,
  ConfigProvider,
  Effect,
  Exit,
  Fiber,
  HashMap,
  Layer,
  Logger,
  Metric,
  Option,
  Random,
  Ref,
  Schema,
  TestClock
} from "effect"
import { reportOverspend } from "../src/internal/budgetReservation.js"
import * as FastPath from "../src/internal/fastPath.js"
import { capturingLogger } from "./fixtures.js"
import * as BudgetConfig from "../src/internal/budgetConfig.js"
import { metrics as budgetMetrics } from "../src/internal/budgetReservation.js"
import { windowOf } from "../src/internal/budgetWindow.js"
import { makeMemory as makeMemoryBudgetStore } from "../src/internal/budgetMemoryStore.js"
import type { MemoryStore } from "../src/internal/budgetMemoryStore.js"

const acme = TenantId.make("acme")
const globex = TenantId.make("globex")
const units = (x: number) => Math.round(x * Budgets.unitsPerCurrency)
/** A balance with `committed` units spent and nothing reserved or overspent. */
const settled = (committed: number) => ({ committed, reserved: 0, overspent: 0 })

const withBudgets = (options: Budgets.Options) => Effect.provide(Budgets.layerMemory(options))
const budgets = Budgets.Budgets

const balanceUnits = (tenant: TenantId) =>
  Effect.map(
    Effect.flatMap(budgets, (b) => b.balance(tenant)),
    (b) => ({ committed: units(b.committed), reserved: units(b.reserved) })
  )

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

/** Reserves and releases at once: succeeds when `amount` fits. */
const fits = (b: Budgets.Service, tenant: TenantId, amount: number) =>
  Effect.flatMap(b.reserve(tenant, amount), (r) => r.settle(0))

/** Reserves and commits `spend` at once. */
const spend = (b: Budgets.Service, tenant: TenantId, amount: number, actual: number) =>
  Effect.flatMap(b.reserve(tenant, amount), (r) => r.settle(actual))

const storeError = (operation: string) => new StoreError({ store: "budget", operation, detail: "connection refused" })

describe("Budgets (memory)", () => {
  it.effect("settle turns the spend into committed and refunds the rest of the reservation; settle(0) releases", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      const r = yield* b.reserve(acme, 3)
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 0, reserved: units(3) })
      yield* r.settle(1.25)
      // idempotent: only the first settlement counts
      yield* r.settle(2)
      yield* r.settle(0)
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: units(1.25), reserved: 0 })
      // settle(0) releases
      const released = yield* b.reserve(acme, 5)
      yield* released.settle(0)
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: units(1.25), reserved: 0 })
    }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect(
    "spend beyond the reservation is committed in full (16 tokens estimated, 17 reported); beyond the limit it is overspent",
    () =>
      Effect.gen(function* () {
        const b = yield* budgets
        const overspendBefore = (yield* Metric.value(budgetMetrics.overspend)).count
        // $15/M input: 16 estimated input tokens reserve 240,000 units, the provider reports 17 (255,000)
        const r = yield* b.reserve(acme, 0.00024)
        const settlement = yield* r.settle(0.000255)
        assert.deepStrictEqual([units(settlement.committed), settlement.overspent], [255_000, 0])
        assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 255_000, reserved: 0 })
        // beyond the limit (0.0005): with 0.0002 reserved, 0.000045 of room is left; a reservation of
        // 0.0001 that spends 0.0003 overspends 0.000155
        const other = yield* b.reserve(acme, 0.0001)
        const over = yield* spend(b, acme, 0.0001, 0.0003)
        assert.deepStrictEqual([units(over.committed), units(over.overspent)], [300_000, 155_000])
        const balance = yield* b.balance(acme)
        assert.deepStrictEqual(
          [units(balance.committed), units(balance.reserved), units(balance.overspent)],
          [555_000, 100_000, 155_000]
        )
        assert.strictEqual(units((yield* Metric.value(budgetMetrics.overspend)).count - overspendBefore), 155_000)
        // over its limit, the tenant is refused; a settle within its reservation overspends nothing
        assert.strictEqual(failureOf(yield* Effect.exit(b.reserve(acme, 0.000001)))?._tag, "BudgetExceeded")
        assert.deepStrictEqual(yield* other.settle(0.0001), { committed: 0.0001, overspent: 0 })
      }).pipe(withBudgets({ tenants: { acme: { limit: 0.0005, period: "total" } } }))
  )

  it.effect(
    "reserveScoped: leaving the scope without a settle releases everything, also on failure and interruption",
    () =>
      Effect.gen(function* () {
        yield* Effect.scoped(Budgets.reserveScoped(acme, 4))
        yield* Effect.exit(Effect.scoped(Effect.zipRight(Budgets.reserveScoped(acme, 4), Effect.fail("boom"))))
        const fiber = yield* Effect.fork(Effect.scoped(Effect.zipRight(Budgets.reserveScoped(acme, 4), Effect.never)))
        yield* TestClock.adjust(10)
        assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 0, reserved: units(4) })
        yield* Fiber.interrupt(fiber)
        assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 0, reserved: 0 })
        // a settle inside the scope is the one that counts; closing the scope adds nothing
        yield* Effect.scoped(Effect.flatMap(Budgets.reserveScoped(acme, 4), (r) => r.settle(1.5)))
        assert.deepStrictEqual(yield* balanceUnits(acme), { committed: units(1.5), reserved: 0 })
      }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect(
    "a reservation that does not fit fails with BudgetExceeded naming tenant, limit, committed, reserved, requested",
    () =>
      Effect.gen(function* () {
        const b = yield* budgets
        yield* spend(b, acme, 4, 4)
        const held = yield* b.reserve(acme, 3)
        const exit = yield* Effect.exit(b.reserve(acme, 3.5))
        yield* held.settle(0)
        const error = failureOf(exit)
        assert.deepStrictEqual(
          error?._tag === "BudgetExceeded"
            ? {
                tenant: error.tenant,
                limit: error.limit,
                committed: error.committed,
                reserved: error.reserved,
                requested: error.requested
              }
            : error,
          { tenant: acme, limit: 10, committed: 4, reserved: 3, requested: 3.5 }
        )
        // the failed reservation left nothing behind; exactly the rest still fits
        assert.deepStrictEqual(yield* balanceUnits(acme), { committed: units(4), reserved: 0 })
        yield* fits(b, acme, 6)
      }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect("undeclared tenants are rejected by default (limit 0), before anything is reserved", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      const error = failureOf(yield* Effect.exit(b.reserve(globex, 0.01)))
      assert.deepStrictEqual(error?._tag === "BudgetExceeded" ? [error.limit, error.tenant] : error, [0, globex])
    }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect("undeclared tenants with a default budget each get an account of their own", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* spend(b, globex, 1, 1)
      const other = TenantId.make("initech")
      yield* spend(b, other, 1, 1)
      assert.strictEqual((yield* b.balance(globex)).committed, 1)
      assert.strictEqual((yield* b.balance(other)).committed, 1)
      assert.strictEqual(failureOf(yield* Effect.exit(b.reserve(globex, 0.5)))?._tag, "BudgetExceeded")
    }).pipe(withBudgets({ undeclaredTenants: { limit: 1, period: "total" } }))
  )

  it.effect("undeclared tenants may be unlimited", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      const r = yield* b.reserve(globex, 1e12)
      assert.strictEqual(r.amount, 1e12)
      yield* r.settle(1e12)
      assert.strictEqual((yield* b.balance(globex)).limit, Infinity)
    }).pipe(withBudgets({ tenants: { acme: { limit: 1 } }, undeclaredTenants: "unlimited" }))
  )

  it.effect("layerOff: every reservation fits and its settle does nothing", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      const r = yield* b.reserve(acme, 1e15)
      assert.deepStrictEqual([r.tenant, r.amount], [acme, 1e15])
      yield* r.settle(1e15)
      const balance = yield* b.balance(acme)
      assert.deepStrictEqual([balance.limit, balance.committed, balance.reserved], [Infinity, 0, 0])
    }).pipe(Effect.provide(Budgets.layerOff))
  )

  it.effect("daily windows reset at 00:00 UTC; a reservation settles into the window it was made in", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      // 2026-03-10T23:59:00Z
      yield* TestClock.setTime(Date.UTC(2026, 2, 10, 23, 59))
      yield* spend(b, acme, 4, 4)
      const late = yield* b.reserve(acme, 1)
      assert.strictEqual(failureOf(yield* Effect.exit(b.reserve(acme, 0.5)))?._tag, "BudgetExceeded")
      yield* TestClock.adjust("1 minute")
      const today = yield* b.balance(acme)
      assert.deepStrictEqual(
        [today.windowStart, today.windowEnd, today.committed, today.reserved],
        [Date.UTC(2026, 2, 11), Date.UTC(2026, 2, 12), 0, 0]
      )
      // the new day has its whole limit
      yield* spend(b, acme, 5, 3)
      // yesterday's reservation commits into yesterday
      yield* late.settle(1)
      assert.strictEqual((yield* b.balance(acme)).committed, 3)
      yield* TestClock.setTime(Date.UTC(2026, 2, 10, 12))
      assert.strictEqual((yield* b.balance(acme)).committed, 5)
    }).pipe(withBudgets({ tenants: { acme: { limit: 5, period: "daily" } } }))
  )

  it.effect("monthly windows follow calendar months in UTC", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* TestClock.setTime(Date.UTC(2028, 1, 29, 12))
      yield* spend(b, acme, 2, 2)
      const feb = yield* b.balance(acme)
      assert.deepStrictEqual(
        [feb.windowStart, feb.windowEnd, feb.committed],
        [Date.UTC(2028, 1, 1), Date.UTC(2028, 2, 1), 2]
      )
      yield* TestClock.setTime(Date.UTC(2028, 2, 1))
      assert.strictEqual((yield* b.balance(acme)).committed, 0)
      assert.deepStrictEqual(windowOf("monthly", Date.UTC(2028, 11, 31, 23, 59)), {
        key: "m2028-12",
        start: Date.UTC(2028, 11, 1),
        end: Date.UTC(2029, 0, 1)
      })
    }).pipe(withBudgets({ tenants: { acme: { limit: 2 } } }))
  )

  it.effect("the reservation of a crashed holder expires after reservationTtl and frees its amount", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      // a holder that never settles (its process died)
      yield* b.reserve(acme, 8)
      assert.strictEqual(failureOf(yield* Effect.exit(b.reserve(acme, 8)))?._tag, "BudgetExceeded")
      yield* TestClock.adjust("59999 millis")
      assert.strictEqual((yield* b.balance(acme)).reserved, 8)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual((yield* b.balance(acme)).reserved, 0)
      yield* fits(b, acme, 8)
    }).pipe(withBudgets({ tenants: { acme: { limit: 10, period: "total" } }, reservationTtl: "1 minute" }))
  )

  it.effect(
    "a late commit after its reservation expired is committed in full; what the limit has no room for is reported as overspent",
    () =>
      Effect.gen(function* () {
        const b = yield* budgets
        const overspendBefore = (yield* Metric.value(budgetMetrics.overspend)).count
        // a holder that outlives its reservation (its call ran longer than the TTL); the expired amount
        // is reserved again by another call; the holder sees all 8 counted, 6 of them beyond the limit
        const seen = yield* BudgetScenarios.lateCommitAfterExpiry(
          b,
          Effect.gen(function* () {
            assert.strictEqual((yield* Metric.value(budgetMetrics.overspend)).count - overspendBefore, 6)
            // over its limit, the tenant is refused
            assert.strictEqual(failureOf(yield* Effect.exit(b.reserve(acme, 0.001)))?._tag, "BudgetExceeded")
          })
        )
        // a commit within its reservation reports no overspend, even on an account over its limit
        assert.deepStrictEqual(seen, BudgetScenarios.lateCommitExpected)
      }).pipe(withBudgets(BudgetScenarios.lateCommitOptions))
  )

  it.effect("memory store: accounts of finished windows are forgotten once they hold nothing", () =>
    Effect.gen(function* () {
      const store = yield* makeMemoryBudgetStore
      const b = yield* Budgets.make({
        undeclaredTenants: { limit: 1, period: "daily" },
        reservationTtl: "1 minute"
      }).pipe(Effect.provideService(BudgetStore.BudgetStore, store))
      for (let i = 0; i < 1_000; i++) {
        yield* spend(b, TenantId.make(`t${i}`), 0.5, 0.1)
      }
      assert.strictEqual(yield* store.size, 1_000)
      yield* TestClock.adjust("1 day")
      yield* TestClock.adjust("1 minute")
      yield* fits(b, acme, 0.5)
      assert.strictEqual(yield* store.size, 1)
    })
  )

  it.effect(
    "memory store: reserve is all-or-nothing; unknown ids are ignored; an expired reservation's spend counts in full, what the limit has no room for as overspent",
    () =>
      Effect.gen(function* () {
        const store = yield* makeMemoryBudgetStore
        const req = { account: "a/total", limit: 100, now: 0, expiresAt: 10, accountExpiresAt: Infinity }
        assert.deepStrictEqual(yield* store.reserve({ ...req, id: "1", amount: 60 }), {
          _tag: "Reserved",
          committed: 0,
          reserved: 60
        })
        assert.deepStrictEqual(yield* store.reserve({ ...req, id: "2", amount: 41 }), {
          _tag: "Rejected",
          committed: 0,
          reserved: 60
        })
        yield* store.release({ account: "a/total", id: "nope" })
        yield* store.commit({ account: "a/total", id: "nope", amount: 0, spend: 0, limit: 100 })
        assert.deepStrictEqual(yield* store.balance("a/total", 0), { committed: 0, reserved: 60, overspent: 0 })
        // id 1 expires at 10: a reserve at 10 no longer sees it
        assert.deepStrictEqual(yield* store.reserve({ ...req, now: 10, expiresAt: 20, id: "3", amount: 100 }), {
          _tag: "Reserved",
          committed: 0,
          reserved: 100
        })
        // its late commit finds the limit taken by id 3: all of it counted, all of it overspent
        assert.deepStrictEqual(
          yield* store.commit({ account: "a/total", id: "1", amount: 60, spend: 70, limit: 100 }),
          {
            committed: 70,
            overspent: 70
          }
        )
        assert.deepStrictEqual(yield* store.balance("a/total", 10), { committed: 70, reserved: 100, overspent: 70 })
        // id 3 expires at 20: a balance at 20 no longer counts it
        assert.deepStrictEqual(yield* store.balance("a/total", 20), { committed: 70, reserved: 0, overspent: 70 })
        // a late commit that fits the limit: nothing overspent
        assert.deepStrictEqual(
          yield* store.commit({ account: "a/total", id: "3", amount: 100, spend: 30, limit: 100 }),
          {
            committed: 30,
            overspent: 0
          }
        )
        assert.deepStrictEqual(yield* store.balance("a/total", 20), { committed: 100, reserved: 0, overspent: 70 })
      })
  )

  it.effect("Budgets over a memory store it is given counts in that store's account", () =>
    Effect.gen(function* () {
      const store = yield* makeMemoryBudgetStore
      const b = yield* Budgets.make({ tenants: { acme: { limit: 1 } } }).pipe(
        Effect.provideService(BudgetStore.BudgetStore, store)
      )
      yield* spend(b, acme, 1, 1)
      assert.deepStrictEqual(yield* store.balance(`acme/${windowOf("monthly", 0).key}`, 0), settled(units(1)))
    })
  )
})

describe("Budgets with a failing or slow store", () => {
  /** The memory store with some operations replaced; records each store operation it is asked for. */
  const makeStore = (override: (inner: MemoryStore) => Partial<BudgetStore.Service>) =>
    Effect.gen(function* () {
      const inner = yield* makeMemoryBudgetStore
      const calls = yield* Ref.make<ReadonlyArray<string>>([])
      const log =
        <A extends ReadonlyArray<unknown>, B, E>(name: string, f: (...args: A) => Effect.Effect<B, E>) =>
        (...args: A) =>
          Effect.zipRight(
            Ref.update(calls, (c) => [...c, name]),
            f(...args)
          )
      const o = { ...inner, ...override(inner) }
      const store: BudgetStore.Service = {
        reserve: log("reserve", o.reserve),
        commit: log("commit", o.commit),
        release: log("release", o.release),
        balance: o.balance
      }
      const b = yield* Budgets.make({
        tenants: { acme: { limit: 10, period: "total" } },
        reservationTtl: "1 minute"
      }).pipe(Effect.provideService(BudgetStore.BudgetStore, store))
      return { b, inner, calls: Ref.get(calls) }
    })

  /** A logger that keeps every entry (`it.effect` has no logger of its own). */
  const captureLogs = () => {
    const logs: Array<{ level: string; message: string; annotations: object }> = []
    const logger = Logger.make(({ annotations, logLevel, message }) => {
      logs.push({
        level: logLevel.label,
        message: Array.isArray(message) ? message.join(" ") : String(message),
        annotations: Object.fromEntries(HashMap.toEntries(annotations))
      })
    })
    return { logs, logger }
  }

  it.effect(
    "a store that cannot reserve: reserve fails with StoreError naming the budget store; nothing is reserved",
    () =>
      Effect.gen(function* () {
        const { b, calls, inner } = yield* makeStore(() => ({ reserve: () => Effect.fail(storeError("reserve")) }))
        const error = failureOf(yield* Effect.exit(b.reserve(acme, 4)))
        assert.deepStrictEqual(error?._tag === "StoreError" ? [error.store, error.operation] : error, [
          "budget",
          "reserve"
        ])
        // the failed reserve sent a best-effort release of its id, without waiting for it
        assert.deepStrictEqual(yield* calls, ["reserve"])
        yield* Effect.yieldNow()
        assert.deepStrictEqual(yield* calls, ["reserve", "release"])
        assert.deepStrictEqual(yield* inner.balance("acme/total", 0), { committed: 0, reserved: 0, overspent: 0 })
      })
  )

  it.effect("a store that reserved but lost its answer: the release of the id frees the amount", () =>
    Effect.gen(function* () {
      const { b, inner } = yield* makeStore((inner) => ({
        reserve: (r) => Effect.zipRight(inner.reserve(r), Effect.fail(storeError("reserve")))
      }))
      assert.strictEqual(failureOf(yield* Effect.exit(b.reserve(acme, 4)))?._tag, "StoreError")
      yield* Effect.yieldNow()
      assert.deepStrictEqual(yield* inner.balance("acme/total", 0), { committed: 0, reserved: 0, overspent: 0 })
    })
  )

  it.effect(
    "a call's deadline bounds its waits on the store: the reserve carries it, the settlement waits at most what is left (25 ms at least)",
    () =>
      Effect.gen(function* () {
        const seen: Array<number | undefined> = []
        const { b } = yield* makeStore((inner) => ({
          reserve: (r) => {
            seen.push(r.deadline)
            return inner.reserve(r)
          },
          commit: (r) => {
            seen.push(r.maxWaitMs)
            return inner.commit(r)
          },
          release: (r) => {
            seen.push(r.maxWaitMs)
            return inner.release(r)
          }
        }))
        const early = yield* b.reserve(acme, 1, 1_000)
        const late = yield* b.reserve(acme, 1, 1_000)
        const free = yield* b.reserve(acme, 1)
        yield* TestClock.adjust(600)
        yield* early.settle(0.5) // 400 ms left
        yield* TestClock.adjust(390)
        yield* late.settle(0) // 10 ms left: a release, waiting the 25 ms floor
        yield* free.settle(0.5) // no deadline: the store's own timeout
        assert.deepStrictEqual(seen, [1_000, 1_000, undefined, 400, 25, undefined])
      })
  )

  it.effect("a store that cannot answer a balance: balance fails with StoreError", () =>
    Effect.gen(function* () {
      const { b } = yield* makeStore(() => ({ balance: () => Effect.fail(storeError("balance")) }))
      const error = yield* Effect.flip(b.balance(acme))
      assert.deepStrictEqual([error._tag, error.store, error.operation], ["StoreError", "budget", "balance"])
    })
  )

  it.effect(
    "settle is idempotent and never fails: a failed commit is pending, retried until the reservation expires, then logged (tenant and operation only) and counted; the TTL frees the amount",
    () =>
      Effect.gen(function* () {
        const { logs, logger } = captureLogs()
        const failures = Metric.tagged(budgetMetrics.settleFailures, "operation", "commit")
        const before = (yield* Metric.value(failures)).count
        const { b, calls, inner } = yield* makeStore(() => ({ commit: () => Effect.fail(storeError("commit")) }))
        const r = yield* b.reserve(acme, 2)
        const settled = yield* Effect.exit(
          Effect.zip(r.settle(1), r.settle(1)).pipe(Effect.provide(Logger.add(logger)))
        )
        assert.isTrue(Exit.isSuccess(settled))
        if (Exit.isSuccess(settled)) {
          assert.deepStrictEqual(settled.value, [
            { committed: 0, overspent: 0, pending: true },
            { committed: 0, overspent: 0 }
          ])
        }
        // only the first settle reached the store; its commit is pending
        assert.deepStrictEqual(yield* calls, ["reserve", "commit"])
        assert.strictEqual((yield* Metric.value(failures)).count - before, 0)
        assert.deepStrictEqual(
          logs.map((e) => [e.level, e.annotations]),
          [["WARN", { tenant: "acme" }]]
        )
        assert.include(logs[0]?.message, "budget commit pending")
        // retried in the background, backing off from 100 ms to 5 s (at 0.1, 0.3, 0.7, 1.5, 3.1, 6.3,
        // 11.3, …, 56.3 s), never later than a second before the reservation expires (TTL 1 minute)
        yield* TestClock.adjust("56299 millis")
        assert.strictEqual((yield* calls).filter((c) => c === "commit").length, 16)
        assert.strictEqual((yield* Metric.value(failures)).count - before, 0)
        yield* TestClock.adjust("1 millis")
        const commits = (yield* calls).filter((c) => c === "commit").length
        assert.strictEqual(commits, 17)
        assert.strictEqual((yield* Metric.value(failures)).count - before, 1)
        assert.deepStrictEqual(
          logs.map((e) => [e.level, e.annotations]),
          [
            ["WARN", { tenant: "acme" }],
            ["WARN", { tenant: "acme", operation: "commit" }]
          ]
        )
        assert.include(logs[1]?.message, "budget settle failed")
        for (const e of logs) assert.notInclude(e.message, "acme/total")
        // the reservation is still held in the store until its TTL frees it
        assert.deepStrictEqual(yield* inner.balance("acme/total", 59_999), {
          committed: 0,
          reserved: units(2),
          overspent: 0
        })
        yield* TestClock.adjust("3700 millis")
        assert.deepStrictEqual(yield* inner.balance("acme/total", 60_000), { committed: 0, reserved: 0, overspent: 0 })
        // no retry after the window
        yield* TestClock.adjust("1 minute")
        assert.strictEqual((yield* calls).filter((c) => c === "commit").length, commits)
      })
  )

  it.effect("a commit that landed but lost its answer is retried and counted once", () =>
    Effect.gen(function* () {
      let lost = 1
      const { b, inner } = yield* makeStore((store) => ({
        commit: (request) =>
          lost-- > 0 ? Effect.zipRight(store.commit(request), Effect.fail(storeError("commit"))) : store.commit(request)
      }))
      const r = yield* b.reserve(acme, 2)
      assert.isTrue((yield* r.settle(1.5)).pending)
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* inner.balance("acme/total", 1_000), settled(units(1.5)))
    })
  )

  it.effect("a commit that did not reach the store is committed by its retry", () =>
    Effect.gen(function* () {
      let down = 3
      const { b, calls, inner } = yield* makeStore((store) => ({
        commit: (request) => (down-- > 0 ? Effect.fail(storeError("commit")) : store.commit(request))
      }))
      const r = yield* b.reserve(acme, 2)
      assert.isTrue((yield* r.settle(1.5)).pending)
      // retries at 100, 300 and 700 ms (backing off)
      yield* TestClock.adjust("699 millis")
      assert.strictEqual((yield* inner.balance("acme/total", 699)).committed, 0)
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual((yield* calls).filter((c) => c === "commit").length, 4)
      assert.deepStrictEqual(yield* inner.balance("acme/total", 700), settled(units(1.5)))
    })
  )

  it.effect("a failed release is also swallowed and counted", () =>
    Effect.gen(function* () {
      const failures = Metric.tagged(budgetMetrics.settleFailures, "operation", "release")
      const before = (yield* Metric.value(failures)).count
      const { b, calls } = yield* makeStore(() => ({ release: () => Effect.fail(storeError("release")) }))
      const r = yield* b.reserve(acme, 2)
      yield* r.settle(0)
      yield* r.settle(0)
      assert.deepStrictEqual(yield* calls, ["reserve", "release"])
      assert.strictEqual((yield* Metric.value(failures)).count - before, 1)
    })
  )

  it.effect(
    "interrupting a fiber while the store reserves: the round trip completes, then the reservation is released before the interruption propagates",
    () =>
      Effect.gen(function* () {
        const outcomes = yield* Ref.make<ReadonlyArray<string>>([])
        const { b, calls, inner } = yield* makeStore((inner) => ({
          reserve: (r) =>
            Effect.zipRight(
              Effect.sleep(100),
              Effect.tap(inner.reserve(r), (o) => Ref.update(outcomes, (x) => [...x, o._tag]))
            )
        }))
        const fiber = yield* Effect.fork(b.reserve(acme, 4))
        yield* TestClock.adjust(50)
        const interrupter = yield* Effect.fork(Effect.zipRight(Fiber.interrupt(fiber), Clock.currentTimeMillis))
        yield* TestClock.adjust(49)
        assert.isTrue(Option.isNone(yield* Fiber.poll(interrupter)))
        yield* TestClock.adjust(1)
        // the interruption waited for the store's answer (t = 100), not cut it short at t = 50
        assert.strictEqual(yield* Fiber.join(interrupter), 100)
        const exit = yield* Fiber.await(fiber)
        assert.isTrue(Exit.isInterrupted(exit))
        assert.deepStrictEqual(yield* Ref.get(outcomes), ["Reserved"])
        assert.deepStrictEqual(yield* calls, ["reserve", "release"])
        assert.deepStrictEqual(yield* inner.balance("acme/total", 100), { committed: 0, reserved: 0, overspent: 0 })
      })
  )

  it.effect("a caller that reserves in an uninterruptible region gets the reservation and settles it", () =>
    Effect.gen(function* () {
      const { b, inner } = yield* makeStore((inner) => ({
        reserve: (r) => Effect.zipRight(Effect.sleep(100), inner.reserve(r))
      }))
      const fiber = yield* Effect.fork(
        Effect.acquireUseRelease(
          b.reserve(acme, 4),
          () => Effect.never,
          (r) => r.settle(1)
        )
      )
      yield* TestClock.adjust(50)
      const interrupter = yield* Effect.fork(Fiber.interrupt(fiber))
      yield* TestClock.adjust(50)
      yield* Fiber.join(interrupter)
      assert.isTrue(Exit.isInterrupted(yield* Fiber.await(fiber)))
      assert.deepStrictEqual(yield* inner.balance("acme/total", 100), settled(units(1)))
    })
  )
})

describe("Budgets configuration", () => {
  it.effect("every problem is listed in one GatewayConfigError", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Budgets.make({
          tenants: {
            acme: { limit: 0 },
            globex: { limit: -5, period: "daily" },
            "bad tenant": { limit: 1 },
            huge: { limit: 1e10 },
            nan: { limit: Number.NaN }
          },
          undeclaredTenants: { limit: -1 },
          reservationTtl: 0
        }).pipe(Effect.provide(BudgetStore.layerMemory))
      )
      assert.strictEqual(error._tag, "GatewayConfigError")
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason]),
        [
          ["budgets.tenants.acme.limit", "NON_POSITIVE_LIMIT"],
          ["budgets.tenants.globex.limit", "NON_POSITIVE_LIMIT"],
          ["budgets.tenants.bad tenant", "INVALID_TENANT"],
          ["budgets.tenants.huge.limit", "LIMIT_TOO_LARGE"],
          ["budgets.tenants.nan.limit", "NON_POSITIVE_LIMIT"],
          ["budgets.undeclaredTenants.limit", "NON_POSITIVE_LIMIT"],
          ["budgets.reservationTtl", "NON_POSITIVE_TIMEOUT"]
        ]
      )
    })
  )

  it("no tenants while undeclared tenants are rejected: every call would fail, so it is an error", () => {
    assert.deepStrictEqual(
      BudgetConfig.validate({}).map((p) => p.reason),
      ["NO_TENANTS"]
    )
    assert.deepStrictEqual(BudgetConfig.validate({ undeclaredTenants: "unlimited" }), [])
  })

  it.effect("layerConfig reads the options from Config; JSON decodes with the BudgetsConfig schema", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* spend(b, acme, 2, 2)
      const balance = yield* b.balance(acme)
      assert.deepStrictEqual([balance.limit, balance.period, balance.committed], [2, "daily", 2])
    }).pipe(
      Effect.provide(
        Budgets.layerConfig({
          tenants: Schema.Config(
            "BUDGET_TENANTS",
            Schema.parseJson(Schema.Record({ key: Schema.String, value: Budgets.TenantBudget }))
          )
        }).pipe(
          Layer.provide(BudgetStore.layerMemory),
          Layer.provide(
            Layer.setConfigProvider(
              ConfigProvider.fromMap(new Map([["BUDGET_TENANTS", '{"acme":{"limit":2,"period":"daily"}}']]))
            )
          )
        )
      )
    )
  )

  it("BudgetsConfig decodes JSON (reservationTtl in milliseconds)", () => {
    const decoded = Schema.decodeUnknownSync(BudgetConfig.BudgetsConfig)({
      tenants: { acme: { limit: 5, period: "monthly" } },
      undeclaredTenants: "reject",
      reservationTtl: 120_000
    })
    assert.deepStrictEqual(BudgetConfig.validate(decoded), [])
    assert.throws(() =>
      Schema.decodeUnknownSync(BudgetConfig.BudgetsConfig)({ tenants: { acme: { limit: 5, period: "weekly" } } })
    )
  })
})

describe("Budgets: the synchronous fast path (internal/fastPath: reserve and settle at once)", () => {
  type Outcome = Budgets.Reservation | BudgetExceeded

  /** One way of reserving and settling: through the Effect methods, or through the synchronous ones. */
  interface Path {
    readonly b: Budgets.Service
    readonly reserve: (tenant: TenantId, amount: number) => Effect.Effect<Outcome, StoreError>
    readonly settle: (r: Budgets.Reservation, actual: number) => Effect.Effect<Budgets.Settlement>
    /** Every store operation, with its request and answer, as `[operation, request, answer]`. */
    readonly ops: Array<readonly [string, unknown, unknown]>
    /** Which store methods answered: the Effect ones or the synchronous ones. */
    readonly via: Set<"effect" | "sync">
  }

  /** The memory store, recording each operation and which of its methods (Effect or sync) answered. */
  /** The memory store's synchronous operations (it always has them). */
  const fastOf = (store: BudgetStore.Service): FastPath.BudgetStoreFast => {
    const fast = FastPath.budgetStore(store)
    if (fast === undefined) throw new Error("the memory store has no synchronous operations")
    return fast
  }

  const recordingStore = (
    inner: MemoryStore,
    ops: Array<readonly [string, unknown, unknown]>,
    via: Set<"effect" | "sync">
  ): BudgetStore.Service => {
    const effect =
      <Q, A>(name: string, f: (q: Q) => Effect.Effect<A, StoreError>) =>
      (q: Q) =>
        Effect.tap(f(q), (a) =>
          Effect.sync(() => {
            via.add("effect")
            ops.push([name, q, a])
          })
        )
    const sync =
      <Q, A>(name: string, f: (q: Q) => A) =>
      (q: Q) => {
        const a = f(q)
        via.add("sync")
        ops.push([name, q, a])
        return a
      }
    const reserve = effect("reserve", inner.reserve)
    const commit = effect("commit", inner.commit)
    const release = effect("release", inner.release)
    const fast = fastOf(inner)
    // This store's own synchronous operations, so Budgets may use them.
    return FastPath.attach<BudgetStore.Service>(
      { reserve, commit, release, balance: inner.balance },
      {
        _tag: "BudgetStore",
        reserve: sync("reserve", fast.reserve),
        commit: sync("commit", fast.commit),
        release: sync("release", fast.release)
      }
    )
  }

  const settleNow = (r: Budgets.Reservation) => FastPath.reservation(r)?.settle

  const options: Budgets.Options = {
    tenants: { acme: { limit: 10, period: "daily" } },
    reservationTtl: "1 minute"
  }

  /** Budgets over a recording memory store; the same seed gives both paths the same reservation ids. */
  const makePath = (kind: "effect" | "sync") =>
    Effect.gen(function* () {
      const ops: Array<readonly [string, unknown, unknown]> = []
      const via = new Set<"effect" | "sync">()
      const store = recordingStore(yield* makeMemoryBudgetStore, ops, via)
      const b = yield* Budgets.make(options).pipe(
        Effect.provideService(BudgetStore.BudgetStore, store),
        Effect.withRandom(Random.make("same seed"))
      )
      if (kind === "effect") {
        const path: Path = {
          b,
          ops,
          via,
          reserve: (tenant, amount) =>
            Effect.catchTag(b.reserve(tenant, amount), "BudgetExceeded", (e) => Effect.succeed(e)),
          settle: (r, actual) => r.settle(actual)
        }
        return path
      }
      const reserveNow = FastPath.budgets(b)?.reserve
      if (reserveNow === undefined) return yield* Effect.dieMessage("no synchronous reserve over the memory store")
      const path: Path = {
        b,
        ops,
        via,
        reserve: (tenant, amount) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => reserveNow(tenant, amount, now))),
        settle: (r, actual) =>
          Effect.suspend(() => {
            const settleNow = FastPath.reservation(r)?.settle
            if (settleNow === undefined) return Effect.dieMessage("no synchronous settle over the memory store")
            const settlement = settleNow(actual)
            return settlement.overspent > 0 ? reportOverspend(r.tenant, settlement) : Effect.succeed(settlement)
          })
      }
      return path
    })

  const describeOutcome = (o: Outcome) =>
    o instanceof BudgetExceeded
      ? ["BudgetExceeded", o.tenant, o.limit, units(o.committed), units(o.reserved), o.requested]
      : ["Reservation", o.tenant, units(o.amount)]

  const capture = capturingLogger

  it.effect(
    "the synchronous reserve and settle give the same outcomes, store operations, balances, logs and metrics as reserve and settle",
    () =>
      Effect.gen(function* () {
        // 2026-03-10T23:58:00Z: the daily window changes two minutes in
        yield* TestClock.setTime(Date.UTC(2026, 2, 10, 23, 58))
        const paths = [yield* makePath("effect"), yield* makePath("sync")] as const
        const held: [Array<Budgets.Reservation>, Array<Budgets.Reservation>] = [[], []]
        const traces: [Array<unknown>, Array<unknown>] = [[], []]
        const logs = paths.map(() => capture())
        const overspendBefore = (yield* Metric.value(budgetMetrics.overspend)).count

        /** Runs one step on both paths at the same virtual instant, tracing its outcome and the balance. */
        const step = (name: string, f: (p: Path, i: 0 | 1) => Effect.Effect<unknown, StoreError>) =>
          Effect.forEach([0, 1] as const, (i) =>
            Effect.gen(function* () {
              const p = paths[i]
              const out = yield* f(p, i).pipe(Effect.provide(logs[i]!.layer))
              const bal = yield* p.b.balance(acme)
              traces[i].push([
                name,
                out,
                units(bal.committed),
                units(bal.reserved),
                units(bal.overspent),
                bal.windowStart
              ])
            })
          )
        const reserve = (amount: number, tenant: TenantId = acme) =>
          step(`reserve ${tenant} ${amount}`, (p, i) =>
            Effect.map(p.reserve(tenant, amount), (o) => {
              if (!(o instanceof BudgetExceeded)) held[i].push(o)
              return describeOutcome(o)
            })
          )
        const settle = (index: number, actual: number) =>
          step(`settle #${index} ${actual}`, (p, i) =>
            Effect.map(p.settle(held[i][index]!, actual), (s) => [units(s.committed), units(s.overspent)])
          )

        yield* reserve(4) // #0
        yield* reserve(5) // #1
        yield* reserve(2) // over the limit: 9 reserved
        yield* reserve(1, globex) // undeclared: rejected
        yield* reserve(0) // #2, an empty reservation
        yield* settle(0, 1.25)
        yield* settle(0, 3) // repeated: nothing
        yield* settle(2, 0)
        yield* TestClock.adjust("1 minute") // #1 expires
        yield* reserve(8.75) // #3: fits only because #1 expired
        yield* settle(1, 5) // late commit: all counted, nothing fits, all overspent
        yield* settle(3, Number.NaN) // a non-finite actual charges the whole reservation
        yield* settle(3, 1) // repeated
        yield* TestClock.adjust("1 minute") // a new daily window
        yield* reserve(10) // #4
        yield* settle(4, 0) // a release
        yield* reserve(0.1 + 0.2) // #5: float noise does not round up
        yield* settle(5, 100) // beyond the reservation: all counted, what the limit has no room for overspent

        // both paths agree on everything, and each used its own store methods only
        assert.deepStrictEqual(traces[1], traces[0])
        assert.deepStrictEqual(paths[1].ops, paths[0].ops)
        assert.deepStrictEqual([...paths[0].via], ["effect"])
        assert.deepStrictEqual([...paths[1].via], ["sync"])
        assert.deepStrictEqual(logs[1]!.logs, logs[0]!.logs)
        // and what they agree on is right
        const day = Date.UTC(2026, 2, 10)
        const next = Date.UTC(2026, 2, 11)
        assert.deepStrictEqual(traces[0], [
          ["reserve acme 4", ["Reservation", acme, units(4)], 0, units(4), 0, day],
          ["reserve acme 5", ["Reservation", acme, units(5)], 0, units(9), 0, day],
          ["reserve acme 2", ["BudgetExceeded", acme, 10, 0, units(9), 2], 0, units(9), 0, day],
          ["reserve globex 1", ["BudgetExceeded", globex, 0, 0, 0, 1], 0, units(9), 0, day],
          ["reserve acme 0", ["Reservation", acme, 0], 0, units(9), 0, day],
          ["settle #0 1.25", [units(1.25), 0], units(1.25), units(5), 0, day],
          ["settle #0 3", [0, 0], units(1.25), units(5), 0, day],
          ["settle #2 0", [0, 0], units(1.25), units(5), 0, day],
          ["reserve acme 8.75", ["Reservation", acme, units(8.75)], units(1.25), units(8.75), 0, day],
          ["settle #1 5", [units(5), units(5)], units(6.25), units(8.75), units(5), day],
          ["settle #3 NaN", [units(8.75), 0], units(15), 0, units(5), day],
          ["settle #3 1", [0, 0], units(15), 0, units(5), day],
          ["reserve acme 10", ["Reservation", acme, units(10)], 0, units(10), 0, next],
          ["settle #4 0", [0, 0], 0, 0, 0, next],
          ["reserve acme 0.30000000000000004", ["Reservation", acme, units(0.3)], 0, units(0.3), 0, next],
          ["settle #5 100", [units(100), units(90)], units(100), 0, units(90), next]
        ])
        // one reserve and at most one settle per reservation reached the store
        assert.deepStrictEqual(
          paths[1].ops.map(([op]) => op),
          [
            "reserve",
            "reserve",
            "reserve",
            "reserve",
            "commit",
            "release",
            "reserve",
            "commit",
            "commit",
            "reserve",
            "release",
            "reserve",
            "commit"
          ]
        )
        // each overspend is reported once by each path: a warning each, and the metric twice
        assert.deepStrictEqual(
          logs[1]!.logs.map(([level, , annotations]) => [level, annotations]),
          [
            ["WARN", { tenant: "acme" }],
            ["WARN", { tenant: "acme" }]
          ]
        )
        // A difference of two float sums (the counter is shared by every test in the process).
        assert.closeTo((yield* Metric.value(budgetMetrics.overspend)).count - overspendBefore, 2 * (5 + 90), 1e-9)
      })
  )

  it.effect("a negative or NaN amount: the synchronous reserve throws the defect reserve dies with", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      for (const amount of [-1, Number.NaN]) {
        const died = yield* Effect.exit(b.reserve(acme, amount))
        const thrown = yield* Effect.exit(Effect.sync(() => FastPath.budgets(b)?.reserve(acme, amount, 0)))
        assert.isTrue(Exit.isFailure(died) && Cause.isDie(died.cause))
        assert.deepStrictEqual(
          [thrown._tag, Exit.isFailure(thrown) ? Cause.squash(thrown.cause) : undefined],
          ["Failure", Exit.isFailure(died) ? Cause.squash(died.cause) : undefined]
        )
      }
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 0, reserved: 0 })
    }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect("settle and the synchronous settle share one idempotence: the first of the two counts, once", () =>
    Effect.gen(function* () {
      const ops: Array<readonly [string, unknown, unknown]> = []
      const store = recordingStore(yield* makeMemoryBudgetStore, ops, new Set())
      const b = yield* Budgets.make({ tenants: { acme: { limit: 10, period: "total" } } }).pipe(
        Effect.provideService(BudgetStore.BudgetStore, store)
      )
      const now = yield* Clock.currentTimeMillis
      // a reservation made by reserve also settles at once, and one made at once also settles as an Effect
      const first = yield* b.reserve(acme, 3)
      assert.deepStrictEqual(settleNow(first)?.(1), { committed: 1, overspent: 0 })
      assert.deepStrictEqual(yield* first.settle(2), { committed: 0, overspent: 0 })
      assert.deepStrictEqual(settleNow(first)?.(2), { committed: 0, overspent: 0 })
      const second = FastPath.budgets(b)?.reserve(acme, 3, now)
      assert.isTrue(second !== undefined && !(second instanceof BudgetExceeded))
      if (second === undefined || second instanceof BudgetExceeded) return
      assert.deepStrictEqual(yield* second.settle(2), { committed: 2, overspent: 0 })
      assert.deepStrictEqual(settleNow(second)?.(3), { committed: 0, overspent: 0 })
      assert.deepStrictEqual(
        ops.map(([op]) => op),
        ["reserve", "commit", "reserve", "commit"]
      )
      // the synchronous reserve and reserve share the account: what one holds, the other sees
      const holding = FastPath.budgets(b)?.reserve(acme, 7, now)
      assert.isTrue(holding !== undefined && !(holding instanceof BudgetExceeded))
      const error = failureOf(yield* Effect.exit(b.reserve(acme, 0.01)))
      assert.deepStrictEqual(error?._tag === "BudgetExceeded" ? [error.committed, error.reserved] : error, [3, 7])
    })
  )

  it.effect("the synchronous reserve exists only when nothing can fail or wait: not over a store without one", () =>
    Effect.gen(function* () {
      const inner = yield* makeMemoryBudgetStore
      // a store answering through Effects only (as a remote store would)
      const remote: BudgetStore.Service = {
        reserve: inner.reserve,
        commit: inner.commit,
        release: inner.release,
        balance: inner.balance
      }
      const overRemote = yield* Budgets.make({ tenants: { acme: { limit: 10 } } }).pipe(
        Effect.provideService(BudgetStore.BudgetStore, remote)
      )
      assert.isUndefined(FastPath.budgets(overRemote))
      assert.isUndefined(settleNow(yield* overRemote.reserve(acme, 1)))
      // a wrapper made by spreading the memory store (to count or fail its operations) is not synchronous
      const spread = yield* Budgets.make({ tenants: { acme: { limit: 10 } } }).pipe(
        Effect.provideService(BudgetStore.BudgetStore, { ...inner, reserve: inner.reserve })
      )
      assert.isUndefined(FastPath.budgets(spread))
      // unlimited budgets: always synchronous, and nothing is tracked
      const unlimited = yield* Effect.provide(budgets, Budgets.layerOff)
      const r = FastPath.budgets(unlimited)?.reserve(acme, 1e15, 0)
      assert.isTrue(r !== undefined && !(r instanceof BudgetExceeded))
      if (r === undefined || r instanceof BudgetExceeded) return
      assert.deepStrictEqual([r.tenant, r.amount, settleNow(r)?.(1e15)], [acme, 1e15, { committed: 0, overspent: 0 }])
      // an unlimited tenant over a remote store needs no store, so its reservation settles at once too
      const mixed = yield* Budgets.make({ tenants: { acme: { limit: 10 } }, undeclaredTenants: "unlimited" }).pipe(
        Effect.provideService(BudgetStore.BudgetStore, remote)
      )
      assert.deepStrictEqual(settleNow(yield* mixed.reserve(globex, 5))?.(5), { committed: 0, overspent: 0 })
    })
  )

  it.effect("memory store: the synchronous operations act on the same accounts as the Effect methods", () =>
    Effect.gen(function* () {
      const store = yield* makeMemoryBudgetStore
      const { commit: commitSync, release: releaseSync, reserve: reserveSync } = fastOf(store)
      const req = { account: "a/total", limit: 100, now: 0, expiresAt: 10, accountExpiresAt: Infinity }
      assert.deepStrictEqual(reserveSync({ ...req, id: "1", amount: 60 }), {
        _tag: "Reserved",
        committed: 0,
        reserved: 60
      })
      assert.deepStrictEqual(yield* store.reserve({ ...req, id: "2", amount: 41 }), {
        _tag: "Rejected",
        committed: 0,
        reserved: 60
      })
      // a spend beyond the reservation that still fits the limit: all of it counted, nothing overspent
      assert.deepStrictEqual(yield* store.commit({ account: "a/total", id: "1", amount: 60, spend: 70, limit: 100 }), {
        committed: 70,
        overspent: 0
      })
      assert.deepStrictEqual(reserveSync({ ...req, id: "2", amount: 20 })._tag, "Reserved")
      assert.deepStrictEqual(reserveSync({ ...req, id: "3", amount: 10 })._tag, "Reserved")
      assert.deepStrictEqual(commitSync({ account: "a/total", id: "2", amount: 20, spend: 12, limit: 100 }), {
        committed: 12,
        overspent: 0
      })
      releaseSync({ account: "a/total", id: "3" })
      assert.deepStrictEqual(yield* store.balance("a/total", 0), { committed: 82, reserved: 0, overspent: 0 })
      // id 4 expires at 10: a reserve at 10 no longer sees it, and its late commit counts as by `commit`
      assert.deepStrictEqual(reserveSync({ ...req, id: "4", amount: 18 })._tag, "Reserved")
      assert.deepStrictEqual(reserveSync({ ...req, now: 10, expiresAt: 20, id: "5", amount: 18 })._tag, "Reserved")
      assert.deepStrictEqual(commitSync({ account: "a/total", id: "4", amount: 18, spend: 18, limit: 100 }), {
        committed: 18,
        overspent: 18
      })
      assert.deepStrictEqual(yield* store.balance("a/total", 10), { committed: 100, reserved: 18, overspent: 18 })
    })
  )
})
