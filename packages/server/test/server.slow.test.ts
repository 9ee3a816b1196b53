/**
 * Real-time behaviour of the server over loopback: a client that disconnects mid-stream cancels
 * the call (record written, budget settled), body and header caps, the slowloris header timeout,
 * the concurrency bound's fast 503, graceful shutdown, and a bounded load run with autocannon
 * (plus a disconnect storm and slow readers).
 */
import { MockProviderServer } from "@modelgate/testing"
import autocannon from "autocannon"
import { Effect, Exit, Scope } from "effect"
import * as Http from "node:http"
import * as Net from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { gatewayConfig } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import * as Launch from "../src/Launch.js"
import * as ServerConfig from "../src/ServerConfig.js"
import { devKey, type Harness, startHarness, ticketSchemas } from "./fixtures.js"

const longText = "All work and no play makes a long streamed answer. ".repeat(40)

let harnesses: Array<Harness> = []
const start = async (options: Parameters<typeof startHarness>[0] = {}) => {
  const h = await startHarness(options)
  harnesses.push(h)
  return h
}
afterEach(async () => {
  await Promise.all(harnesses.map((h) => h.close()))
  harnesses = []
})

const until = async (check: () => Promise<boolean>, ms = 5000) => {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return false
}

const post = (url: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${devKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal })
  })

const slowStream = MockProviderServer.success({ text: longText, chunkDelayMs: 40, usage: { input: 10, output: 500 } })

/** Opens a stream, reads its first bytes, then drops the connection. */
const openAndDrop = async (url: string) => {
  const controller = new AbortController()
  const response = await post(
    url,
    { model: "chat", stream: true, messages: [{ role: "user", content: "go" }] },
    controller.signal
  )
  const reader = response.body?.getReader()
  await reader?.read()
  controller.abort()
  await reader?.cancel().catch(() => undefined)
}

describe("cancellation", () => {
  it("a client that disconnects mid-stream cancels the call: record written, budget settled", async () => {
    const h = await start({ budget: 1 })
    await h.run(h.mock.enqueue(slowStream))
    await openAndDrop(h.url)
    const recorded = await until(async () => (await h.run(h.recorder.records)).some((r) => r.mode === "stream"))
    expect(recorded).toBe(true)
    const [record] = (await h.run(h.recorder.records)).filter((r) => r.mode === "stream")
    expect(record?.outcome).toBe("cancelled")
    expect(record?.evidence.attempts.at(-1)?.outcome).toBe("cancelled")
    expect(record?.tenant).toBe("dev")
    const balance = await h.balance()
    expect(balance.reserved).toBe(0)
    expect(balance.committed).toBe(record?.evidence.cost.actual)
    expect(await until(async () => h.inflight() === 0)).toBe(true)
  })
})

describe("the provider request on a disconnect", () => {
  it("is aborted: the upstream connection closes before the provider finished", async () => {
    // A provider that streams one chunk every 50 ms for 10 s and notes when its client goes away.
    let upstreamClosedEarly = false
    const provider = Http.createServer((req, res) => {
      req.resume()
      res.writeHead(200, { "content-type": "text/event-stream" })
      let n = 0
      const chunk = (content: string) =>
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "mock-chat", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`
      const timer = setInterval(() => {
        if (++n > 200) {
          clearInterval(timer)
          res.end("data: [DONE]\n\n")
        } else res.write(chunk("word "))
      }, 50)
      res.on("close", () => {
        clearInterval(timer)
        if (!res.writableFinished) upstreamClosedEarly = true
      })
    })
    await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve))
    const address = provider.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    const scope = Effect.runSync(Scope.make())
    try {
      const config = await Effect.runPromise(
        ServerConfig.decode({
          listen: { port: 0 },
          keys: [{ id: "dev", sha256: hashKey(devKey), tenant: "dev", workflows: ["*"] }],
          providers: [{ id: "openai", kind: "openai", baseUrl: `http://127.0.0.1:${port}/v1` }],
          gateway: gatewayConfig,
          schemas: ticketSchemas,
          recorder: "none"
        })
      )
      const running = await Effect.runPromise(Launch.start(config).pipe(Scope.extend(scope)))
      await openAndDrop(running.url)
      expect(await until(async () => upstreamClosedEarly)).toBe(true)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      provider.close()
    }
  })
})

