/**
 * `GET /metrics` on servers started from a JSON configuration (as `serve --config` reads it) over
 * the loopback mock provider: the call counter and latency histogram after real calls, the format,
 * the metrics key, a disabled endpoint, a scrape past the admission bound; and OTLP export to a
 * collector on 127.0.0.1 configured from `OTEL_*` variables.
 */
import { MockProviderServer } from "@modelgate/testing"
import { Effect, Exit, Scope } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayConfig } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import * as Observability from "../src/Observability.js"
import * as ServerConfig from "../src/ServerConfig.js"
import { parseExposition, total } from "./prometheusText.js"
import { ticketSchemas } from "./fixtures.js"

const apiKey = "key-metrics-client"
const scrapeKey = "scrape-secret-0123"
const canary = "zqxcanary-prompt"

interface Started {
  readonly url: string
  readonly mock: MockProviderServer.Service
  readonly close: () => Promise<void>
}

/** A configuration file over the provider at `providerUrl`, with `extra` fields. */
const configOf = (providerUrl: string, extra: Record<string, unknown>) =>
  ServerConfig.decode({
    listen: { port: 0 },
    keys: [{ id: "client", sha256: hashKey(apiKey), tenant: "acme", workflows: ["*"] }],
    providers: [
      { id: "openai", kind: "openai", baseUrl: `${providerUrl}/v1`, apiKeyEnv: "MODELGATE_TEST_UPSTREAM_KEY" }
    ],
    gateway: gatewayConfig,
    schemas: ticketSchemas,
    recorder: "none",
    ...extra
  })

/** A server of a configuration file with `extra` fields, over a mock provider of its own. */
const startServer = async (extra: Record<string, unknown> = {}): Promise<Started> => {
  const scope = Effect.runSync(Scope.make())
  const mock = await Effect.runPromise(MockProviderServer.make().pipe(Scope.extend(scope)))
  const config = await Effect.runPromise(configOf(mock.url, extra))
  const running = await Effect.runPromise(Launch.start(config).pipe(Scope.extend(scope))).catch(async (error) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  })
  return { url: running.url, mock, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const chat = (url: string, content = canary) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat", messages: [{ role: "user", content }] })
  })

const scrape = (url: string, authorization?: string) =>
  fetch(`${url}/metrics`, authorization === undefined ? {} : { headers: { authorization } })

const readMetrics = async (url: string) => parseExposition(await (await scrape(url)).text())

beforeAll(() => {
  process.env.MODELGATE_TEST_UPSTREAM_KEY = "sk-upstream-secret"
})

describe("GET /metrics", () => {
  let server: Started
  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(() => server.close())

  it("after 4 calls (one failing): the call counter by outcome and a latency histogram counting them", async () => {
    const before = await readMetrics(server.url)
    for (let i = 0; i < 3; i++) expect((await chat(server.url)).status).toBe(200)
    await Effect.runPromise(server.mock.enqueue(MockProviderServer.failure(400)))
    expect((await chat(server.url)).status).toBe(400)
    const response = await scrape(server.url)
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
    const text = await response.text()
    const after = parseExposition(text)
    const added = (family: string, sample: string, match: Record<string, string>) =>
      total(after, family, sample, match) - total(before, family, sample, match)
    const calls = "modelgate_calls_total"
    expect(after.get(calls)).toMatchObject({ type: "counter", help: "Logical model calls" })
    expect(added(calls, calls, { modelgate_workflow: "chat", modelgate_outcome: "success", error_type: "none" })).toBe(
      3
    )
    expect(added(calls, calls, { modelgate_workflow: "chat", modelgate_outcome: "failed" })).toBe(1)
    expect(
      added(calls, calls, { modelgate_workflow: "chat", modelgate_outcome: "failed", error_type: "InvalidRequest" })
    ).toBe(1)
    const latency = "modelgate_call_duration_ms"
    expect(after.get(latency)?.type).toBe("histogram")
    expect(added(latency, `${latency}_count`, { modelgate_workflow: "chat" })).toBe(4)
    expect(added(latency, `${latency}_bucket`, { modelgate_workflow: "chat", le: "+Inf" })).toBe(4)
    expect(added(latency, `${latency}_count`, { modelgate_workflow: "chat", modelgate_outcome: "failed" })).toBe(1)
    // Route labels are configured target refs; no content and no key anywhere.
    expect(text).toContain('modelgate_route="model://openai/mock-chat@local"')
    expect(text).not.toContain(canary)
    expect(text).not.toContain(apiKey)
    expect(text).not.toContain("sk-upstream-secret")
  })

  it("answers past the admission bound, where a model route is refused", async () => {
    const bounded = await startServer({ limits: { maxConcurrentRequests: 1 } })
    // A chat request whose body never finishes: in flight from its headers on.
    const socket = Net.connect(Number(new URL(bounded.url).port), "127.0.0.1")
    try {
      await new Promise<void>((resolve) => socket.once("connect", resolve))
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${apiKey}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`
      )
      // The held request counts once its headers are read: wait for /v1/models to be refused.
      let models = 0
      for (let i = 0; i < 200 && models !== 503; i++) {
        models = (await fetch(`${bounded.url}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })).status
      }
      expect(models).toBe(503)
      const response = await scrape(bounded.url)
      expect(response.status).toBe(200)
      expect(parseExposition(await response.text()).has("modelgate_calls_total")).toBe(true)
    } finally {
      socket.destroy()
      await bounded.close()
    }
  })
})

