/**
 * Issue 26, item 6: Redis data loss is detected. A real `redis-server` (its own) is emptied mid-run
 * (`FLUSHALL`, as a restart without persistence leaves it): the stores notice by their epoch key —
 * a side-effecting tool already run is not run again (its claim fails closed, as does any claim,
 * until the operator acknowledges), and the spend Redis forgot is reported.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Redis from "@modelgate/adapters/redis"
import * as BudgetStore from "@modelgate/core/BudgetStore"
import * as ToolLedger from "@modelgate/core/ToolLedger"
import * as ToolLedgerStore from "@modelgate/core/ToolLedgerStore"
import { ownRedis } from "./redis-fixtures.js"
import { Cause, Context, Duration, Effect, Exit, Layer, Option, Ref, Schedule, Schema } from "effect"

class Task extends Schema.Class<Task>("Task")({ id: Schema.String }) {}
const createTask = ToolLedger.sideEffecting({ name: "create_task", result: Task })

const units = BudgetStore.unitsPerCurrency

/** Retries `check` every 20 ms, for up to 2 s, until it holds. */
const eventually = (check: () => boolean) =>
  Effect.retry(
    Effect.suspend(() => (check() ? Effect.void : Effect.fail("not yet"))),
    { times: 100, schedule: Schedule.spaced("20 millis") }
  )

const errorOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()

describe("Redis data loss", () => {
  it.live("an emptied Redis: the tool is not re-run, claims fail closed until acknowledged, lost spend reported", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const redis = yield* ownRedis
        const losses: Array<Redis.DataLoss> = []
        const options: Redis.Options = {
          url: redis.url,
          keyPrefix: "loss:",
          commandTimeout: Duration.seconds(1),
          epochCheckInterval: Duration.millis(50),
          onDataLoss: (loss) => losses.push(loss)
        }
        const stores = yield* Redis.make(options)
        const ledger = yield* Effect.map(
          Layer.build(
            ToolLedger.layer.pipe(Layer.provide(Layer.succeed(ToolLedgerStore.ToolLedgerStore, stores.ledger)))
          ),
          Context.get(ToolLedger.ToolLedger)
        )
        const created = yield* Ref.make(0)
        const create = Effect.map(
          Ref.updateAndGet(created, (n) => n + 1),
          (n) => new Task({ id: `T${n}` })
        )
        // A run: the tool is run once, $3 of a $25 budget is spent.
        const key = ToolLedger.key(createTask, { runId: "run-1", step: 1 })
        yield* ledger.runOnce(key, create)
        const now = Date.now()
        const account = "acme/total"
        const reserve = {
          account,
          id: "r1",
          amount: 5 * units,
          limit: 25 * units,
          now,
          expiresAt: now + 60_000,
          accountExpiresAt: Number.POSITIVE_INFINITY
        }
        assert.strictEqual((yield* stores.budget.reserve(reserve))._tag, "Reserved")
        yield* stores.budget.commit({ account, id: "r1", amount: 5 * units, spend: 3 * units, limit: 25 * units })
        assert.isFalse(stores.dataLost())

        // Redis comes back empty.
        yield* Effect.promise(() => stores.connection.flushall())

        // The same call asked again (a replayed pass): it is not run a second time.
        const replayed = yield* Effect.exit(ledger.runOnce(key, create))
        assert.strictEqual(yield* Ref.get(created), 1)
        const error = errorOf(replayed)
        assert.isTrue(Option.isSome(error) && error.value._tag === "StoreError", String(replayed))
        assert.isTrue(stores.dataLost())
        // Every claim fails closed until the operator acknowledges.
        const other = ToolLedger.key(createTask, { runId: "run-1", step: 2 })
        assert.isTrue(Exit.isFailure(yield* Effect.exit(ledger.runOnce(other, create))))
        assert.strictEqual(yield* Ref.get(created), 1)
        // The spend Redis forgot is reported once, with the amount this process had seen committed.
        yield* eventually(() => losses.length > 0)
        assert.deepStrictEqual(losses, [{ budgets: [{ account, committedUnits: 3 * units }] }])

        // Acknowledged (from anywhere): claims resume; a loss is not reported twice.
        yield* Redis.acknowledgeDataLoss(options)
        yield* eventually(() => !stores.dataLost())
        const third = ToolLedger.key(createTask, { runId: "run-1", step: 3 })
        yield* ledger.runOnce(third, create)
        assert.strictEqual(yield* Ref.get(created), 2)
        assert.strictEqual(losses.length, 1)
      })
    )
  )
})
