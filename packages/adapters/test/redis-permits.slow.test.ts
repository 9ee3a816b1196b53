/**
 * The Redis permit store against a real `redis-server` (one per file), through `Concurrency.layer`:
 * one set of limits shared by several services over several clients (several gateway processes),
 * leases that give a crashed holder's permit back, waiting bounded by `until`, FIFO within a
 * process, per-target caps, and pub/sub wake-up measured against polling.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import * as Concurrency from "@modelgate/core/Concurrency"
import { TenantId } from "@modelgate/core/ModelCommand"
import { TargetRef } from "@modelgate/core/ModelTarget"
import { Context, Duration, Effect, Exit, Fiber, Layer } from "effect"
import { redisPerFile, twoProcesses } from "./redis-fixtures.js"

const { freshOptions } = redisPerFile()

const acme = TenantId.make("acme")
const beta = TenantId.make("beta")

/** `Concurrency` over a Redis permit store with a client of its own (one gateway process). */
const concurrencyOver = (options: Redis.Options, config: Concurrency.Options) =>
  Effect.map(
    Layer.build(Concurrency.layer(config).pipe(Layer.provide(Redis.layerPermitStore(options)))),
    Context.get(Concurrency.Concurrency)
  )

/** Two processes' `Concurrency` (`config`) over one Redis, on a fresh key prefix. */
const twoOver = (config: Concurrency.Options) => twoProcesses(concurrencyOver(freshOptions(), config))

const far = () => Date.now() + 10_000

