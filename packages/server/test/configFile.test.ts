/**
 * A server from a JSON configuration (what `serve --config` reads): a provider adapter built from
 * `providers` with its key from the environment, an output schema given as JSON Schema, a key
 * limited to one workflow, aliases, a tenant budget — against the loopback mock provider.
 */
import { CallRecorder } from "@modelgate/core"
import { MockProviderServer } from "@modelgate/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayConfig } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import * as ServerConfig from "../src/ServerConfig.js"
import { ticketSchemas } from "./fixtures.js"

const scope = Effect.runSync(Scope.make())
let url = ""
let mock: MockProviderServer.Service
const recorder = Effect.runSync(CallRecorder.makeMemory)

const fileJson = (mockUrl: string) => ({
  listen: { port: 0 },
  keys: [
    { id: "full", sha256: hashKey("key-full"), tenant: "acme", workflows: ["*"] },
    { id: "narrow", sha256: hashKey("key-narrow"), tenant: "globex", workflows: ["ticket"] }
  ],
  aliases: { ticket: "extract" },
  providers: [{ id: "openai", kind: "openai", baseUrl: `${mockUrl}/v1`, apiKeyEnv: "MODELGATE_TEST_UPSTREAM_KEY" }],
  gateway: gatewayConfig,
  schemas: ticketSchemas,
  budgets: { tenants: { acme: { limit: 5 }, globex: { limit: 5 } } },
  concurrency: { permits: 64, tenants: { acme: { max: 32 } } },
  recorder: "none"
})

beforeAll(async () => {
  process.env.MODELGATE_TEST_UPSTREAM_KEY = "sk-upstream-secret"
  mock = await Effect.runPromise(MockProviderServer.make().pipe(Scope.extend(scope)))
  const config = await Effect.runPromise(ServerConfig.decode(fileJson(mock.url)))
  const running = await Effect.runPromise(
    Launch.start(config, { recorder: Layer.succeed(CallRecorder.CallRecorder, recorder) }).pipe(Scope.extend(scope))
  )
  url = running.url
})
afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 })

describe("a server from a configuration file", () => {
  it("answers in the file's JSON Schema through the configured adapter, its key from the environment", async () => {
    const answer = await client("key-full").chat.completions.create({
      model: "extract",
      messages: [{ role: "user", content: "charged twice" }]
    })
    expect(JSON.parse(answer.choices[0]?.message.content ?? "null")).toMatchObject({ category: expect.any(String) })
    const sent = (await Effect.runPromise(mock.requests)).at(-1)
    expect(sent?.headers.authorization).toBe("Bearer sk-upstream-secret")
    expect(JSON.stringify(sent?.body)).toContain('"enum":["billing","technical","other"]')
  })

  it("a key limited to one workflow reaches it by alias and nothing else", async () => {
    await expect(
      client("key-narrow").chat.completions.create({ model: "ticket", messages: [{ role: "user", content: "x" }] })
    ).resolves.toBeDefined()
    await expect(
      client("key-narrow").chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
    ).rejects.toMatchObject({ status: 404 })
    const models = await client("key-narrow").models.list()
    expect(models.data.map((m) => m.id).sort()).toEqual(["extract", "ticket"])
    const records = await Effect.runPromise(recorder.records)
    expect(records.at(-1)?.tenant).toBe("globex")
  })

  it("concurrent requests of two keys each run for their own key's tenant", async () => {
    const before = (await Effect.runPromise(recorder.records)).length
    const keys = [
      "key-full",
      "key-narrow",
      "key-full",
      "key-narrow",
      "key-narrow",
      "key-full",
      "key-full",
      "key-narrow"
    ]
    await Promise.all(
      keys.map((key) =>
        client(key).chat.completions.create({ model: "ticket", messages: [{ role: "user", content: "x" }] })
      )
    )
    const records = (await Effect.runPromise(recorder.records)).slice(before)
    const seen = records.map((r) => `${r.tenant} ${r.evidence.identity?.tenant} ${r.evidence.identity?.subject}`)
    expect(seen.sort()).toEqual([...Array(4).fill("acme acme full"), ...Array(4).fill("globex globex narrow")])
  })

  it("the reservation shows in the evidence (a budgeted tenant)", async () => {
    const { response } = await client("key-full")
      .chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
      .withResponse()
    expect(Number(response.headers.get("x-modelgate-cost-reserved"))).toBeGreaterThan(0)
  })

  it("a bad file fails startup with every problem by path", async () => {
    const error = await Effect.runPromise(
      Effect.flip(
        Effect.scoped(
          Effect.flatMap(
            ServerConfig.decode({
              ...fileJson(mock.url),
              aliases: { x: "missing" },
              schemas: { Ticket: { type: "tuple" } }
            }),
            (config) => Launch.start(config)
          )
        )
      )
    )
    expect(error).toMatchObject({ _tag: "ServerConfigError", problems: ["$.schemas.Ticket.type is not supported"] })
  })
})
