/**
 * A workflow's share of its tenant's permits (`Concurrency` `workflows`): the cap, the reservation,
 * per-workflow FIFO, the limit a refusal names, startup validation. Virtual time throughout.
 */
import { assert, describe, it } from "@effect/vitest"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import type { GatewayConfigError } from "@modelgate/core/Errors"
import * as GatewayConfig from "@modelgate/core/GatewayConfig"
import * as Health from "@modelgate/core/Health"
import * as Budgets from "@modelgate/core/Budgets"
import { TenantId } from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import * as ScriptedProvider from "@modelgate/testing/ScriptedProvider"
import { Effect, Exit, Fiber, Layer, Ref, TestClock } from "effect"
import { command, grantsAfter, makePermitLog, permitJob, target, workflow } from "./fixtures.js"
import * as ConcurrencyConfig from "../src/internal/concurrencyConfig.js"

const A = TenantId.make("tenant-a")
const B = TenantId.make("tenant-b")

const held = Effect.map(
  Effect.flatMap(Concurrency.Concurrency, (c) => c.snapshot),
  (s) => [s.inUse, s.waiting] as const
)

describe("Concurrency: a workflow's share of its tenant's permits (memory)", () => {
  it.effect("a capped workflow holds at most its cap; the tenant's other workflows are not queued behind it", () =>
    Effect.gen(function* () {
      const log = yield* makePermitLog
      for (let i = 1; i <= 4; i++) yield* permitJob(log, A, "batch", `batch${i}`, 1_000)
      yield* TestClock.adjust(10)
      assert.deepStrictEqual(yield* held, [2, 2])
      // batch's waiters do not hold up chat (FIFO is per tenant and workflow)
      yield* permitJob(log, A, "chat", "chat1", 1_000)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* held, [3, 2])
      assert.deepStrictEqual(yield* grantsAfter(log, 3_000), [
        ["batch1", 0],
        ["batch2", 0],
        ["chat1", 10],
        ["batch3", 1_000],
        ["batch4", 1_000]
      ])
      assert.deepStrictEqual(yield* held, [0, 0])
    }).pipe(Effect.provide(Concurrency.layerMemory({ permits: 8, workflows: { batch: { max: 2 } } })))
  )

  it.effect("a reservation is kept from the tenant's other workflows: they take at most limit − reserved", () =>
    Effect.gen(function* () {
      const log = yield* makePermitLog
      // tenant A's limit is 4 (the pool); chat keeps 1 of them
      for (let i = 1; i <= 5; i++) yield* permitJob(log, A, "batch", `batch${i}`, 1_000)
      yield* TestClock.adjust(10)
      assert.deepStrictEqual(yield* held, [3, 2])
      // chat gets its reserved permit at once although batch waits
      yield* permitJob(log, A, "chat", "chat1", 500)
      // a second chat call is beyond chat's reservation: it competes with batch for the 3
      yield* permitJob(log, A, "chat", "chat2", 500)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* held, [4, 3])
      assert.deepStrictEqual(yield* grantsAfter(log, 3_000), [
        ["batch1", 0],
        ["batch2", 0],
        ["batch3", 0],
        ["chat1", 10],
        // chat1's permit (chat's reserved one) comes back at 510: only chat may take it, and chat2
        // is within chat's reservation again
        ["chat2", 510],
        // at 1000 the three batch permits come back: FIFO hands two to batch4 and batch5
        ["batch4", 1_000],
        ["batch5", 1_000]
      ])
    }).pipe(
      Effect.provide(Concurrency.layerMemory({ permits: 4, workflows: { chat: { reserved: 1 }, batch: { max: 4 } } }))
    )
  )

  it.effect("a reservation within the reservation-holder: its own calls never wait on the others", () =>
    Effect.gen(function* () {
      const log = yield* makePermitLog
      for (let i = 1; i <= 6; i++) yield* permitJob(log, A, "batch", `batch${i}`, 1_000)
      yield* TestClock.adjust(5)
      for (let i = 1; i <= 2; i++) yield* permitJob(log, A, "chat", `chat${i}`, 100)
      yield* TestClock.adjust(5)
      // a third chat call is beyond chat's 2: it waits behind batch for the tenant's other permits
      yield* permitJob(log, A, "chat", "chat3", 100)
      // chat1/chat2 released at 105: those are chat's reserved permits, so chat3 takes one at 105
      assert.deepStrictEqual(yield* grantsAfter(log, 200), [
        ["batch1", 0],
        ["batch2", 0],
        ["batch3", 0],
        ["chat1", 5],
        ["chat2", 5],
        ["chat3", 105]
      ])
      yield* TestClock.adjust(2_000)
    }).pipe(
      Effect.provide(
        Concurrency.layerMemory({ permits: 10, tenants: { [A]: { max: 5 } }, workflows: { chat: { reserved: 2 } } })
      )
    )
  )

  it.effect("reservations are per tenant: another tenant's workflows are not limited by tenant A's use", () =>
    Effect.gen(function* () {
      const log = yield* makePermitLog
      for (let i = 1; i <= 3; i++) yield* permitJob(log, A, "batch", `a${i}`, 1_000)
      yield* TestClock.adjust(1)
      // A's batch took 2 (its limit 3 minus chat's 1); B's batch also takes 2 at once
      for (let i = 1; i <= 3; i++) yield* permitJob(log, B, "batch", `b${i}`, 1_000)
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* held, [4, 2])
      assert.deepStrictEqual(
        (yield* Ref.get(log)).map(([label]) => label),
        ["a1", "a2", "b1", "b2"]
      )
      yield* TestClock.adjust(3_000)
    }).pipe(
      Effect.provide(
        Concurrency.layerMemory({
          permits: 6,
          tenants: { [A]: { max: 3 }, [B]: { max: 3 } },
          workflows: { chat: { reserved: 1 } }
        })
      )
    )
  )

  it.effect("a wait that ends without a permit names the limit it hit", () =>
    Effect.gen(function* () {
      const c = yield* Concurrency.Concurrency
      const limits: Array<string> = []
      const note = (limit: string) => limits.push(limit)
      /** Asks for a permit that cannot come, until `until` (virtual): nothing is held after. */
      const refused = (tenant: TenantId, wf: string, until: number) =>
        Effect.gen(function* () {
          const waiter = yield* Effect.fork(c.acquire(tenant, wf, until, note))
          yield* TestClock.setTime(until)
          assert.isUndefined(yield* Fiber.join(waiter))
        })
      const take = (tenant: TenantId, wf: string) =>
        Effect.flatMap(c.acquire(tenant, wf, 0), (p) =>
          p === undefined ? Effect.dieMessage("no permit") : Effect.void
        )
      yield* take(A, "batch")
      // batch is at its cap (1)
      yield* refused(A, "batch", 100)
      // chat keeps 1 of A's 3: "other" may take one more (3 − 1 − batch's 1), not two
      yield* take(A, "other")
      yield* refused(A, "other", 200)
      // chat's reserved permit; then A is at its max of 3
      yield* take(A, "chat")
      yield* refused(A, "chat", 300)
      // B takes the last 2 of the pool's 5; B's chat is within its own reservation, but the pool is full
      yield* take(B, "x")
      yield* take(B, "x")
      yield* refused(B, "chat", 400)
      assert.deepStrictEqual(limits, ["workflow_max", "workflow_reservations", "tenant_max", "shared_pool"])
      assert.deepStrictEqual(yield* held, [5, 0])
    }).pipe(
      Effect.provide(
        Concurrency.layerMemory({
          permits: 5,
          tenants: { [A]: { max: 3 } },
          workflows: { batch: { max: 1 }, chat: { reserved: 1 } }
        })
      )
    )
  )

  it.effect("startup: reservations above a tenant's limit, max below reserved and bad names are listed", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Concurrency.make({
          permits: 10,
          tenants: { acme: { max: 3 }, beta: { max: 6 } },
          undeclaredMax: 2,
          workflows: { chat: { reserved: 2, max: 1 }, batch: { reserved: 2 }, "bad name": { max: 1 } }
        })
      )
      assert.isTrue(Exit.isFailure(exit))
      const error =
        Exit.isFailure(exit) && exit.cause._tag === "Fail" ? (exit.cause.error as GatewayConfigError) : undefined
      assert.deepStrictEqual(
        error?.problems.map((p) => [p.path, p.reason]),
        [
          ["concurrency.workflows.chat.max", "MAX_BELOW_RESERVED"],
          ["concurrency.workflows.bad name", "INVALID_WORKFLOW"],
          ["concurrency.tenants.acme", "WORKFLOW_RESERVED_ABOVE_TENANT_LIMIT"],
          ["concurrency.undeclaredMax", "WORKFLOW_RESERVED_ABOVE_TENANT_LIMIT"]
        ]
      )
      // the same through the JSON decoder
      const decoded = yield* Effect.exit(Concurrency.decode({ permits: 4, workflows: { chat: { reserved: 5 } } }))
      assert.deepStrictEqual(
        Exit.isFailure(decoded) && decoded.cause._tag === "Fail"
          ? decoded.cause.error.problems.map((p) => p.reason)
          : [],
        ["WORKFLOW_RESERVED_ABOVE_TENANT_LIMIT"]
      )
      // reservations that fit every tenant: valid
      assert.deepStrictEqual(
        ConcurrencyConfig.validate({ permits: 4, tenants: { acme: { max: 2 } }, workflows: { chat: { reserved: 2 } } }),
        []
      )
    })
  )
})

