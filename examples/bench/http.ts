/**
 * §2 HTTP path: `generate` through the OpenAI adapter to the mock provider server (in a child
 * process) vs a raw `HttpClient` POST of the very same request to the same server, both over one
 * undici client: latency p50/p99, throughput and client CPU per call, at concurrency 1 and 64.
 */
import type { HttpClientRequest } from "@effect/platform"
import { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import * as OpenAi from "@modelgate/adapters/openai"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { buildGateway, command, target, workflow } from "./fixtures.js"
import { callsFor, median, type Profile, type Summary, summarize, timed } from "./harness.js"

export interface HttpSide {
  /** Per-call latency, ms (all rounds). */
  readonly latencyMs: Summary
  /** Calls per second, median over rounds. */
  readonly throughput: number
  /** Process CPU (user + system) per call, µs, median over rounds. */
  readonly cpuUsPerCall: number
}

export interface HttpLevel {
  readonly concurrency: number
  readonly raw: HttpSide
  readonly gateway: HttpSide
  /** Medians over rounds of the per-round differences / ratios. */
  readonly addedP50Ms: number
  readonly addedP99Ms: number
  readonly addedCpuUs: number
  readonly throughputRatio: number
}

export interface HttpResults {
  readonly server: "child process"
  readonly levels: ReadonlyArray<HttpLevel>
}

/** Starts `mockServer.ts` in a child process; resolves with its OpenAI base URL. */
const startServer = async () => {
  const script = fileURLToPath(new URL("./mockServer.ts", import.meta.url))
  const cwd = fileURLToPath(new URL("..", import.meta.url))
  const child = spawn(process.execPath, ["--import", "tsx", script], { cwd, stdio: ["pipe", "pipe", "inherit"] })
  const lines = createInterface({ input: child.stdout })
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve)
    child.once("exit", (code) => reject(new Error(`mock server exited with ${code}`)))
  })
  const info = JSON.parse(first) as { readonly openai: string }
  return {
    baseUrl: info.openai,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.stdin?.end()
        setTimeout(() => child.kill("SIGTERM"), 2_000).unref()
      })
  }
}

interface Round {
  readonly samples: Array<number>
  readonly throughput: number
  readonly cpuUsPerCall: number
}

const runRound = async (call: Effect.Effect<unknown, unknown>, calls: number, concurrency: number): Promise<Round> => {
  const samples: Array<number> = []
  const one = Effect.suspend(() => {
    const t0 = performance.now()
    return Effect.map(call, () => {
      samples.push(performance.now() - t0)
    })
  })
  const items = Array.from({ length: calls }, (_, i) => i)
  const t = await timed(() => Effect.runPromise(Effect.forEach(items, () => one, { concurrency, discard: true })))
  return { samples, throughput: (calls / t.wallMs) * 1000, cpuUsPerCall: (t.cpuMs * 1000) / calls }
}

const side = (rounds: ReadonlyArray<Round>): HttpSide => ({
  latencyMs: summarize(rounds.flatMap((r) => r.samples)),
  throughput: median(rounds.map((r) => r.throughput)),
  cpuUsPerCall: median(rounds.map((r) => r.cpuUsPerCall))
})

const level = async (
  profile: Profile,
  raw: Effect.Effect<unknown, unknown>,
  viaGateway: Effect.Effect<unknown, unknown>,
  concurrency: number
): Promise<HttpLevel> => {
  // Warm-up (JIT, connection pool); its rates size the rounds to about `roundSeconds` each.
  const warm = Math.max(10, Math.floor(profile.httpCalls / 10))
  const rate = Math.min(
    (await runRound(raw, warm, concurrency)).throughput,
    (await runRound(viaGateway, warm, concurrency)).throughput
  )
  const calls = callsFor(rate, profile.roundSeconds, Math.min(profile.httpCalls, 2 * concurrency), profile.httpCalls)
  const r: Array<Round> = []
  const g: Array<Round> = []
  for (let round = 0; round < profile.rounds; round++) {
    if (round % 2 === 0) {
      r.push(await runRound(raw, calls, concurrency))
      g.push(await runRound(viaGateway, calls, concurrency))
    } else {
      g.push(await runRound(viaGateway, calls, concurrency))
      r.push(await runRound(raw, calls, concurrency))
    }
  }
  const per = (f: (rr: Round, gg: Round) => number) => median(r.map((rr, i) => f(rr, g[i]!)))
  const p = (rr: Round, q: "p50" | "p99") => summarize(rr.samples)[q]
  return {
    concurrency,
    raw: side(r),
    gateway: side(g),
    addedP50Ms: per((rr, gg) => p(gg, "p50") - p(rr, "p50")),
    addedP99Ms: per((rr, gg) => p(gg, "p99") - p(rr, "p99")),
    addedCpuUs: per((rr, gg) => gg.cpuUsPerCall - rr.cpuUsPerCall),
    throughputRatio: per((rr, gg) => gg.throughput / rr.throughput)
  }
}

export const run = async (profile: Profile): Promise<HttpResults> => {
  const server = await startServer()
  // One undici client for both sides: same pool, same dispatcher.
  const clientRuntime = ManagedRuntime.make(NodeHttpClient.layerUndici)
  try {
    const client = await clientRuntime.runPromise(HttpClient.HttpClient)
    let captured: HttpClientRequest.HttpClientRequest | undefined
    const capturing = HttpClient.tapRequest(client, (request) =>
      Effect.sync(() => {
        captured ??= request
      })
    )
    const t = target("model://openai/bench@eu", "openai")
    const wf = workflow("bench.http", [t.ref])
    // The adapter as users build it (`OpenAi.make` over the HttpClient in context).
    const adapter = await Effect.runPromise(
      OpenAi.make({ baseUrl: server.baseUrl, apiKey: Redacted.make("sk-bench-not-a-secret") }).pipe(
        Effect.provide(Layer.succeed(HttpClient.HttpClient, capturing))
      )
    )
    const stack = await buildGateway({ targets: [t], workflows: [wf], adapters: { openai: adapter } })
    try {
      const cmd = command("bench.http")
      const viaGateway = stack.gateway.generate(cmd)
      const check = await Effect.runPromise(viaGateway)
      if (check.content.text === undefined || check.evidence.attempts[0]?.httpStatus !== 200) {
        throw new Error("bench http: the gateway did not get the mock answer")
      }
      const request = captured
      if (request === undefined) throw new Error("bench http: no request captured")
      // The same request (URL, headers, body bytes), sent raw and its JSON body read.
      const raw = Effect.flatMap(client.execute(request), (response) => response.json)
      const levels = [await level(profile, raw, viaGateway, 1), await level(profile, raw, viaGateway, 64)]
      return { server: "child process", levels }
    } finally {
      await stack.dispose()
    }
  } finally {
    await clientRuntime.dispose()
    await server.stop()
  }
}
