/**
 * The processes of the server benchmark, one role each (argv[2]): `mock` (the loopback mock
 * provider's answer replayed by a bare handler; `mock effect`: the mock provider itself), `server` (the modelgate server over it), `proxy` (a bare `node:http` handler forwarding
 * the same request to the same mock with `undici.request` on a keep-alive pool — the floor a
 * hand-written proxy reaches —, with global `fetch` on `POST /fetch`, and answering `POST /fixed`
 * with a fixed answer),
 * `fixed` (the server with a gateway that answers at once), `inprocess` (the gateway alone). Each prints `port <n>` when listening and answers
 * the `cpu` / `memory` IPC messages with its own `process.cpuUsage()` / `memoryUsage()`.
 */
import { MockProviderServer } from "@modelgate/testing"
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import * as OpenAi from "@modelgate/adapters/openai"
import { GatewayConfig, Health, ModelCommand, ModelGateway, RateLimitStore } from "@modelgate/core"
import { Effect, Layer, Logger, Schema } from "effect"
import * as Http from "node:http"
import { Pool } from "undici"
import { gatewayConfig, Ticket } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import * as Server from "../src/Server.js"
import { ServerConfig } from "../src/ServerConfig.js"

export const benchKey = "mg-bench-key"

const report = (port: number) => {
  process.send?.({ port })
  process.on("message", (message) => {
    if (message === "cpu") process.send?.({ cpu: process.cpuUsage() })
    if (message === "memory") {
      globalThis.gc?.()
      process.send?.({ memory: process.memoryUsage() })
    }
  })
}

const upstreamHeaders = { "content-type": "application/json", authorization: "Bearer upstream" }

const mockProvider = MockProviderServer.make({
  record: false,
  defaultBehavior: MockProviderServer.success({ text: "Hello from the mock.", usage: { input: 12, output: 5 } })
})

/** The response headers a replay sets itself (or that describe one connection, not the answer). */
const perConnection = new Set(["date", "content-length", "connection", "keep-alive", "transfer-encoding"])

/**
 * The bench's upstream. `effect`: the scripted mock provider itself (`MockProviderServer`, on
 * `@effect/platform`'s server). Default: the mock provider's answer to the bench request, captured
 * once at start (status, headers, body) and replayed by a bare `node:http` handler for every
 * `POST /v1/chat/completions` (other requests go to the mock provider). The systems under test get
 * the same bytes either way; the replay costs a fraction of the mock's CPU per request, which
 * otherwise takes as much of the machine's two cores as the server itself (see docs/server.md).
 */
const mock = (kind: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const server = yield* mockProvider
      if (kind === "effect") report(Number(new URL(server.url).port))
      else yield* Effect.promise(() => replay(server.url))
      yield* Effect.never
    }).pipe(Effect.scoped)
  )

const replay = async (mockUrl: string) => {
  const answer = await fetch(`${mockUrl}/v1/chat/completions`, {
    method: "POST",
    headers: upstreamHeaders,
    body: JSON.stringify({ model: "mock-chat", messages: [{ role: "user", content: "hello" }] })
  })
  const body = Buffer.from(await answer.arrayBuffer())
  const headers: Record<string, string> = { "content-length": String(body.length) }
  answer.headers.forEach((value, name) => {
    if (!perConnection.has(name)) headers[name] = value
  })
  const http = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/chat/completions") {
        res.writeHead(answer.status, headers)
        res.end(body)
        return
      }
      const forwarded: Record<string, string> = {}
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === "string" && name !== "host" && name !== "content-length") forwarded[name] = value
      const init: RequestInit = { method: req.method ?? "GET", headers: forwarded }
      if (chunks.length > 0) init.body = Buffer.concat(chunks)
      fetch(`${mockUrl}${req.url ?? "/"}`, init)
        .then(async (upstream) => {
          res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "text/plain" })
          res.end(Buffer.from(await upstream.arrayBuffer()))
        })
        .catch(() => {
          res.writeHead(502)
          res.end()
        })
    })
  })
  http.keepAliveTimeout = 60_000
  http.listen(0, "127.0.0.1", () => {
    const address = http.address()
    report(typeof address === "object" && address !== null ? address.port : 0)
  })
}

const benchConfig = (mockUrl: string) =>
  Schema.decodeUnknown(ServerConfig)({
    listen: { host: "127.0.0.1", port: 0 },
    keys: [{ id: "bench", sha256: hashKey(benchKey), tenant: "bench", workflows: ["*"] }],
    providers: [{ id: "openai", kind: "openai", baseUrl: `${mockUrl}/v1` }],
    gateway: gatewayConfig,
    recorder: "none",
    limits: { maxConcurrentRequests: 10_000 }
  })

const server = (mockUrl: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const running = yield* Launch.start(yield* benchConfig(mockUrl), { schemas: { Ticket } })
      report(running.port)
      yield* Effect.never
    }).pipe(Effect.scoped)
  )

