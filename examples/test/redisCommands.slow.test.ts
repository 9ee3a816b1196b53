/**
 * The bench's Redis command counter against a real `redis-server`: commands attributed to the
 * measured path (and the fibers it forks) or to the background, and round trips as the writes that
 * carry a measured command.
 */
import { startRedis } from "@modelgate/testing/RedisServer"
import { Effect, Fiber } from "effect"
import { Command, Redis } from "ioredis"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { countCommands, listCounts, total } from "../bench/redisCommands.js"

let server: Awaited<ReturnType<typeof startRedis>>
let redis: Redis

beforeAll(async () => {
  server = await startRedis()
  // as the stores' client: commands issued in one tick leave in one write
  redis = new Redis(server.url, { enableAutoPipelining: true })
  await redis.set("k", "v")
})

afterAll(async () => {
  redis.disconnect()
  await server.stop()
})

const get = (key: string) => Effect.promise(() => redis.get(key))

/** Runs `body` with a counter on the connection, detached afterwards whatever `body` does. */
const counting = async (body: (counter: ReturnType<typeof countCommands>) => Promise<void>) => {
  const counter = countCommands(redis)
  try {
    await body(counter)
  } finally {
    counter.detach()
  }
}

describe("countCommands", () => {
  it("counts the measured path's commands by name, and one round trip per write carrying them", () =>
    counting(async (counter) => {
      // two commands in one tick: one write
      await Effect.runPromise(counter.measured(Effect.all([get("k"), get("k")], { concurrency: "unbounded" })))
      expect(counter.count()).toEqual({
        measured: new Map([["get", 2]]),
        background: new Map(),
        roundTrips: 1,
        writes: 1
      })
      // one after the other: two writes
      await Effect.runPromise(
        counter.measured(
          Effect.zipRight(
            get("k"),
            Effect.promise(() => redis.mget("k", "x"))
          )
        )
      )
      expect(counter.count()).toEqual({
        measured: new Map([
          ["get", 3],
          ["mget", 1]
        ]),
        background: new Map(),
        roundTrips: 3,
        writes: 3
      })
    }))

  it("counts a command object sent directly (as the stores send their scripts), once", () =>
    counting(async (counter) => {
      const direct = Effect.promise(() => {
        const command = new Command("get", ["k"], { replyEncoding: "utf8" })
        redis.sendCommand(command)
        return command.promise
      })
      await Effect.runPromise(counter.measured(Effect.zipRight(direct, get("k"))))
      expect(counter.count()).toEqual({
        measured: new Map([["get", 2]]),
        background: new Map(),
        roundTrips: 2,
        writes: 2
      })
    }))

  it("counts a forked fiber's commands as its parent's", () =>
    counting(async (counter) => {
      await Effect.runPromise(counter.measured(Effect.flatMap(Effect.fork(get("k")), Fiber.join)))
      expect(counter.count().measured).toEqual(new Map([["get", 1]]))
      expect(counter.count().roundTrips).toBe(1)
    }))

  it("counts other fibers' and plain commands as background, and no round trip for them", () =>
    counting(async (counter) => {
      await Effect.runPromise(get("k"))
      await redis.exists("k")
      expect(counter.count()).toEqual({
        measured: new Map(),
        background: new Map([
          ["get", 1],
          ["exists", 1]
        ]),
        roundTrips: 0,
        writes: 2
      })
      // a background command in the measured path's write (issued in the same tick): one write, the
      // round trip counted once, the commands apart
      const background = redis.get("k")
      await Effect.runPromise(counter.measured(get("k")))
      await background
      const count = counter.count()
      expect(total(count.measured)).toBe(1)
      expect(total(count.background)).toBe(3)
      expect(count.roundTrips).toBe(1)
      expect(count.writes).toBe(3)
      expect(listCounts(count.background)).toBe("get 2, exists 1")
    }))

  it("resets, and detaches: the connection then issues and writes uncounted", async () => {
    const counter = countCommands(redis)
    await Effect.runPromise(counter.measured(get("k")))
    counter.reset()
    expect(counter.count()).toEqual({ measured: new Map(), background: new Map(), roundTrips: 0, writes: 0 })
    counter.detach()
    await Effect.runPromise(counter.measured(get("k")))
    expect(counter.count().writes).toBe(0)
    expect(Object.hasOwn(redis, "get")).toBe(false)
    expect(Object.hasOwn(redis.stream, "write")).toBe(false)
    expect(await redis.get("k")).toBe("v")
  })
})
