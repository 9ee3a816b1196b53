import { assert, describe, it } from "@effect/vitest"
import * as Budgets from "@modelgate/core/Budgets"
import { TenantId } from "@modelgate/core/ModelCommand"
import { ConfigProvider, Effect, Exit, Fiber, Layer, Schema, Scope, TestClock } from "effect"

const acme = TenantId.make("acme")
const globex = TenantId.make("globex")
const units = (x: number) => Math.round(x * Budgets.unitsPerCurrency)

const withBudgets = (options: Budgets.Options) => Effect.provide(Budgets.layerMemory(options))
const budgets = Budgets.Budgets

const balanceUnits = (tenant: TenantId) =>
  Effect.map(
    Effect.flatMap(budgets, (b) => b.balance(tenant)),
    (b) => ({ committed: units(b.committed), reserved: units(b.reserved) })
  )

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

describe("Budgets (memory)", () => {
  it.effect("commit turns at most the reservation into spend and refunds the rest", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* Effect.scoped(
        Effect.gen(function* () {
          const r = yield* b.reserve(acme, 3)
          assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 0, reserved: units(3) })
          yield* r.commit(1.25)
          // idempotent: only the first settlement counts
          yield* r.commit(2)
        })
      )
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: units(1.25), reserved: 0 })
      // spend above the reservation is capped at the reservation
      yield* Effect.scoped(Effect.flatMap(b.reserve(acme, 2), (r) => r.commit(50)))
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: units(3.25), reserved: 0 })
    }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect("leaving the scope without a commit releases everything, also on failure and interruption", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* Effect.scoped(b.reserve(acme, 4))
      yield* Effect.exit(Effect.scoped(Effect.zipRight(b.reserve(acme, 4), Effect.fail("boom"))))
      const fiber = yield* Effect.fork(Effect.scoped(Effect.zipRight(b.reserve(acme, 4), Effect.never)))
      yield* TestClock.adjust(10)
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 0, reserved: units(4) })
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(yield* balanceUnits(acme), { committed: 0, reserved: 0 })
    }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect(
    "a reservation that does not fit fails with BudgetExceeded naming tenant, limit, committed, reserved, requested",
    () =>
      Effect.gen(function* () {
        const b = yield* budgets
        yield* Effect.scoped(Effect.flatMap(b.reserve(acme, 4), (r) => r.commit(4)))
        const exit = yield* Effect.scoped(
          Effect.gen(function* () {
            yield* b.reserve(acme, 3)
            return yield* Effect.exit(b.reserve(acme, 3.5))
          })
        )
        const error = failureOf(exit)
        assert.strictEqual(error?._tag, "BudgetExceeded")
        assert.deepStrictEqual(
          error && {
            tenant: error.tenant,
            limit: error.limit,
            committed: error.committed,
            reserved: error.reserved,
            requested: error.requested
          },
          { tenant: acme, limit: 10, committed: 4, reserved: 3, requested: 3.5 }
        )
        // the failed reservation left nothing behind; exactly the rest still fits
        assert.deepStrictEqual(yield* balanceUnits(acme), { committed: units(4), reserved: 0 })
        yield* Effect.scoped(b.reserve(acme, 6))
      }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect("undeclared tenants are rejected by default (limit 0), before anything is reserved", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      const error = failureOf(yield* Effect.exit(Effect.scoped(b.reserve(globex, 0.01))))
      assert.strictEqual(error?._tag, "BudgetExceeded")
      assert.strictEqual(error?.limit, 0)
      assert.strictEqual(error?.tenant, globex)
    }).pipe(withBudgets({ tenants: { acme: { limit: 10 } } }))
  )

  it.effect("undeclared tenants with a default budget each get an account of their own", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* Effect.scoped(Effect.flatMap(b.reserve(globex, 1), (r) => r.commit(1)))
      const other = TenantId.make("initech")
      yield* Effect.scoped(Effect.flatMap(b.reserve(other, 1), (r) => r.commit(1)))
      assert.strictEqual((yield* b.balance(globex)).committed, 1)
      assert.strictEqual((yield* b.balance(other)).committed, 1)
      assert.strictEqual(failureOf(yield* Effect.exit(Effect.scoped(b.reserve(globex, 0.5))))?._tag, "BudgetExceeded")
    }).pipe(withBudgets({ undeclaredTenants: { limit: 1, period: "total" } }))
  )

  it.effect("undeclared tenants may be unlimited", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* Effect.scoped(b.reserve(globex, 1e12))
      assert.strictEqual((yield* b.balance(globex)).limit, Infinity)
    }).pipe(withBudgets({ tenants: { acme: { limit: 1 } }, undeclaredTenants: "unlimited" }))
  )

  it.effect("daily windows reset at 00:00 UTC; a reservation settles into the window it was made in", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      // 2026-03-10T23:59:00Z
      yield* TestClock.setTime(Date.UTC(2026, 2, 10, 23, 59))
      yield* Effect.scoped(Effect.flatMap(b.reserve(acme, 4), (r) => r.commit(4)))
      const scope = yield* Scope.make()
      const late = yield* Scope.extend(b.reserve(acme, 1), scope)
      assert.strictEqual(failureOf(yield* Effect.exit(Effect.scoped(b.reserve(acme, 0.5))))?._tag, "BudgetExceeded")
      yield* TestClock.adjust("1 minute")
      const today = yield* b.balance(acme)
      assert.deepStrictEqual(
        [today.windowStart, today.windowEnd, today.committed, today.reserved],
        [Date.UTC(2026, 2, 11), Date.UTC(2026, 2, 12), 0, 0]
      )
      // the new day has its whole limit
      yield* Effect.scoped(Effect.flatMap(b.reserve(acme, 5), (r) => r.commit(3)))
      // yesterday's reservation commits into yesterday
      yield* late.commit(1)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual((yield* b.balance(acme)).committed, 3)
      yield* TestClock.setTime(Date.UTC(2026, 2, 10, 12))
      assert.strictEqual((yield* b.balance(acme)).committed, 5)
    }).pipe(withBudgets({ tenants: { acme: { limit: 5, period: "daily" } } }))
  )

  it.effect("monthly windows follow calendar months in UTC", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* TestClock.setTime(Date.UTC(2028, 1, 29, 12))
      yield* Effect.scoped(Effect.flatMap(b.reserve(acme, 2), (r) => r.commit(2)))
      const feb = yield* b.balance(acme)
      assert.deepStrictEqual(
        [feb.windowStart, feb.windowEnd, feb.committed],
        [Date.UTC(2028, 1, 1), Date.UTC(2028, 2, 1), 2]
      )
      yield* TestClock.setTime(Date.UTC(2028, 2, 1))
      assert.strictEqual((yield* b.balance(acme)).committed, 0)
      assert.deepStrictEqual(Budgets.windowOf("monthly", Date.UTC(2028, 11, 31, 23, 59)), {
        key: "m2028-12",
        start: Date.UTC(2028, 11, 1),
        end: Date.UTC(2029, 0, 1)
      })
    }).pipe(withBudgets({ tenants: { acme: { limit: 2 } } }))
  )

  it.effect("the reservation of a crashed holder expires after reservationTtl and frees its amount", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      // a holder whose scope never closes (its process died)
      const scope = yield* Scope.make()
      yield* Scope.extend(b.reserve(acme, 8), scope)
      assert.strictEqual(failureOf(yield* Effect.exit(Effect.scoped(b.reserve(acme, 8))))?._tag, "BudgetExceeded")
      yield* TestClock.adjust("59999 millis")
      assert.strictEqual((yield* b.balance(acme)).reserved, 8)
      yield* TestClock.adjust("1 millis")
      assert.strictEqual((yield* b.balance(acme)).reserved, 0)
      yield* Effect.scoped(b.reserve(acme, 8))
    }).pipe(withBudgets({ tenants: { acme: { limit: 10, period: "total" } }, reservationTtl: "1 minute" }))
  )

  it.effect("memory store: accounts of finished windows are forgotten once they hold nothing", () =>
    Effect.gen(function* () {
      const store = yield* Budgets.makeStoreMemory
      const b = yield* Budgets.make({
        undeclaredTenants: { limit: 1, period: "daily" },
        reservationTtl: "1 minute"
      }).pipe(Effect.provideService(Budgets.BudgetStore, store))
      for (let i = 0; i < 1_000; i++) {
        yield* Effect.scoped(Effect.flatMap(b.reserve(TenantId.make(`t${i}`), 0.5), (r) => r.commit(0.1)))
      }
      assert.strictEqual(yield* store.size, 1_000)
      yield* TestClock.adjust("1 day")
      yield* TestClock.adjust("1 minute")
      yield* Effect.scoped(b.reserve(acme, 0.5))
      assert.strictEqual(yield* store.size, 1)
    })
  )

  it.effect(
    "memory store: reserve is all-or-nothing; unknown ids are ignored; an expired reservation's spend still counts",
    () =>
      Effect.gen(function* () {
        const store = yield* Budgets.makeStoreMemory
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
        yield* store.commit({ account: "a/total", id: "nope", amount: 0, spend: 0 })
        assert.deepStrictEqual(yield* store.balance("a/total", 0), { committed: 0, reserved: 60 })
        // id 1 expires at 10: a reserve at 10 no longer sees it
        assert.deepStrictEqual(yield* store.reserve({ ...req, now: 10, expiresAt: 20, id: "3", amount: 100 }), {
          _tag: "Reserved",
          committed: 0,
          reserved: 100
        })
        yield* store.commit({ account: "a/total", id: "1", amount: 60, spend: 70 })
        assert.deepStrictEqual(yield* store.balance("a/total", 10), { committed: 60, reserved: 100 })
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
        }).pipe(Effect.provide(Budgets.layerStoreMemory))
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
      Budgets.validate({}).map((p) => p.reason),
      ["NO_TENANTS"]
    )
    assert.deepStrictEqual(Budgets.validate({ undeclaredTenants: "unlimited" }), [])
  })

  it.effect("layerConfig reads the options from Config; JSON decodes with the BudgetsConfig schema", () =>
    Effect.gen(function* () {
      const b = yield* budgets
      yield* Effect.scoped(Effect.flatMap(b.reserve(acme, 2), (r) => r.commit(2)))
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
          Layer.provide(Budgets.layerStoreMemory),
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
    const decoded = Schema.decodeUnknownSync(Budgets.BudgetsConfig)({
      tenants: { acme: { limit: 5, period: "monthly" } },
      undeclaredTenants: "reject",
      reservationTtl: 120_000
    })
    assert.deepStrictEqual(Budgets.validate(decoded), [])
    assert.throws(() =>
      Schema.decodeUnknownSync(Budgets.BudgetsConfig)({ tenants: { acme: { limit: 5, period: "weekly" } } })
    )
  })
})
