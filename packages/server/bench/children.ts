/**
 * The processes of the server benchmark, one role each (argv[2]): `mock` (the loopback mock
 * provider), `server` (the modelgate server over it), `proxy` (a bare `node:http` handler forwarding
 * the same request to the same mock with `fetch`). Each prints `port <n>` when listening and answers
 * the `cpu` / `memory` IPC messages with its own `process.cpuUsage()` / `memoryUsage()`.
 */
import { MockProviderServer } from "@modelgate/testing"
import { NodeHttpClient } from "@effect/platform-node"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import * as OpenAi from "@modelgate/adapters/openai"
import { Health, ModelCommand, ModelGateway } from "@modelgate/core"
import { Effect, Layer, Logger, Schema } from "effect"
import * as Http from "node:http"
import { gatewayConfig, Ticket } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
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

const mock = () =>
  Effect.runPromise(
    Effect.gen(function* () {
      const server = yield* MockProviderServer.make({
        record: false,
        defaultBehavior: MockProviderServer.success({ text: "Hello from the mock.", usage: { input: 12, output: 5 } })
      })
      report(Number(new URL(server.url).port))
      yield* Effect.never
    }).pipe(Effect.scoped)
  )

const server = (mockUrl: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const config = yield* Schema.decodeUnknown(ServerConfig)({
        listen: { host: "127.0.0.1", port: 0 },
        keys: [{ id: "bench", sha256: hashKey(benchKey), tenant: "bench", workflows: ["*"] }],
        providers: [{ id: "openai", kind: "openai", baseUrl: `${mockUrl}/v1` }],
        gateway: gatewayConfig,
        recorder: "none",
        limits: { maxConcurrentRequests: 10_000 }
      })
      const running = yield* Launch.start(config, { schemas: { Ticket } })
      report(running.port)
      yield* Effect.never
    }).pipe(Effect.scoped)
  )

/**
 * The gateway alone, in this process, over the same adapter, transport and mock as the server:
 * `calls` calls at concurrency 64, then reports the CPU per call (no HTTP server in front).
 */
const inProcess = (mockUrl: string, calls: number) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const gateway = yield* ModelGateway.ModelGateway
      const command = yield* ModelCommand.decodeUnknown({
        workflow: "chat",
        tenant: "bench",
        messages: [{ _tag: "user", content: "hello" }]
      })
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
    }).pipe(
      Effect.provide(
        ModelGateway.layerJson(gatewayConfig, { schemas: { Ticket } }).pipe(
          ModelGateway.withDefaults(process.env.BENCH_HEALTH === "memory" ? { health: Health.layerMemory() } : {}),
          // The same adapter and transport as the server's (`Launch`: direct undici).
          Layer.provide(
            OpenAi.layer({ id: "openai", baseUrl: `${mockUrl}/v1` }).pipe(Layer.provide(HttpTransport.layerUndici()))
          ),
          Layer.provide(NodeHttpClient.layerUndici)
        )
      ),
      Effect.provide(Logger.remove(Logger.defaultLogger))
    )
  )

const proxy = (mockUrl: string) => {
  const http = Http.createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" })
      res.end('{"status":"ok"}')
      return
    }
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      fetch(`${mockUrl}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer upstream" },
        body: Buffer.concat(chunks)
      })
        .then(async (upstream) => {
          const body = await upstream.text()
          res.writeHead(upstream.status, { "content-type": "application/json" })
          res.end(body)
        })
        .catch(() => {
          res.writeHead(502)
          res.end()
        })
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
if (role === "mock") void mock()
else if (role === "server") void server(upstream)
else if (role === "proxy") proxy(upstream)
else if (role === "inprocess") void inProcess(upstream, Number(process.argv[4] ?? 500))