/** The gateway over the same adapter, transport and mock as the server's (`Launch`: direct undici). */
const gatewayLayer = (mockUrl: string) =>
  ModelGateway.layerJson(gatewayConfig, { schemas: { Ticket } }).pipe(
    ModelGateway.withDefaults(process.env.BENCH_HEALTH === "memory" ? { health: Health.layerMemory() } : {}),
    Layer.provide(
      OpenAi.layer({ id: "openai", baseUrl: `${mockUrl}/v1` }).pipe(Layer.provide(HttpTransport.layerUndici()))
    ),
    Layer.provide(NodeHttpClient.layerUndici)
  )

const helloCommand = ModelCommand.decodeUnknown({
  workflow: "chat",
  tenant: "bench",
  messages: [{ _tag: "user", content: "hello" }]
})

/**
 * The server's own share: the same server with a gateway whose `generate` answers at once with
 * the result of one real call over the mock (captured at start), so a request's CPU is the
 * server's alone (HTTP, key, body, command, response), set against a bare `node:http` handler.
 */
const fixedServer = (mockUrl: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const real = yield* ModelGateway.ModelGateway
      const result = yield* real.generate(yield* helloCommand)
      const config = yield* benchConfig(mockUrl)
      const running = yield* Server.make(
        Launch.serverOptions(config, yield* GatewayConfig.decode(config.gateway))
      ).pipe(
        Effect.provideService(ModelGateway.ModelGateway, { ...real, generate: () => Effect.succeed(result) }),
        Effect.provide(RateLimitStore.layerMemory)
      )
      report(running.port)
      yield* Effect.never
    }).pipe(Effect.scoped, Effect.provide(gatewayLayer(mockUrl)))
  )

/**
 * The gateway alone, in this process, over the same adapter, transport and mock as the server:
 * `calls` calls at concurrency 64, then reports the CPU per call (no HTTP server in front).
 */
const inProcess = (mockUrl: string, calls: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const command = yield* helloCommand
      const run = Effect.forEach(Array.from({ length: calls }), () => gateway.generate(command), {
        concurrency: 64,
        discard: true
      })
      yield* run
      const before = process.cpuUsage()
      const started = performance.now()
      yield* run
      const cpu = process.cpuUsage(before)
      process.send?.({
        inProcess: {
          cpuUsPerCall: (cpu.user + cpu.system) / calls,
          callsPerSecond: calls / ((performance.now() - started) / 1000)
        }
      })
    }).pipe(Effect.provide(gatewayLayer(mockUrl)), Effect.provide(Logger.remove(Logger.defaultLogger)))
  )

/** The mock's answer to the bench request (for the bare handler's fixed answer). */
const mockAnswer = (mockUrl: string) =>
  fetch(`${mockUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer upstream" },
    body: JSON.stringify({ model: "mock-chat", messages: [{ role: "user", content: "hello" }] })
  }).then((r) => r.text())

const proxy = async (mockUrl: string) => {
  const fixed = await mockAnswer(mockUrl)
  // A keep-alive pool to the mock, unbounded in connections like the server's undici transport.
  const pool = new Pool(mockUrl, { keepAliveTimeout: 60_000 })
  const http = Http.createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" })
      res.end('{"status":"ok"}')
      return
    }
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      if (req.url === "/fixed") {
        // A bare handler with a fixed answer: parse the body, answer JSON (no upstream call).
        JSON.parse(Buffer.concat(chunks).toString("utf8"))
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify(JSON.parse(fixed)))
        return
      }
      const body = Buffer.concat(chunks)
      const failed = () => {
        res.writeHead(502)
        res.end()
      }
      if (req.url === "/fetch") {
        // The same forward with global `fetch` (Node's bundled undici behind the WHATWG API).
        fetch(`${mockUrl}/v1/chat/completions`, { method: "POST", headers: upstreamHeaders, body })
          .then(async (upstream) => {
            const text = await upstream.text()
            res.writeHead(upstream.status, { "content-type": "application/json" })
            res.end(text)
          })
          .catch(failed)
        return
      }
      pool
        .request({ path: "/v1/chat/completions", method: "POST", headers: upstreamHeaders, body })
        .then(async (upstream) => {
          const text = await upstream.body.text()
          res.writeHead(upstream.statusCode, { "content-type": "application/json" })
          res.end(text)
        })
        .catch(failed)
    })
  })
  http.listen(0, "127.0.0.1", () => {
    const address = http.address()
    report(typeof address === "object" && address !== null ? address.port : 0)
  })
}

process.on("SIGTERM", () => process.exit(0))

const role = process.argv[2]
const upstream = process.argv[3] ?? ""
if (role === "mock") void mock(upstream)
else if (role === "server") void server(upstream)
else if (role === "proxy") void proxy(upstream)
else if (role === "fixed") void fixedServer(upstream)
else if (role === "inprocess") void inProcess(upstream, Number(process.argv[4] ?? 500))
