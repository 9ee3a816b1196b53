import { assert, describe, it } from "@effect/vitest"
import * as Concurrency from "@modelgate/core/Concurrency"
import { TenantId } from "@modelgate/core/ModelCommand"
import { TargetRef } from "@modelgate/core/ModelTarget"
import { Clock, ConfigProvider, Deferred, Effect, Fiber, Layer, Option, Ref, Schema, TestClock } from "effect"

const A = TenantId.make("tenant-a")
const B = TenantId.make("tenant-b")
const C = TenantId.make("tenant-c")

const service = Concurrency.Concurrency
const snapshot = Effect.flatMap(service, (c) => c.snapshot)

/**
 * Forks a job that holds a permit of `tenant` for `holdMs` virtual millis, and logs
 * `[label, acquiredAt]` when it gets the permit.
 */
const job = (log: Ref.Ref<ReadonlyArray<readonly [string, number]>>, tenant: TenantId, label: string, holdMs: number) =>
  Effect.fork(
    Effect.scoped(
      Effect.gen(function* () {
        const c = yield* service
        yield* c.acquire(tenant, "wf")
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(log, (all) => [...all, [label, now] as const])
        yield* Effect.sleep(holdMs)
      })
    )
  )

describe("Concurrency (memory)", () => {
  it.effect(
    "reserved permits first, then the shared pool, up to the tenant's max; saturating A never blocks B's reserve",
    () =>
      Effect.gen(function* () {
        const log = yield* Ref.make<ReadonlyArray<readonly [string, number]>>([])
        // permits 4 = A reserved 1 + B reserved 1 + shared 2; A may hold 3 (its max)
        for (let i = 1; i <= 5; i++) yield* job(log, A, `a${i}`, 1_000)
        yield* TestClock.adjust(10)
        let s = yield* snapshot
        assert.deepStrictEqual([s.inUse, s.sharedInUse, s.waiting], [3, 2, 2])
        // the shared pool is full and A is at its max, yet B starts at once on its reserved permit
        yield* job(log, B, "b1", 1_000)
        // B's second call needs the shared pool: it waits behind A's waiters for a shared permit
        yield* job(log, B, "b2", 1_000)
        yield* TestClock.adjust(1)
        s = yield* snapshot
        assert.deepStrictEqual([s.inUse, s.sharedInUse, s.waiting], [4, 2, 3])
        yield* TestClock.adjust(3_000)
        assert.deepStrictEqual(yield* Ref.get(log), [
          ["a1", 0],
          ["a2", 0],
          ["a3", 0],
          ["b1", 10],
          // at 1000 A's three permits come back one by one: FIFO hands them to a4 and a5 (A is below
          // its max again each time) and the last to b2
          ["a4", 1_000],
          ["a5", 1_000],
          ["b2", 1_000]
        ])
        s = yield* snapshot
        assert.deepStrictEqual([s.inUse, s.waiting, s.tenants], [0, 0, 0])
      }).pipe(
        Effect.provide(
          Concurrency.layerMemory({ permits: 4, tenants: { [A]: { reserved: 1, max: 3 }, [B]: { reserved: 1 } } })
        )
      )
  )

  it.effect("waiting is FIFO per tenant and across tenants for the shared pool", () =>
    Effect.gen(function* () {
      const log = yield* Ref.make<ReadonlyArray<readonly [string, number]>>([])
      yield* job(log, A, "a1", 100)
      yield* TestClock.adjust(1)
      yield* job(log, B, "b1", 100)
      yield* TestClock.adjust(1)
      yield* job(log, A, "a2", 100)
      yield* TestClock.adjust(1)
      yield* job(log, C, "c1", 100)
      yield* TestClock.adjust(1)
      yield* job(log, B, "b2", 100)
      yield* TestClock.adjust(1_000)
      assert.deepStrictEqual(yield* Ref.get(log), [
        ["a1", 0],
        ["b1", 100],
        ["a2", 200],
        ["c1", 300],
        ["b2", 400]
      ])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("a wait bounded by a timeout leaves no waiter and no tenant state behind", () =>
    Effect.gen(function* () {
      const c = yield* service
      const log = yield* Ref.make<ReadonlyArray<readonly [string, number]>>([])
      yield* job(log, A, "a1", 1_000)
      yield* TestClock.adjust(1)
      const waiter = yield* Effect.fork(
        Effect.scoped(Effect.map(Effect.timeoutOption(c.acquire(B, "wf"), "300 millis"), Option.isSome))
      )
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* snapshot).waiting, 1)
      yield* TestClock.adjust(299)
      assert.isFalse(yield* Fiber.join(waiter))
      const s = yield* snapshot
      assert.deepStrictEqual([s.inUse, s.waiting, s.tenants, [...s.byTenant.keys()]], [1, 0, 1, [A]])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("a permit granted to a waiter that is interrupted at the same moment is not lost", () =>
    Effect.gen(function* () {
      const c = yield* service
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(
        Effect.scoped(
          Effect.zipRight(
            c.acquire(A, "wf"),
            Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(release))
          )
        )
      )
      yield* Deferred.await(holding)
      const waiter = yield* Effect.fork(Effect.scoped(Effect.zipRight(c.acquire(A, "wf"), Effect.never)))
      yield* Effect.yieldNow()
      // release hands the permit to the waiter, which is interrupted before it can run
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.interrupt(waiter)
      const s = yield* snapshot
      assert.deepStrictEqual([s.inUse, s.waiting, s.tenants], [0, 0, 0])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("memory stays bounded with many tenants: idle tenants have no state", () =>
    Effect.gen(function* () {
      const c = yield* service
      for (let i = 0; i < 10_000; i++) yield* Effect.scoped(c.acquire(TenantId.make(`t${i}`), "wf"))
      assert.strictEqual((yield* snapshot).tenants, 0)
      const fibers = yield* Effect.forEach([1, 2, 3], (i) =>
        Effect.fork(Effect.scoped(Effect.zipRight(c.acquire(TenantId.make(`h${i}`), "wf"), Effect.never)))
      )
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* snapshot).tenants, 3)
      yield* Fiber.interruptAll(fibers)
      assert.strictEqual((yield* snapshot).tenants, 0)
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 8 })))
  )

  it.effect("undeclared tenants share the pool up to undeclaredMax", () =>
    Effect.gen(function* () {
      const log = yield* Ref.make<ReadonlyArray<readonly [string, number]>>([])
      yield* job(log, C, "c1", 100)
      yield* job(log, C, "c2", 100)
      yield* job(log, C, "c3", 100)
      yield* TestClock.adjust(1_000)
      assert.deepStrictEqual(yield* Ref.get(log), [
        ["c1", 0],
        ["c2", 0],
        ["c3", 100]
      ])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 4, undeclaredMax: 2 })))
  )

  it.effect("per-target caps: waits at most maxWait, then reports false", () =>
    Effect.gen(function* () {
      const c = yield* service
      const ref = TargetRef.make("model://vllm/llama@eu")
      const attempt = (holdMs: number, maxWaitMs: number) =>
        Effect.fork(
          Effect.scoped(
            Effect.gen(function* () {
              const got = yield* c.acquireTarget(ref, maxWaitMs)
              const at = yield* Clock.currentTimeMillis
              if (got) yield* Effect.sleep(holdMs)
              return [got, at] as const
            })
          )
        )
      const first = yield* attempt(500, 0)
      yield* TestClock.adjust(1)
      const second = yield* attempt(100, 1_000)
      const third = yield* attempt(100, 200)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual((yield* snapshot).targets.get(ref), { inUse: 1, waiting: 2 })
      yield* TestClock.adjust(1_000)
      assert.deepStrictEqual(yield* Fiber.join(first), [true, 0])
      assert.deepStrictEqual(yield* Fiber.join(second), [true, 500])
      assert.deepStrictEqual(yield* Fiber.join(third), [false, 201])
      // an uncapped target never waits
      assert.isTrue(yield* Effect.scoped(c.acquireTarget(TargetRef.make("model://x/y@eu"), 0)))
      assert.deepStrictEqual((yield* snapshot).targets.get(ref), { inUse: 0, waiting: 0 })
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 8, targets: { "model://vllm/llama@eu": 1 } })))
  )
})

