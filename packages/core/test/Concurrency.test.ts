import { assert, describe, it } from "@effect/vitest"
import * as Concurrency from "@modelgate/core/Concurrency"
import * as PermitStore from "@modelgate/core/PermitStore"
import { TenantId } from "@modelgate/core/ModelCommand"
import { TargetRef } from "@modelgate/core/ModelTarget"
import type { StoreError } from "@modelgate/core/Errors"
import { Clock, ConfigProvider, Deferred, Effect, Fiber, FiberId, Layer, Schema, TestClock } from "effect"
import * as FastPath from "../src/internal/fastPath.js"
import * as ConcurrencyConfig from "../src/internal/concurrencyConfig.js"
import { noopPermit } from "../src/internal/permitTypes.js"
import { grantsAfter, makePermitLog, type PermitLog, permitJob } from "./fixtures.js"

const A = TenantId.make("tenant-a")
const B = TenantId.make("tenant-b")
const C = TenantId.make("tenant-c")

const service = Concurrency.Concurrency
const snapshot = Effect.flatMap(service, (c) => c.snapshot)
/** Asserts no permit is in use, nobody waits and no tenant has state. */
const assertIdle = Effect.map(snapshot, (s) => assert.deepStrictEqual([s.inUse, s.waiting, s.tenants], [0, 0, 0]))

/** Forks a job of workflow "wf" holding a permit of `tenant` for `holdMs`; logs `[label, acquiredAt]`. */
const job = (log: PermitLog, tenant: TenantId, label: string, holdMs: number) =>
  permitJob(log, tenant, "wf", label, holdMs)

/** Waits for a permit of `tenant` until `until`; returns whether one came and when the wait ended. */
const waitUntil = (tenant: TenantId, until: number) =>
  Effect.gen(function* () {
    const c = yield* service
    const permit = yield* c.acquire(tenant, "wf", until)
    return [permit, yield* Clock.currentTimeMillis] as const
  })

/** Lets every forked fiber run until it is suspended (registers its sleeps), without moving time. */
const settle = TestClock.adjust(0)

