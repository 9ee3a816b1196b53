/**
 * Two server instances on one Redis (a real `redis-server`): a key's rate limit and a tenant's
 * budget hold across both, as they would across N processes behind a load balancer.
 */
import { MockProviderServer, RedisServer } from "@modelgate/testing"
import { Effect, Exit, Scope } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayConfig } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import * as ServerConfig from "../src/ServerConfig.js"
import { ticketSchemas } from "./fixtures.js"

const scope = Effect.runSync(Scope.make())
let redis: RedisServer.RedisServer
const urls: Array<string> = []

beforeAll(async () => {
  redis = await RedisServer.startRedis()
  const mock = await Effect.runPromise(MockProviderServer.make({ record: false }).pipe(Scope.extend(scope)))
  // Slow enough answers that concurrent calls overlap.
  await Effect.runPromise(mock.setHandler(() => MockProviderServer.success({ text: "ok", latencyMs: 300 })))
  for (const _ of [1, 2]) {
    const config = await Effect.runPromise(
      ServerConfig.decode({
        listen: { port: 0 },
        keys: [
          {
            id: "shared",
            sha256: hashKey("key-shared"),
            tenant: "acme",
            workflows: ["*"],
            rateLimit: { requestsPerMinute: 3 }
          },
          { id: "spender", sha256: hashKey("key-spender"), tenant: "globex", workflows: ["*"] }
        ],
        providers: [{ id: "openai", kind: "openai", baseUrl: `${mock.url}/v1` }],
        gateway: gatewayConfig,
        schemas: ticketSchemas,
        // globex: room for about one worst-case reservation of `chat` (4096 output tokens at $1.6/M).
        budgets: { tenants: { acme: { limit: 100 }, globex: { limit: 0.01 } } },
        redis: { url: redis.url },
        recorder: "none"
      })
    )
    const running = await Effect.runPromise(Launch.start(config).pipe(Scope.extend(scope)))
    urls.push(running.url)
  }
}, 60_000)

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  await redis.stop()
})

const client = (url: string, key: string) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 })
const ask = (url: string, key: string) =>
  client(url, key)
    .chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
    .then(
      () => 200,
      (e: unknown) => (e instanceof OpenAI.APIError ? (e.status ?? 0) : 0)
    )

describe("several server processes on one Redis", () => {
  it("a key's requests per minute count across both servers", async () => {
    const [a = "", b = ""] = urls
    // Four calls, alternating servers, within one UTC minute (tried again if a minute turned).
    for (let round = 0; round < 2; round++) {
      const minute = Math.floor(Date.now() / 60_000)
      const statuses: Array<number> = []
      for (const url of [a, b, a, b]) statuses.push(await ask(url, "key-shared"))
      if (Math.floor(Date.now() / 60_000) !== minute) continue
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(3)
      expect(statuses.at(-1)).toBe(429)
      return
    }
  })

  it("a tenant's budget reservations are shared: concurrent calls on both servers cannot overspend it", async () => {
    const [a = "", b = ""] = urls
    // One call on each server at once: with a budget per process both would fit; shared, one does.
    const statuses = await Promise.all([a, b].map((url) => ask(url, "key-spender")))
    expect(statuses.sort()).toEqual([200, 429])
  })
})