const P = "model://openai/small@eu"
const limits = { maxAttempts: 1, perAttemptTimeout: 5_000, minimumAttemptTime: 100 }
const definition: GatewayConfig.Definition = {
  config: GatewayConfig.GatewayConfig.make({
    targets: [target(P, "openai", { limits })],
    workflows: [
      workflow({ name: "w.batch", route: [P], timeout: 10_000 }),
      workflow({ name: "w.chat", route: [P], timeout: 10_000 })
    ]
  }),
  schemas: {}
}

const gatewayLayer = (concurrency: Concurrency.Options) =>
  ModelGateway.layer(definition).pipe(
    Layer.provideMerge(
      ScriptedProvider.layer({ providers: ["openai"], scripts: { [P]: [ScriptedProvider.success({ after: 1_000 })] } })
    ),
    Layer.provideMerge(
      Layer.mergeAll(Budgets.layerOff, Concurrency.layerMemory(concurrency), Health.layerOff, CallRecorder.layerMemory)
    )
  )

describe("Concurrency: workflow shares in the gateway", () => {
  it.effect("a call queued past its deadline by its workflow's cap fails DeadlineExceeded naming workflow_max", () =>
    Effect.gen(function* () {
      const g = yield* ModelGateway.ModelGateway
      const first = yield* Effect.fork(g.generate(command("w.batch")))
      yield* TestClock.adjust(1)
      const second = yield* Effect.fork(Effect.exit(g.generate(command("w.batch", { timeout: 500 }))))
      // chat is not held up by batch's queued call
      const chat = yield* Effect.fork(g.generate(command("w.chat")))
      yield* TestClock.adjust(500)
      const exit = yield* Fiber.join(second)
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      assert.strictEqual(error?._tag, "DeadlineExceeded")
      if (error?._tag === "DeadlineExceeded") {
        assert.deepStrictEqual([error.stage, error.permitLimit, error.elapsedMs], ["queue", "workflow_max", 500])
      }
      yield* TestClock.adjust(1_000)
      yield* Fiber.join(first)
      yield* Fiber.join(chat)
      const attempts = yield* (yield* ScriptedProvider.ScriptedProvider).attempts
      // batch's first call at 0, chat at 1 (not queued behind batch); the refused call reached no provider
      assert.deepStrictEqual(
        attempts.map((a) => a.startedAt),
        [0, 1]
      )
    }).pipe(Effect.provide(gatewayLayer({ permits: 4, workflows: { "w.batch": { max: 1 } } })))
  )
})