describe("per-call limits by header", () => {
  it("x-modelgate-timeout-ms shortens the deadline: a slow provider ends in 504 deadline_exceeded", async () => {
    const h = await start()
    await h.run(h.mock.enqueue(MockProviderServer.success({ text: "late", latencyMs: 3000 })))
    const started = Date.now()
    const response = await fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${devKey}`,
        "content-type": "application/json",
        "x-modelgate-timeout-ms": "300"
      },
      body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "x" }] })
    })
    expect(response.status).toBe(504)
    expect(await response.json()).toMatchObject({ error: { code: "deadline_exceeded" } })
    expect(Date.now() - started).toBeLessThan(2500)
  })
})

describe("hardening", () => {
  it("a body over the cap is a 413, headers over the cap a 431", async () => {
    const h = await start({ limits: { maxBodyBytes: 1024, maxHeaderBytes: 2048 } })
    const big = await post(h.url, { model: "chat", messages: [{ role: "user", content: "x".repeat(5000) }] })
    expect(big.status).toBe(413)
    expect(await big.json()).toMatchObject({ error: { code: "body_too_large" } })
    const headers = await fetch(`${h.url}/healthz`, { headers: { "x-big": "y".repeat(4096) } })
    expect(headers.status).toBe(431)
  })

  it("a client that never finishes its headers is cut at the header timeout (slowloris)", async () => {
    const h = await start({ limits: { headersTimeoutMs: 300, requestTimeoutMs: 600 } })
    const port = Number(new URL(h.url).port)
    const started = Date.now()
    const closedAfter = await new Promise<number>((resolve) => {
      const socket = Net.connect(port, "127.0.0.1", () => socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n"))
      const drip = setInterval(() => socket.write("X-Drip: 1\r\n"), 100)
      socket.on("data", () => undefined)
      socket.on("close", () => {
        clearInterval(drip)
        resolve(Date.now() - started)
      })
    })
    expect(closedAfter).toBeLessThan(2500)
  })

  it("past the bound on requests in flight: a fast 503", async () => {
    const h = await start({ limits: { maxConcurrentRequests: 2 } })
    const slow = MockProviderServer.success({ text: "late", latencyMs: 1500 })
    await h.run(h.mock.enqueue([slow, slow]))
    const inFlight = [1, 2].map(() => post(h.url, { model: "chat", messages: [{ role: "user", content: "x" }] }))
    await until(async () => h.inflight() >= 2)
    const started = Date.now()
    const refused = await post(h.url, { model: "chat", messages: [{ role: "user", content: "x" }] })
    expect(refused.status).toBe(503)
    expect(refused.headers.get("retry-after")).toBe("1")
    expect(Date.now() - started).toBeLessThan(500)
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200])
  })

  it("graceful shutdown: in-flight calls finish, new ones are refused, connections cut after the grace", async () => {
    const h = await start({ limits: { shutdownGraceMs: 3000 } })
    await h.run(h.mock.enqueue(MockProviderServer.success({ text: "finished", latencyMs: 500 })))
    const inFlight = post(h.url, { model: "chat", messages: [{ role: "user", content: "x" }] })
    await until(async () => h.inflight() >= 1)
    const stopping = h.shutdown()
    const answer = await inFlight
    expect(answer.status).toBe(200)
    expect(await answer.text()).toContain('"content":"finished"')
    await stopping
    await expect(fetch(`${h.url}/healthz`)).rejects.toThrow()
  })

  it("a stream past the grace is cut and cancelled (record written)", async () => {
    const h = await start({ limits: { shutdownGraceMs: 200 } })
    await h.run(h.mock.enqueue(slowStream))
    const response = await post(h.url, { model: "chat", stream: true, messages: [{ role: "user", content: "go" }] })
    const reader = response.body?.getReader()
    await reader?.read()
    await h.shutdown()
    await reader?.cancel().catch(() => undefined)
    expect(await until(async () => (await h.run(h.recorder.records)).some((r) => r.outcome === "cancelled"))).toBe(true)
  })
})

describe("load (bounded, loopback)", () => {
  it("64 connections for 2 s: no errors, no non-2xx", async () => {
    const h = await start()
    const result = await autocannon({
      url: `${h.url}/v1/chat/completions`,
      method: "POST",
      connections: 64,
      duration: 2,
      headers: { authorization: `Bearer ${devKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hello" }] })
    })
    expect(result.errors).toBe(0)
    expect(result.non2xx).toBe(0)
    // A loaded 2-core machine serves far fewer than an idle one: only the absence of failures is asserted.
    expect(result.requests.total).toBeGreaterThan(0)
    expect(await until(async () => h.inflight() === 0)).toBe(true)
  })

  it("a disconnect storm: every call cancelled and recorded, the budget fully settled", async () => {
    const h = await start({ budget: 10 })
    const n = 40
    await h.run(h.mock.enqueue(Array.from({ length: n }, () => slowStream)))
    await Promise.all(Array.from({ length: n }, () => openAndDrop(h.url)))
    const all = await until(
      async () => (await h.run(h.recorder.records)).filter((r) => r.mode === "stream").length === n,
      10_000
    )
    expect(all).toBe(true)
    const records = (await h.run(h.recorder.records)).filter((r) => r.mode === "stream")
    expect(records.every((r) => r.outcome === "cancelled")).toBe(true)
    const balance = await h.balance()
    expect(balance.reserved).toBe(0)
    expect(await until(async () => h.inflight() === 0)).toBe(true)
  })

  it("slow readers do not hold up other clients", async () => {
    const h = await start()
    const port = Number(new URL(h.url).port)
    const body = JSON.stringify({ model: "chat", stream: true, messages: [{ role: "user", content: "go" }] })
    const sockets = Array.from({ length: 16 }, () => {
      const socket = Net.connect(port, "127.0.0.1", () => {
        socket.write(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${devKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
        )
        socket.pause()
      })
      return socket
    })
    const started = Date.now()
    const answer = await post(h.url, { model: "chat", messages: [{ role: "user", content: "x" }] })
    expect(answer.status).toBe(200)
    expect(Date.now() - started).toBeLessThan(2000)
    for (const s of sockets) s.destroy()
    expect(await until(async () => h.inflight() === 0)).toBe(true)
  })
})