describe("Redis PermitStore through Concurrency", () => {
  it.live("has no synchronous fast path; two processes share one tenant limit", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [one, two] = yield* twoOver({ permits: 3, tenants: { acme: { max: 2 } } })
        // no private synchronous fast path (`@modelgate/core` internal/fastPath): every permit is a store
        // operation (the slot only names the tenants' pool, for a joint admission with the budget store)
        assert.strictEqual(
          Reflect.get(Reflect.get(one, Symbol.for("@modelgate/core/FastPath")), "_tag"),
          "ConcurrencyPools"
        )
        const a = yield* one.acquire(acme, "w", far())
        const b = yield* two.acquire(acme, "w", far())
        assert.isDefined(a)
        assert.isDefined(b)
        // acme is at its max across both processes: a third waits until `until`
        const started = Date.now()
        const none = yield* two.acquire(acme, "w", Date.now() + 150)
        assert.isUndefined(none)
        assert.isAtLeast(Date.now() - started, 140)
        // another tenant still gets the shared permit left
        const c = yield* one.acquire(beta, "w", far())
        assert.isDefined(c)
        const snapshot = yield* two.snapshot
        assert.deepStrictEqual([snapshot.inUse, snapshot.byTenant.get("acme")?.held], [3, 2])
        // a release in process one hands the permit to a waiter in process two
        const waiting = yield* Effect.fork(two.acquire(acme, "w", far()))
        yield* Effect.sleep("30 millis")
        a?.release()
        const handed = yield* Fiber.join(waiting)
        assert.isDefined(handed)
        for (const p of [b, c, handed]) p?.release()
        yield* Effect.sleep("20 millis")
        assert.strictEqual((yield* one.snapshot).inUse, 0)
      })
    )
  )

  it.live("reserved permits stay with their tenant across processes; the shared pool is shared", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const [one, two] = yield* twoOver({ permits: 3, tenants: { acme: { reserved: 2 } } })
        // beta (undeclared) may use the one shared permit only
        const b1 = yield* one.acquire(beta, "w", far())
        assert.isDefined(b1)
        assert.isUndefined(yield* two.acquire(beta, "w", Date.now() + 50))
        // acme still has its two reserved permits
        const a1 = yield* two.acquire(acme, "w", far())
        const a2 = yield* one.acquire(acme, "w", far())
        assert.isDefined(a1)
        assert.isDefined(a2)
        assert.isUndefined(yield* two.acquire(acme, "w", Date.now() + 50))
        for (const p of [b1, a1, a2]) p?.release()
      })
    )
  )

  it.live("workflow shares across processes: the cap, the reservation and the limit a refusal names", () =>
    Effect.scoped(
      Effect.gen(function* () {
        // acme may hold 3; chat keeps 1 of them; batch holds at most 2 (the memory test's limits)
        const [one, two] = yield* twoOver({
          permits: 5,
          tenants: { acme: { max: 3 } },
          workflows: { batch: { max: 1 }, chat: { reserved: 1 } }
        })
        const limits: Array<string> = []
        const note = (limit: string) => limits.push(limit)
        const soon = () => Date.now() + 60
        const batch = yield* one.acquire(acme, "batch", far())
        assert.isDefined(batch)
        assert.isUndefined(yield* two.acquire(acme, "batch", soon(), note))
        const other = yield* two.acquire(acme, "other", far())
        assert.isDefined(other)
        assert.isUndefined(yield* one.acquire(acme, "other", soon(), note))
        // chat's reserved permit, taken in the other process
        const chat = yield* two.acquire(acme, "chat", far())
        assert.isDefined(chat)
        assert.isUndefined(yield* one.acquire(acme, "chat", soon(), note))
        const b1 = yield* one.acquire(beta, "x", far())
        const b2 = yield* two.acquire(beta, "x", far())
        assert.isDefined(b1)
        assert.isDefined(b2)
        assert.isUndefined(yield* one.acquire(beta, "chat", soon(), note))
        // each refusal names its limit once per ask; the last ask decides the name
        assert.deepStrictEqual(
          [...new Set(limits)],
          ["workflow_max", "workflow_reservations", "tenant_max", "shared_pool"]
        )
        // a batch release in process one frees the cap: process two's batch waiter gets it
        const waiting = yield* Effect.fork(two.acquire(acme, "batch", far()))
        yield* Effect.sleep("30 millis")
        batch?.release()
        const handed = yield* Fiber.join(waiting)
        assert.isDefined(handed)
        const snapshot = yield* one.snapshot
        assert.deepStrictEqual([snapshot.inUse, snapshot.byTenant.get("acme")?.held], [5, 3])
        for (const p of [other, chat, b1, b2, handed]) p?.release()
        yield* Effect.sleep("20 millis")
        // every counter (held, beyond-reservation, per workflow) is back to nothing
        assert.strictEqual((yield* one.snapshot).inUse, 0)
        const again = yield* Effect.forEach([1, 2], () => one.acquire(acme, "other", far()))
        assert.isTrue(again.every((p) => p !== undefined))
        assert.isUndefined(yield* two.acquire(acme, "other", soon()))
        for (const p of again) p?.release()
      })
    )
  )

  it.live("a lease from before workflow shares (old format) is freed without harm", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const options = freshOptions({ permitLease: Duration.millis(100) })
        // a process without shares takes a permit, then "crashes" (never releases)
        const old = yield* concurrencyOver(options, { permits: 2 })
        assert.isDefined(yield* old.acquire(acme, "w", Date.now() + 50))
        const config: Concurrency.Options = { permits: 2, workflows: { chat: { reserved: 1 } } }
        const next = yield* concurrencyOver(options, config)
        // its lease (50 ms to its deadline + 100 ms) ends and is freed by the new scripts; then the
        // whole pool is there again
        yield* Effect.sleep("250 millis")
        const a = yield* next.acquire(acme, "other", far())
        const b = yield* next.acquire(acme, "chat", far())
        assert.isDefined(a)
        assert.isDefined(b)
        assert.strictEqual((yield* next.snapshot).inUse, 2)
        for (const p of [a, b]) p?.release()
      })
    )
  )

  it.live("a crashed holder's permit comes back when its lease ends", () =>
    Effect.gen(function* () {
      const options = freshOptions({ permitLease: Duration.millis(200) })
      const config: Concurrency.Options = { permits: 1 }
      // the holder's process: takes the permit and dies (its scope closes the client, no release)
      yield* Effect.scoped(
        Effect.gen(function* () {
          const holder = yield* concurrencyOver(options, config)
          assert.isDefined(yield* holder.acquire(acme, "w", Date.now() + 100))
        })
      )
      yield* Effect.scoped(
        Effect.gen(function* () {
          const other = yield* concurrencyOver(options, config)
          const started = Date.now()
          // lease = 100 ms to the holder's deadline + 200 ms
          const permit = yield* other.acquire(acme, "w", Date.now() + 2_000)
          const waited = Date.now() - started
          assert.isDefined(permit)
          assert.isAtLeast(waited, 150)
          assert.isAtMost(waited, 1_000)
          permit?.release()
        })
      )
    })
  )

  it.live("waiters of one process are served FIFO; an interrupted waiter leaves nothing behind", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const options = freshOptions()
        const one = yield* concurrencyOver(options, { permits: 1 })
        const first = yield* one.acquire(acme, "w", far())
        const order: Array<number> = []
        const fibers: Array<Fiber.RuntimeFiber<void, unknown>> = []
        for (let i = 0; i < 5; i++) {
          fibers.push(
            yield* Effect.fork(
              Effect.flatMap(one.acquire(acme, "w", far()), (p) =>
                Effect.zipRight(
                  Effect.sync(() => order.push(i)),
                  Effect.zipRight(
                    Effect.sleep("5 millis"),
                    Effect.sync(() => p?.release())
                  )
                )
              )
            )
          )
          yield* Effect.sleep("2 millis")
        }
        const quitter = yield* Effect.fork(one.acquire(acme, "w", far()))
        yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(quitter)
        first?.release()
        for (const f of fibers) yield* Fiber.join(f)
        assert.deepStrictEqual(order, [0, 1, 2, 3, 4])
        yield* Effect.sleep("20 millis")
        const snapshot = yield* one.snapshot
        assert.deepStrictEqual([snapshot.inUse, snapshot.waiting], [0, 0])
      })
    )
  )

  it.live("a target's cap is shared across processes; its headroom counts this process's permits", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const ref = TargetRef.make("local/llama")
        const [one, two] = yield* twoOver({ permits: 10, targets: { "local/llama": 1 } })
        assert.isTrue(one.isCapped(ref))
        const held = yield* one.acquireTarget(ref, far())
        assert.isDefined(held)
        assert.deepStrictEqual([one.targetHeadroom?.(ref), two.targetHeadroom?.(ref)], [0, 1])
        assert.isUndefined(yield* two.acquireTarget(ref, Date.now() + 50))
        held?.release()
        assert.strictEqual(one.targetHeadroom?.(ref), 1)
        assert.isDefined(yield* two.acquireTarget(ref, far()))
        assert.strictEqual(two.targetHeadroom?.(ref), 0)
      })
    )
  )

  it.live("with Redis gone, acquire fails with StoreError (store permit) within the command timeout", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const one = yield* concurrencyOver(
          { url: "redis://127.0.0.1:1", keyPrefix: "x:", commandTimeout: Duration.millis(200) },
          { permits: 1 }
        )
        const started = Date.now()
        const exit = yield* Effect.exit(one.acquire(acme, "w", far()))
        assert.isAtMost(Date.now() - started, 1_000)
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit) && exit.cause._tag === "Fail") {
          assert.deepStrictEqual([exit.cause.error._tag, exit.cause.error.store], ["StoreError", "permit"])
        } else assert.fail("expected a StoreError")
      })
    )
  )

  /**
   * Hands one permit from a process to a waiter of another `n` times; the mean time from the
   * release to the grant. (Measured on the 2-core CI machine: pub/sub ≈ 1.5 ms, polling ≈ 27 ms —
   * a polling waiter sleeps up to 50 ms between asks once its interval has grown.)
   */
  const handoffs = (wakeup: "pubsub" | "polling", n: number) =>
    Effect.scoped(
      Effect.gen(function* () {
        const options = freshOptions({ permitWakeup: wakeup })
        const [one, two] = yield* twoProcesses(concurrencyOver(options, { permits: 1 }))
        let total = 0
        for (let i = 0; i < n; i++) {
          const holder = yield* one.acquire(acme, "w", far())
          const waiter = yield* Effect.fork(two.acquire(acme, "w", far()))
          // Long enough for the waiter's poll interval to grow to its maximum.
          yield* Effect.sleep("150 millis")
          const released = performance.now()
          holder?.release()
          const p = yield* Fiber.join(waiter)
          total += performance.now() - released
          p?.release()
        }
        return total / n
      })
    )

  it.live("pub/sub wakes a waiter of another process sooner than polling does", () =>
    Effect.gen(function* () {
      const pubsub = yield* handoffs("pubsub", 8)
      const polling = yield* handoffs("polling", 8)
      console.log(`permit handoff across processes: pubsub ${pubsub.toFixed(2)} ms, polling ${polling.toFixed(2)} ms`)
      assert.isBelow(pubsub, polling)
    })
  )
})