describe("Concurrency configuration", () => {
  it.effect("every problem is listed in one GatewayConfigError", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        Concurrency.make({
          permits: 4,
          tenants: {
            a: { reserved: 3, max: 2 },
            b: { reserved: 2, max: 0 },
            c: { reserved: -1 },
            d: { reserved: 1.5 },
            "bad tenant": {}
          },
          undeclaredMax: 0,
          targets: { "model://x/y@eu": 0 }
        })
      )
      assert.deepStrictEqual(
        error.problems.map((p) => [p.path, p.reason]),
        [
          ["concurrency.tenants.a.max", "MAX_BELOW_RESERVED"],
          ["concurrency.tenants.b.max", "NON_POSITIVE_LIMIT"],
          ["concurrency.tenants.c.reserved", "NEGATIVE_LIMIT"],
          ["concurrency.tenants.d.reserved", "NOT_AN_INTEGER"],
          ["concurrency.tenants.bad tenant", "INVALID_TENANT"],
          ["concurrency.tenants", "RESERVED_ABOVE_POOL"],
          ["concurrency.undeclaredMax", "NON_POSITIVE_LIMIT"],
          ["concurrency.targets.model://x/y@eu", "NON_POSITIVE_LIMIT"]
        ]
      )
    })
  )

  it("zero permits, and a max nobody could reach, are errors", () => {
    assert.deepStrictEqual(
      Concurrency.validate({ permits: 0 }).map((p) => p.reason),
      ["NON_POSITIVE_LIMIT"]
    )
    assert.deepStrictEqual(
      Concurrency.validate({ permits: 4, tenants: { a: { reserved: 1, max: 5 } }, undeclaredMax: 4 }).map((p) => [
        p.path,
        p.reason
      ]),
      [
        ["concurrency.tenants.a.max", "MAX_ABOVE_CAPACITY"],
        ["concurrency.undeclaredMax", "MAX_ABOVE_CAPACITY"]
      ]
    )
    assert.deepStrictEqual(
      Concurrency.validate({ permits: 6, tenants: { a: { reserved: 2, max: 4 }, b: { reserved: 2 } } }),
      []
    )
  })

  it.effect("layerConfig reads the options from Config", () =>
    Effect.gen(function* () {
      const c = yield* service
      yield* Effect.scoped(
        Effect.zipRight(
          c.acquire(A, "wf"),
          Effect.flatMap(snapshot, (s) => Effect.sync(() => assert.strictEqual(s.inUse, 1)))
        )
      )
    }).pipe(
      Effect.provide(
        Concurrency.layerConfig({ permits: Schema.Config("PERMITS", Schema.NumberFromString) }).pipe(
          Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["PERMITS", "2"]]))))
        )
      )
    )
  )
})