describe("Concurrency (memory)", () => {
  it.effect(
    "reserved permits first, then the shared pool, up to the tenant's max; saturating A never blocks B's reserve",
    () =>
      Effect.gen(function* () {
        const log = yield* makePermitLog
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
        assert.deepStrictEqual(yield* grantsAfter(log, 3_000), [
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
        yield* assertIdle
      }).pipe(
        Effect.provide(
          Concurrency.layerMemory({ permits: 4, tenants: { [A]: { reserved: 1, max: 3 }, [B]: { reserved: 1 } } })
        )
      )
  )

  it.effect("waiting is FIFO per tenant and across tenants for the shared pool", () =>
    Effect.gen(function* () {
      const log = yield* makePermitLog
      yield* job(log, A, "a1", 100)
      yield* TestClock.adjust(1)
      yield* job(log, B, "b1", 100)
      yield* TestClock.adjust(1)
      yield* job(log, A, "a2", 100)
      yield* TestClock.adjust(1)
      yield* job(log, C, "c1", 100)
      yield* TestClock.adjust(1)
      yield* job(log, B, "b2", 100)
      assert.deepStrictEqual(yield* grantsAfter(log, 1_000), [
        ["a1", 0],
        ["b1", 100],
        ["a2", 200],
        ["c1", 300],
        ["b2", 400]
      ])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("a wait bounded by `until` ends with no permit at exactly `until`, leaving no waiter or tenant state", () =>
    Effect.gen(function* () {
      const log = yield* makePermitLog
      yield* job(log, A, "a1", 1_000)
      yield* TestClock.adjust(1)
      const waiter = yield* Effect.fork(waitUntil(B, 301))
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* snapshot).waiting, 1)
      yield* TestClock.adjust(298)
      assert.isNull(waiter.unsafePoll(), "still waiting at 300")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* Fiber.join(waiter), [undefined, 301])
      const s = yield* snapshot
      assert.deepStrictEqual([s.inUse, s.waiting, s.tenants, [...s.byTenant.keys()]], [1, 0, 1, [A]])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  for (const first of ["the release", "the waiter's timer"] as const) {
    it.effect(`tie rule: a permit freed at exactly \`until\` goes to the next waiter (${first} runs first)`, () =>
      Effect.gen(function* () {
        const c = yield* service
        const held = yield* c.acquire(A, "wf", 0)
        assert.isDefined(held)
        const release = Effect.zipRight(
          Effect.sleep(300),
          Effect.sync(() => held?.release())
        )
        // TestClock wakes same-instant sleeps latest-registered first: order the registrations so
        // that each variant runs the other event first.
        let bounded: Fiber.RuntimeFiber<readonly [Concurrency.Permit | undefined, number], StoreError>
        if (first === "the release") {
          bounded = yield* Effect.fork(waitUntil(B, 300))
          yield* settle
          yield* Effect.fork(release)
        } else {
          yield* Effect.fork(release)
          yield* settle
          bounded = yield* Effect.fork(waitUntil(B, 300))
        }
        yield* settle
        const next = yield* Effect.fork(waitUntil(C, Number.POSITIVE_INFINITY))
        yield* settle
        assert.strictEqual((yield* snapshot).waiting, 2)
        yield* TestClock.adjust(300)
        assert.deepStrictEqual(yield* Fiber.join(bounded), [undefined, 300])
        const [permit, at] = yield* Fiber.join(next)
        assert.deepStrictEqual([permit !== undefined, at], [true, 300])
        const s = yield* snapshot
        assert.deepStrictEqual([s.inUse, s.waiting, [...s.byTenant.keys()]], [1, 0, [C]])
        permit?.release()
        assert.strictEqual((yield* snapshot).tenants, 0)
      }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
    )
  }

  it.effect("a bounded waiter granted before `until` holds its permit and leaves no timer running", () =>
    Effect.gen(function* () {
      const c = yield* service
      const held = yield* c.acquire(A, "wf", 0)
      const got = yield* Deferred.make<readonly [Concurrency.Permit | undefined, number]>()
      // the waiting fiber lives on after its grant, so a timer it forked would still be its child
      const waiter = yield* Effect.fork(
        Effect.zipRight(
          Effect.flatMap(waitUntil(B, 1_000), (result) => Deferred.succeed(got, result)),
          Effect.never
        )
      )
      yield* TestClock.adjust(10)
      held?.release()
      const [permit, at] = yield* Deferred.await(got)
      assert.deepStrictEqual([permit !== undefined, at], [true, 10])
      yield* settle
      assert.deepStrictEqual(yield* Fiber.children(waiter), [])
      // its `until` passing changes nothing
      yield* TestClock.adjust(2_000)
      assert.deepStrictEqual([(yield* snapshot).inUse, [...(yield* snapshot).byTenant.keys()]], [1, [B]])
      permit?.release()
      permit?.release()
      assert.deepStrictEqual([(yield* snapshot).inUse, (yield* snapshot).tenants], [0, 0])
      yield* Fiber.interrupt(waiter)
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("interrupting waiters (bounded or not) leaves no waiter, no permit and no tenant state", () =>
    Effect.gen(function* () {
      const c = yield* service
      const held = yield* c.acquire(A, "wf", 0)
      const bounded = yield* Effect.fork(waitUntil(B, 1_000))
      const unbounded = yield* Effect.fork(waitUntil(C, Number.POSITIVE_INFINITY))
      yield* TestClock.adjust(10)
      assert.strictEqual((yield* snapshot).waiting, 2)
      yield* Fiber.interrupt(bounded)
      yield* Fiber.interrupt(unbounded)
      const s = yield* snapshot
      assert.deepStrictEqual([s.inUse, s.waiting, s.tenants, [...s.byTenant.keys()]], [1, 0, 1, [A]])
      // the freed permit finds no ghost waiter, and the bounded waiter's `until` does nothing
      held?.release()
      yield* TestClock.adjust(2_000)
      yield* assertIdle
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it("the fast path is synchronous: a free permit is taken without a fiber, a timer or a scope", () => {
    const c = Effect.runSync(Concurrency.make({ permits: 2 }))
    // `runSync` throws on anything asynchronous: this is one synchronous step
    const p1 = Effect.runSync(c.acquire(A, "wf", 0))
    const p2 = Effect.runSync(c.acquire(B, "wf", 0))
    assert.isDefined(p1)
    assert.isDefined(p2)
    // none free and `until` already past: no wait at all
    assert.isUndefined(Effect.runSync(c.acquire(C, "wf", 0)))
    assert.strictEqual(Effect.runSync(c.snapshot).inUse, 2)
    // release is synchronous and idempotent
    p1?.release()
    p1?.release()
    assert.strictEqual(Effect.runSync(c.snapshot).inUse, 1)
    p2?.release()
    assert.deepStrictEqual([Effect.runSync(c.snapshot).inUse, Effect.runSync(c.snapshot).tenants], [0, 0])
  })

  it.effect("a permit granted to a waiter that is interrupted at the same moment is not lost", () =>
    Effect.gen(function* () {
      const holding = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(
        Concurrency.withPermit(A, "wf")(Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(release)))
      )
      yield* Deferred.await(holding)
      const waiter = yield* Effect.fork(Concurrency.withPermit(A, "wf")(Effect.never))
      yield* Effect.yieldNow()
      // release hands the permit to the waiter, which is interrupted before it can run
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.interrupt(waiter)
      yield* assertIdle
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("a waiter interrupted just before its grant is processed gives the permit back", () =>
    Effect.gen(function* () {
      const c = yield* service
      const held = yield* c.acquire(A, "wf", 0)
      const waiter = yield* Effect.fork(Concurrency.withPermit(A, "wf")(Effect.never))
      yield* settle
      // In one synchronous step: the interrupt reaches the waiter's mailbox first, then the grant.
      yield* Effect.sync(() => {
        waiter.unsafeInterruptAsFork(FiberId.none)
        held?.release()
      })
      yield* Fiber.await(waiter)
      yield* assertIdle
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("memory stays bounded with many tenants: idle tenants have no state", () =>
    Effect.gen(function* () {
      const c = yield* service
      for (let i = 0; i < 10_000; i++) {
        const permit = yield* c.acquire(TenantId.make(`t${i}`), "wf", 0)
        permit?.release()
      }
      assert.strictEqual((yield* snapshot).tenants, 0)
      const fibers = yield* Effect.forEach([1, 2, 3], (i) =>
        Effect.fork(Concurrency.withPermit(TenantId.make(`h${i}`), "wf")(Effect.never))
      )
      yield* TestClock.adjust(1)
      assert.strictEqual((yield* snapshot).tenants, 3)
      yield* Fiber.interruptAll(fibers)
      assert.strictEqual((yield* snapshot).tenants, 0)
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 8 })))
  )

  it.effect("undeclared tenants share the pool up to undeclaredMax", () =>
    Effect.gen(function* () {
      const log = yield* makePermitLog
      yield* job(log, C, "c1", 100)
      yield* job(log, C, "c2", 100)
      yield* job(log, C, "c3", 100)
      assert.deepStrictEqual(yield* grantsAfter(log, 1_000), [
        ["c1", 0],
        ["c2", 0],
        ["c3", 100]
      ])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 4, undeclaredMax: 2 })))
  )

  it.effect("per-target caps: waits at most until `until`, then reports no permit", () =>
    Effect.gen(function* () {
      const c = yield* service
      const ref = TargetRef.make("model://vllm/llama@eu")
      const attempt = (holdMs: number, maxWaitMs: number) =>
        Effect.fork(
          Effect.gen(function* () {
            const start = yield* Clock.currentTimeMillis
            const permit = yield* c.acquireTarget(ref, start + maxWaitMs)
            const at = yield* Clock.currentTimeMillis
            if (permit !== undefined) {
              yield* Effect.sleep(holdMs)
              permit.release()
            }
            return [permit !== undefined, at] as const
          })
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
      // an uncapped target never waits: it gets the shared no-op permit
      assert.strictEqual(yield* c.acquireTarget(TargetRef.make("model://x/y@eu"), 0), noopPermit)
      assert.deepStrictEqual((yield* snapshot).targets.get(ref), { inUse: 0, waiting: 0 })
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 8, targets: { "model://vllm/llama@eu": 1 } })))
  )
})

describe("Concurrency: the synchronous step (internal/fastPath: acquire / acquireTarget at once)", () => {
  const stepOf = (c: Concurrency.Service) => FastPath.concurrency(c)
  it.effect("the synchronous step takes a free permit at once and never jumps ahead of a queued waiter", () =>
    Effect.gen(function* () {
      const c = yield* service
      const fast = stepOf(c)
      if (fast === undefined) return assert.fail("no synchronous step in memory")
      const tryAcquire = (tenant: TenantId, _capability: string) => fast.acquire(tenant)
      const held = tryAcquire(A, "wf")
      assert.isDefined(held)
      // none free: the caller must wait, and nothing is left behind
      assert.isUndefined(tryAcquire(B, "wf"))
      let s = yield* snapshot
      assert.deepStrictEqual([s.inUse, s.waiting, s.tenants], [1, 0, 1])
      // B queues through acquire
      const waiter = yield* Effect.fork(waitUntil(B, Number.POSITIVE_INFINITY))
      yield* settle
      assert.strictEqual((yield* snapshot).waiting, 1)
      assert.isUndefined(tryAcquire(C, "wf"))
      assert.isUndefined(tryAcquire(B, "wf"))
      // the freed permit goes to the waiter, not to a caller of tryAcquire that came later
      held?.release()
      assert.isUndefined(tryAcquire(C, "wf"))
      yield* TestClock.adjust(5)
      const [granted, at] = yield* Fiber.join(waiter)
      assert.deepStrictEqual([granted !== undefined, at], [true, 0])
      s = yield* snapshot
      assert.deepStrictEqual([s.inUse, s.waiting, [...s.byTenant.keys()]], [1, 0, [B]])
      granted?.release()
      const next = tryAcquire(C, "wf")
      assert.isDefined(next)
      next?.release()
      yield* assertIdle
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 1 })))
  )

  it.effect("the synchronous step waits behind its own tenant's waiters even when the shared pool has room", () =>
    Effect.gen(function* () {
      const c = yield* service
      const fast = stepOf(c)
      if (fast === undefined) return assert.fail("no synchronous step in memory")
      const tryAcquire = (tenant: TenantId, _capability: string) => fast.acquire(tenant)
      // A may hold 1 permit; the pool has 2
      const held = tryAcquire(A, "wf")
      const waiter = yield* Effect.fork(waitUntil(A, Number.POSITIVE_INFINITY))
      yield* settle
      // B uses the shared room; A's later call does not jump ahead of A's waiter
      const other = tryAcquire(B, "wf")
      assert.isDefined(other)
      assert.isUndefined(tryAcquire(A, "wf"))
      held?.release()
      const [granted] = yield* Fiber.join(waiter)
      assert.isDefined(granted)
      assert.isUndefined(tryAcquire(A, "wf"))
      granted?.release()
      other?.release()
      assert.deepStrictEqual((yield* snapshot).tenants, 0)
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 2, tenants: { [A]: { max: 1 } } })))
  )

  it.effect("the synchronous step gives the same permits and state as the fast path of acquire", () =>
    Effect.gen(function* () {
      const options: Concurrency.Options = {
        permits: 4,
        tenants: { [A]: { reserved: 1, max: 2 }, [B]: { reserved: 1 } },
        undeclaredMax: 1,
        targets: { "model://vllm/llama@eu": 2 }
      }
      const viaEffect = yield* Concurrency.make(options)
      const viaSync = yield* Concurrency.make(options)
      const capped = TargetRef.make("model://vllm/llama@eu")
      const uncapped = TargetRef.make("model://x/y@eu")
      const heldEffect: Array<Concurrency.Permit> = []
      const heldSync: Array<Concurrency.Permit> = []
      const states = (c: Concurrency.Service) =>
        Effect.map(c.snapshot, (s) => [s.inUse, s.sharedInUse, s.waiting, [...s.byTenant], [...s.targets]])
      // At virtual time 0 an `acquire` with `until` 0 never waits: it is exactly its synchronous step.
      const steps: ReadonlyArray<TenantId | TargetRef | number> = [A, A, A, B, B, B, C, C, capped, capped, capped]
      const tail: ReadonlyArray<TenantId | TargetRef | number> = [0, A, 3, C, uncapped, 4, capped, B]
      const trace: Array<unknown> = []
      for (const step of [...steps, ...tail]) {
        let got: readonly [boolean, boolean]
        if (typeof step === "number") {
          // release the step-th permit held so far (a repeated release does nothing)
          heldEffect[step]?.release()
          heldSync[step]?.release()
          got = [true, true]
        } else {
          const isTarget = step === capped || step === uncapped
          const e = isTarget
            ? yield* viaEffect.acquireTarget(step, 0)
            : yield* viaEffect.acquire(TenantId.make(step), "wf", 0)
          const n = isTarget ? stepOf(viaSync)?.acquireTarget(step) : stepOf(viaSync)?.acquire(TenantId.make(step))
          if (e !== undefined) heldEffect.push(e)
          if (n !== undefined) heldSync.push(n)
          got = [e !== undefined, n !== undefined]
          if (step === uncapped) assert.deepStrictEqual([e, n], [noopPermit, noopPermit])
        }
        trace.push(got[0])
        assert.strictEqual(got[1], got[0], `step ${String(step)}`)
        assert.deepStrictEqual(yield* states(viaSync), yield* states(viaEffect))
      }
      assert.deepStrictEqual(trace, [
        ...[true, true, false], // A: reserved 1 + 1 shared (max 2)
        ...[true, true, false], // B: reserved 1 + the last shared permit, then none
        ...[false, false], // C: the shared pool is used up
        ...[true, true, false], // the target's cap of 2
        // a release of A's or B's permits frees a shared one (A, then C take it; B finds none left);
        // a release of a target permit lets the next attempt in
        ...[true, true, true, true, true, true, true, false]
      ])
    })
  )

  it.effect("layerOff: the synchronous step gives the no-op permit", () =>
    Effect.gen(function* () {
      const c = yield* service
      assert.strictEqual(stepOf(c)?.acquire(A), noopPermit)
      assert.strictEqual(stepOf(c)?.acquireTarget(TargetRef.make("model://x/y@eu")), noopPermit)
    }).pipe(Effect.provide(Concurrency.layerOff))
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
      ConcurrencyConfig.validate({ permits: 0 }).map((p) => p.reason),
      ["NON_POSITIVE_LIMIT"]
    )
    assert.deepStrictEqual(
      ConcurrencyConfig.validate({ permits: 4, tenants: { a: { reserved: 1, max: 5 } }, undeclaredMax: 4 }).map((p) => [
        p.path,
        p.reason
      ]),
      [
        ["concurrency.tenants.a.max", "MAX_ABOVE_CAPACITY"],
        ["concurrency.undeclaredMax", "MAX_ABOVE_CAPACITY"]
      ]
    )
    assert.deepStrictEqual(
      ConcurrencyConfig.validate({ permits: 6, tenants: { a: { reserved: 2, max: 4 }, b: { reserved: 2 } } }),
      []
    )
  })

  it.effect("layerConfig reads the options from Config, over the PermitStore in the context", () =>
    Effect.gen(function* () {
      yield* Concurrency.withPermit(
        A,
        "wf"
      )(Effect.flatMap(snapshot, (s) => Effect.sync(() => assert.strictEqual(s.inUse, 1))))
      assert.deepStrictEqual([(yield* snapshot).inUse, (yield* snapshot).tenants], [0, 0])
    }).pipe(
      Effect.provide(
        Concurrency.layerConfig({ permits: Schema.Config("PERMITS", Schema.NumberFromString) }).pipe(
          Layer.provide(PermitStore.layerMemory),
          Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["PERMITS", "2"]]))))
        )
      )
    )
  )
})