describe("Redis RateLimitStore", () => {
  it.live("two processes share one provider key's requests and tokens per minute; adjust corrects tokens", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const options = freshOptions()
        const [one, two] = yield* twoProcesses(Redis.make(options))
        const at = Date.UTC(2026, 10, 3, 12, 0, 30)
        const take = (s: Redis.Stores, tokens: number) =>
          s.rateLimit.take({ key: "acct-1", tokens, requestsPerMinute: 3, tokensPerMinute: 100, now: at })
        const first = yield* take(one, 60)
        assert.deepStrictEqual(first, { _tag: "Taken", window: Math.floor(at / 60_000) })
        // 60 + 50 > 100 tokens, across processes
        assert.deepStrictEqual(yield* take(two, 50), { _tag: "Limited", resetsAt: Date.UTC(2026, 10, 3, 12, 1) })
        // the first attempt used 20 tokens, not 60: 40 go back (sent without waiting; the next
        // command on the same connection comes after it)
        one.rateLimit.adjust("acct-1", Math.floor(at / 60_000), -40)
        assert.strictEqual((yield* take(one, 50))._tag, "Taken")
        assert.strictEqual((yield* take(two, 1))._tag, "Taken")
        // 3 requests per minute are spent
        assert.strictEqual((yield* take(one, 1))._tag, "Limited")
        // the next minute is a fresh window
        const next = yield* two.rateLimit.take({
          key: "acct-1",
          tokens: 100,
          requestsPerMinute: 3,
          tokensPerMinute: 100,
          now: at + 60_000
        })
        assert.strictEqual(next._tag, "Taken")
      })
    )
  )
})