describe("access to GET /metrics", () => {
  let keyed: Started
  let disabled: Started
  beforeAll(async () => {
    keyed = await startServer({ metrics: { key: { sha256: hashKey(scrapeKey) } } })
    disabled = await startServer({ metrics: { enabled: false } })
  })
  afterAll(async () => {
    await keyed.close()
    await disabled.close()
  })

  it("with a metrics key: no bearer, a wrong one or an API key → 401; the metrics key → 200", async () => {
    for (const authorization of [undefined, "Bearer wrong", `Bearer ${apiKey}`, scrapeKey, `Basic ${scrapeKey}`]) {
      const response = await scrape(keyed.url, authorization)
      expect(response.status).toBe(401)
      expect(await response.json()).toMatchObject({ error: { code: "invalid_metrics_key" } })
    }
    const response = await scrape(keyed.url, `Bearer ${scrapeKey}`)
    expect(response.status).toBe(200)
    expect(parseExposition(await response.text()).size).toBeGreaterThan(0)
  })

  it("disabled: 404, exactly as a path that does not exist", async () => {
    const response = await scrape(disabled.url)
    const unknown = await fetch(`${disabled.url}/no-such-path`)
    expect(response.status).toBe(404)
    expect(unknown.status).toBe(404)
    expect(response.headers.get("content-type")).toBe(unknown.headers.get("content-type"))
    expect(await response.text()).toBe(await unknown.text())
    // The rest of the server is unaffected.
    expect((await chat(disabled.url)).status).toBe(200)
  })

  it("the configuration: on by default with no key; a key must be a SHA-256 digest", async () => {
    const base = { keys: [{ id: "a", sha256: hashKey("a"), tenant: "t", workflows: ["*"] }], gateway: {} }
    const config = await Effect.runPromise(ServerConfig.decode(base))
    expect(config.metrics).toEqual({ enabled: true })
    const bad = await Effect.runPromise(
      Effect.flip(ServerConfig.decode({ ...base, metrics: { key: { sha256: scrapeKey } } }))
    )
    expect(bad.problems).toContain("$.metrics.key.sha256 is invalid")
    expect(JSON.stringify(bad)).not.toContain(scrapeKey)
  })
})

/** A collector on 127.0.0.1: records each request's path and body. */
const startCollector = async () => {
  const received: Array<{ readonly path: string; readonly body: string }> = []
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      received.push({ path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe("OTLP export from serve", () => {
  const otel = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SERVICE_NAME"] as const
  afterAll(() => {
    for (const name of otel) delete process.env[name]
  })

  it("OTEL_EXPORTER_OTLP_ENDPOINT set: the collector receives the call's spans and metrics (flushed at close)", async () => {
    const collector = await startCollector()
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.url
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json"
    process.env.OTEL_SERVICE_NAME = "modelgate-server-test"
    try {
      const server = await startServer()
      for (const name of otel) delete process.env[name]
      expect((await chat(server.url)).status).toBe(200)
      await server.close()
      const traces = collector.received.filter((r) => r.path === "/v1/traces").map((r) => r.body)
      const metrics = collector.received.filter((r) => r.path === "/v1/metrics").map((r) => r.body)
      expect(traces.length).toBeGreaterThan(0)
      expect(metrics.length).toBeGreaterThan(0)
      expect(traces.join("\n")).toContain('"name":"modelgate.generate"')
      expect(traces.join("\n")).toContain("modelgate-server-test")
      expect(metrics.join("\n")).toContain('"name":"modelgate.calls"')
      for (const body of [...traces, ...metrics]) {
        expect(body).not.toContain(canary)
        expect(body).not.toContain(apiKey)
      }
    } finally {
      await collector.close()
    }
  })

  it("no endpoint, or OTEL_SDK_DISABLED=true: nothing installed (the tracer stays Effect's own)", async () => {
    const collector = await startCollector()
    const native = Effect.runSync(Effect.tracer)
    const tracerUnder = () => Effect.runPromise(Effect.scoped(Effect.provide(Effect.tracer, Observability.layerOtlp)))
    try {
      expect(await tracerUnder()).toBe(native)
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.url
      process.env.OTEL_SDK_DISABLED = "true"
      expect(await tracerUnder()).toBe(native)
      delete process.env.OTEL_SDK_DISABLED
      expect(await tracerUnder()).not.toBe(native)
    } finally {
      for (const name of [...otel, "OTEL_SDK_DISABLED"]) delete process.env[name]
      await collector.close()
    }
  })

  it("an invalid OTEL variable fails startup, naming the variable", async () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:9"
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "grpc"
    const config = await Effect.runPromise(configOf("http://127.0.0.1:9", {}))
    const failure = await Effect.runPromise(Effect.flip(Effect.scoped(Launch.start(config))))
    for (const name of otel) delete process.env[name]
    expect(failure).toMatchObject({
      _tag: "ServerConfigError",
      problems: ["environment variable OTEL_EXPORTER_OTLP_PROTOCOL is invalid"]
    })
  })
})
