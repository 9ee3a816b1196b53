/**
 * The processes of the server benchmark, one role each (argv[2]): `mock` (the loopback mock
 * provider), `server` (the modelgate server over it), `proxy` (a bare `node:http` handler forwarding
 * the same request to the same mock with `fetch`). Each prints `port <n>` when listening and answers
 * the `cpu` / `memory` IPC messages with its own `process.cpuUsage()` / `memoryUsage()`.
 */
import { MockProviderServer } from "@modelgate/testing"
import { Effect, Schema } from "effect"
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
