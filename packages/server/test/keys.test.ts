/**
 * Keys, tenants, rate limits and budgets on the wire; the key ring and the JSON Schema codec.
 */
import { Tenancy } from "@modelgate/core"
import { Either, Schema } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fromJsonSchema } from "../src/JsonSchemaCodec.js"
import { bearerOf, hashKey, makeKeyRing } from "../src/Keys.js"
import * as ServerConfig from "../src/ServerConfig.js"
import { type Harness, startHarness } from "./fixtures.js"

const key = (id: string, secret: string, workflows: Array<string>): ServerConfig.ApiKey => ({
  id,
  sha256: hashKey(secret),
  tenant: Schema.decodeSync(Tenancy.TenantId)(`tenant-${id}`),
  workflows
})

describe("the key ring", () => {
  const ring = makeKeyRing(
    [key("a", "secret-a", ["chat"]), key("b", "secret-b", ["*"]), key("c", "secret-c", ["fast"])],
    {
      fast: "chat"
    }
  )

  it("finds the key of a token by its digest, and nothing for another token", () => {
    expect(ring.verify("secret-b")?.id).toBe("b")
    expect(ring.verify("secret-x")).toBeUndefined()
    expect(ring.verify("")).toBeUndefined()
    expect(ring.verify("x".repeat(10_000))).toBeUndefined()
  })

  it("allows the workflows of a key, aliases resolved, `*` for all", () => {
    const a = ring.verify("secret-a")
    const b = ring.verify("secret-b")
    const c = ring.verify("secret-c")
    expect(a && ring.allows(a, "chat")).toBe(true)
    expect(a && ring.allows(a, "extract")).toBe(false)
    expect(b && ring.allows(b, "extract")).toBe(true)
    expect(c && ring.allows(c, "chat")).toBe(true)
  })

  it("reads a bearer token", () => {
    expect(bearerOf("Bearer abc")).toBe("abc")
    expect(bearerOf("bearer   abc ")).toBe("abc")
    expect(bearerOf("Basic abc")).toBeUndefined()
    expect(bearerOf(undefined)).toBeUndefined()
  })
})

describe("the server configuration", () => {
  it("decodes with defaults and refuses duplicate key ids and unknown fields, by path", async () => {
    const { Effect } = await import("effect")
    const ok = await Effect.runPromise(ServerConfig.decode({ keys: [key("a", "s", ["*"])], gateway: {} }))
    expect(ok.listen).toEqual({ host: "127.0.0.1", port: 8787 })
    expect(ok.limits.maxBodyBytes).toBe(4 * 1024 * 1024)
    const bad = await Effect.runPromise(
      Effect.flip(
        ServerConfig.decode({ keys: [key("a", "s", ["*"]), key("a", "t", ["*"])], gateway: {}, apiKey: "sk-secret" })
      )
    )
    expect(bad.problems).toEqual(["$.apiKey is not allowed"])
    const dup = await Effect.runPromise(
      Effect.flip(ServerConfig.decode({ keys: [key("a", "s", ["*"]), key("a", "t", ["*"])], gateway: {} }))
    )
    expect(dup.problems).toEqual(["$.keys[1].id is a duplicate"])
    const plain = await Effect.runPromise(
      Effect.flip(ServerConfig.decode({ keys: [{ ...key("a", "s", ["*"]), sha256: "not-a-digest" }], gateway: {} }))
    )
    expect(plain.problems).toEqual(["$.keys[0].sha256 is invalid"])
    expect(JSON.stringify(plain)).not.toContain("not-a-digest")
  })
})

describe("JSON Schema output schemas", () => {
  it("turns the supported subset into an Effect Schema that validates", () => {
    const schema = fromJsonSchema("Ticket", {
      type: "object",
      properties: {
        category: { type: "string", enum: ["billing", "other"] },
        score: { type: "number", minimum: 0, maximum: 1 },
        tags: { type: "array", items: { type: "string" }, maxItems: 2 },
        note: { type: ["string", "null"] }
      },
      required: ["category", "score"]
    })
    if (Either.isLeft(schema)) throw new Error(schema.left.join("; "))
    const decode = Schema.decodeUnknownEither(schema.right)
    expect(Either.isRight(decode({ category: "billing", score: 0.5, note: null }))).toBe(true)
    expect(Either.isRight(decode({ category: "nope", score: 0.5 }))).toBe(false)
    expect(Either.isRight(decode({ category: "other", score: 2 }))).toBe(false)
    expect(Either.isRight(decode({ category: "other", score: 1, tags: ["a", "b", "c"] }))).toBe(false)
  })

  it("names what it does not support", () => {
    expect(fromJsonSchema("X", { type: "object", properties: { a: { oneOf: [] } } })).toEqual(
      Either.left(["$.schemas.X.properties.a.type is not supported"])
    )
  })
})

describe("rate limits and budgets", () => {
  let limited: Harness
  let broke: Harness
  beforeAll(async () => {
    limited = await startHarness({ rateLimit: { requestsPerMinute: 2 } })
    broke = await startHarness({ budget: 0.000001 })
  })
  afterAll(async () => {
    await limited.close()
    await broke.close()
  })

  it("past the key's requests per minute: 429 with retry-after", async () => {
    const ask = () =>
      limited.client().chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
    await ask()
    await ask()
    const error = await ask().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded" })
    const retryAfter = Number(error instanceof OpenAI.APIError ? error.headers?.get("retry-after") : NaN)
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
  })

  it("past the key's tokens per minute: refused once the usage of earlier calls fills the window", async () => {
    const tokens = await startHarness({ rateLimit: { tokensPerMinute: 30 } })
    try {
      const ask = () =>
        tokens.client().chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
      await ask() // 23 tokens
      await ask() // admitted at 23 ≤ 30, then 46
      await expect(ask()).rejects.toMatchObject({ status: 429, code: "rate_limit_exceeded" })
    } finally {
      await tokens.close()
    }
  })

  it("a budget that cannot cover the worst case: 429 budget_exceeded with retry-after, nothing sent", async () => {
    const before = (await broke.run(broke.mock.requests)).length
    const error = await broke
      .client()
      .chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ status: 429, code: "budget_exceeded" })
    expect(error instanceof OpenAI.APIError ? error.headers?.get("retry-after") : undefined).toBe("60")
    expect((await broke.run(broke.mock.requests)).length).toBe(before)
    const [record] = await broke.run(broke.recorder.records)
    expect(record).toMatchObject({ tenant: "dev", outcome: "failed", errorTag: "BudgetExceeded" })
  })

  it("the tenant comes from the key: a tenant in the body changes nothing", async () => {
    const smuggled = { tenant: "acme" }
    await broke
      .client()
      .chat.completions.create({ ...smuggled, model: "chat", messages: [{ role: "user", content: "x" }] })
      .catch(() => undefined)
    const records = await broke.run(broke.recorder.records)
    expect(records.map((r) => r.tenant)).toEqual(records.map(() => "dev"))
    expect(records.length).toBeGreaterThan(0)
    // The key vouched for its tenant: the record says so (the key's id, never the key).
    expect(records.at(-1)?.evidence.identity).toEqual({ tenant: "dev", authority: "api-key", subject: "dev" })
  })
})
