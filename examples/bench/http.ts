/**
 * §2 HTTP path: eight clients call the same mock provider server, which runs in a child process so
 * that `process.cpuUsage()` in this process counts the client side only.
 *
 * - `gateway`: `ModelGateway.generate` over the OpenAI adapter, a workflow of one target;
 * - `fallback`: the same over a route of two targets (primary + fallback) where the primary answers:
 *   what a second target costs on the happy path;
 * - `failover`: the same route shape, but the primary (its model is `downModel`, one attempt) gets a
 *   retryable 503 on every call, so every call makes two HTTP exchanges and the fallback serves;
 * - `adapter`: the same OpenAI adapter called directly with the provider request the gateway built;
 * - `raw`: an `@effect/platform` `HttpClient` POST of the very request the adapter sends (URL,
 *   headers, body bytes), its JSON body read;
 * - `undici`: the floor: `undici`'s `request` of that same request on its own pooled `Agent`, its
 *   JSON body read;
 * - `openai`: the official `openai` client (`chat.completions.create`) with the same request body;
 * - `effectAi`: the Effect-native equivalent a user would write: `@effect/ai`'s
 *   `LanguageModel.generateText` (same messages, same output token limit) with `Effect.timeout`,
 *   through an `ExecutionPlan` of two `@effect/ai-openai` models (the first answers), on an
 *   `OpenAiClient` built once over the raw POST's `HttpClient`. `@effect/ai-openai` calls the
 *   Responses API (`POST /v1/responses`), which the mock serves with a body of the same answer.
 *
 * The gateway and the adapter use the adapters' default transport (`HttpTransport.layerUndici`,
 * what `OpenAi.layerConfig` builds); the raw POST and `@effect/ai` run on `NodeHttpClient.layerUndici`;
 * the `openai` client uses Node's global `fetch`, as it does by default. At each concurrency (1 and
 * 64), after one unmeasured warm-up per client, every round runs every client once with the same
 * number of calls, in rotated order (round r starts `r × clients / rounds` places further), each
 * after a full GC. Figures are medians over rounds with their range; ratios are medians of per-round
 * ratios, so that a noisy round hits both sides of a ratio alike.
 */
import { LanguageModel } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import type { HttpClientRequest } from "@effect/platform"
import { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import * as OpenAi from "@modelgate/adapters/openai"
import type * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import { Duration, Effect, ExecutionPlan, Layer, ManagedRuntime, Redacted, Schema } from "effect"
import { isDeepStrictEqual } from "node:util"
import OpenAI from "openai"
import { Agent } from "undici"
import { VERSION as openaiVersion } from "openai/version"
import { answerText, buildGateway, command, downModel, target, workflow } from "./fixtures.js"
import {
  callsFor,
  collectGarbage,
  median,
  type Profile,
  type Spread,
  type Summary,
  spread,
  summarize,
  timed
} from "./harness.js"
import { startMock } from "./mockProcess.js"

/** The clients compared, in the order of the first round. */
export const clients = ["gateway", "fallback", "failover", "adapter", "raw", "undici", "openai", "effectAi"] as const
export type Client = (typeof clients)[number]

export interface HttpSide {
  /** Per-call latency, ms (all rounds). */
  readonly latencyMs: Summary
  /** Calls per second over rounds. */
  readonly throughput: Spread
  /** Process CPU (user + system) per call, µs, over rounds. */
  readonly cpuUsPerCall: Spread
  /** Median over rounds of this client's CPU per call / the `openai` client's in the same round. */
  readonly cpuVsOpenAi: number
  /** Median over rounds of this client's calls/s / the `openai` client's in the same round. */
  readonly throughputVsOpenAi: number
}

export interface HttpLevel {
  readonly concurrency: number
  /** Calls per client per round. */
  readonly callsPerRound: number
  /** The order the clients ran in, per round. */
  readonly order: ReadonlyArray<ReadonlyArray<Client>>
  readonly gateway: HttpSide
  readonly fallback: HttpSide
  readonly failover: HttpSide
  readonly adapter: HttpSide
  readonly raw: HttpSide
  readonly undici: HttpSide
  readonly openai: HttpSide
  readonly effectAi: HttpSide
  /** Primary + fallback (primary answers) vs one target: median of per-round CPU differences, µs per call. */
  readonly secondTargetAddedCpuUs: number
  /** Gateway vs the adapter alone: median over rounds of the per-round CPU difference, µs per call. */
  readonly addedOverAdapterCpuUs: number
  /** Gateway vs raw POST: medians over rounds of the per-round differences / ratios. */
  readonly addedP50Ms: number
  readonly addedP99Ms: number
  readonly addedCpuUs: number
  readonly throughputRatio: number
}

export interface HttpResults {
  readonly server: "child process"
  readonly openaiClient: string
  readonly levels: ReadonlyArray<HttpLevel>
}

/** Makes `items.length` calls with `concurrency` in flight, pushing each call's latency (ms) to `samples`. */
type Driver = (items: ReadonlyArray<number>, concurrency: number, samples: Array<number>) => Promise<void>

/** An Effect client: all calls in one `runPromise`, `Effect.forEach` with the concurrency. */
const effectDriver =
  (call: Effect.Effect<unknown, unknown>): Driver =>
  (items, concurrency, samples) => {
    const one = Effect.suspend(() => {
      const t0 = performance.now()
      return Effect.map(call, () => {
        samples.push(performance.now() - t0)
      })
    })
    return Effect.runPromise(Effect.forEach(items, () => one, { concurrency, discard: true }))
  }

/** A promise client: `concurrency` async workers taking calls until all are made. */
const promiseDriver =
  (call: () => Promise<unknown>): Driver =>
  async (items, concurrency, samples) => {
    let started = 0
    const worker = async () => {
      while (started < items.length) {
        started++
        const t0 = performance.now()
        await call()
        samples.push(performance.now() - t0)
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker))
  }

interface Round {
  readonly samples: ReadonlyArray<number>
  readonly throughput: number
  readonly cpuUsPerCall: number
}

/** One timed round; measured rounds (not warm-ups) start after a full GC. */
const runRound = async (drive: Driver, calls: number, concurrency: number, measured: boolean): Promise<Round> => {
  const items = Array.from({ length: calls }, (_, i) => i)
  const samples: Array<number> = []
  if (measured) collectGarbage(1)
  const t = await timed(() => drive(items, concurrency, samples))
  return { samples, throughput: (calls / t.wallMs) * 1000, cpuUsPerCall: (t.cpuMs * 1000) / calls }
}

const level = async (profile: Profile, drivers: Record<Client, Driver>, concurrency: number): Promise<HttpLevel> => {
  // Warm-up (JIT, connection pools); the slowest client's rate sizes the rounds to about
  // `roundSeconds` each, with the same number of calls for every client.
  const warm = Math.max(10, Math.floor(profile.httpCalls / 10))
  let rate = Number.POSITIVE_INFINITY
  for (const c of clients) rate = Math.min(rate, (await runRound(drivers[c], warm, concurrency, false)).throughput)
  const calls = callsFor(rate, profile.roundSeconds, Math.min(profile.httpCalls, 2 * concurrency), profile.httpCalls)
  const rounds: Record<Client, Array<Round>> = {
    gateway: [],
    fallback: [],
    failover: [],
    adapter: [],
    raw: [],
    undici: [],
    openai: [],
    effectAi: []
  }
  const order: Array<ReadonlyArray<Client>> = []
  for (let round = 0; round < profile.httpRounds; round++) {
    // The rounds spread each client's start over the order (with 4 rounds of 8: every other place).
    const shift = Math.floor((round * clients.length) / profile.httpRounds)
    const thisRound = clients.map((_, i) => clients[(i + shift) % clients.length]!)
    order.push(thisRound)
    for (const c of thisRound) rounds[c].push(await runRound(drivers[c], calls, concurrency, true))
  }
  const perRound = (f: (i: number) => number) => median(rounds.openai.map((_, i) => f(i)))
  const side = (c: Client): HttpSide => {
    const rs = rounds[c]
    return {
      latencyMs: summarize(rs.flatMap((r) => r.samples)),
      throughput: spread(rs.map((r) => r.throughput)),
      cpuUsPerCall: spread(rs.map((r) => r.cpuUsPerCall)),
      cpuVsOpenAi: perRound((i) => rs[i]!.cpuUsPerCall / rounds.openai[i]!.cpuUsPerCall),
      throughputVsOpenAi: perRound((i) => rs[i]!.throughput / rounds.openai[i]!.throughput)
    }
  }
  const g = rounds.gateway
  const r = rounds.raw
  const p = (round: Round, q: "p50" | "p99") => summarize(round.samples)[q]
  return {
    concurrency,
    callsPerRound: calls,
    order,
    gateway: side("gateway"),
    fallback: side("fallback"),
    failover: side("failover"),
    adapter: side("adapter"),
    raw: side("raw"),
    undici: side("undici"),
    openai: side("openai"),
    effectAi: side("effectAi"),
    secondTargetAddedCpuUs: perRound((i) => rounds.fallback[i]!.cpuUsPerCall - g[i]!.cpuUsPerCall),
    addedOverAdapterCpuUs: perRound((i) => g[i]!.cpuUsPerCall - rounds.adapter[i]!.cpuUsPerCall),
    addedP50Ms: perRound((i) => p(g[i]!, "p50") - p(r[i]!, "p50")),
    addedP99Ms: perRound((i) => p(g[i]!, "p99") - p(r[i]!, "p99")),
    addedCpuUs: perRound((i) => g[i]!.cpuUsPerCall - r[i]!.cpuUsPerCall),
    throughputRatio: perRound((i) => g[i]!.throughput / r[i]!.throughput)
  }
}

/**
 * The Chat Completions body the OpenAI adapter sends for the bench command, as `openai` client
 * parameters. Excess properties fail the decode: if the adapter starts sending a field this does
 * not carry, the comparison stops instead of silently sending a different body.
 */
const ChatBody = Schema.parseJson(
  Schema.Struct({
    model: Schema.String,
    messages: Schema.mutable(
      Schema.Array(
        Schema.Union(
          Schema.Struct({ role: Schema.Literal("system"), content: Schema.String }),
          Schema.Struct({ role: Schema.Literal("user"), content: Schema.String })
        )
      )
    ),
    max_completion_tokens: Schema.optionalWith(Schema.Number, { exact: true })
  })
)
const decodeChatBody = Schema.decodeUnknownSync(ChatBody, { onExcessProperty: "error" })

const bodyText = (request: HttpClientRequest.HttpClientRequest): string => {
  if (request.body._tag !== "Uint8Array") throw new Error(`bench http: unexpected request body ${request.body._tag}`)
  return new TextDecoder().decode(request.body.body)
}

const apiKey = "sk-bench-not-a-secret"

/**
 * Probe (not timed): one gateway call through an adapter that records the provider request it is
 * given, over a client that records the HTTP request sent. Returns both.
 */
const probeRequests = async (http: HttpClient.HttpClient, baseUrl: string) => {
  const t = target("model://openai/bench@eu", "openai")
  let providerRequest: ProviderAdapter.ProviderRequest | undefined
  let httpRequest: HttpClientRequest.HttpClientRequest | undefined
  const probeAdapter = await Effect.runPromise(
    OpenAi.make({ baseUrl, apiKey: Redacted.make(apiKey) }).pipe(
      Effect.provideService(
        HttpClient.HttpClient,
        HttpClient.tapRequest(http, (request) =>
          Effect.sync(() => {
            httpRequest ??= request
          })
        )
      )
    )
  )
  const probe = await buildGateway({
    targets: [t],
    workflows: [workflow("bench.http", [t.ref])],
    adapters: {
      openai: {
        generate: (request) => {
          providerRequest ??= request
          return probeAdapter.generate(request)
        },
        stream: probeAdapter.stream
      }
    }
  })
  try {
    const check = await Effect.runPromise(probe.gateway.generate(command("bench.http")))
    if (check.content.text !== answerText || check.evidence.attempts[0]?.httpStatus !== 200) {
      throw new Error("bench http: the gateway did not get the mock answer")
    }
  } finally {
    await probe.dispose()
  }
  if (providerRequest === undefined || httpRequest === undefined) throw new Error("bench http: no request captured")
  return { providerRequest, httpRequest }
}

/** The `openai` client must send the same body: checked once through a recording `fetch`. */
const checkSdkBody = async (baseUrl: string, params: OpenAI.ChatCompletionCreateParamsNonStreaming, body: string) => {
  let sdkBody: unknown
  const probeSdk = new OpenAI({
    baseURL: baseUrl,
    apiKey,
    maxRetries: 0,
    fetch: (input, init) => {
      if (typeof init?.body === "string") sdkBody = JSON.parse(init.body)
      return fetch(input, init)
    }
  })
  const sdkAnswer = await probeSdk.chat.completions.create(params)
  if (sdkAnswer.choices[0]?.message.content !== answerText) {
    throw new Error("bench http: the openai client did not get the mock answer")
  }
  if (!isDeepStrictEqual(sdkBody, JSON.parse(body))) {
    throw new Error(`bench http: the openai client sent ${JSON.stringify(sdkBody)}, the adapter ${body}`)
  }
}

/**
 * The gateway over routes of two targets of the same adapter: `fallback` (primary answers) and
 * `failover` (the primary's model is `downModel`, which the mock answers with a 503; one attempt on
 * it, so the call moves to the fallback at once). Each is checked once for the attempts it makes.
 */
const twoTargetGateway = async (adapter: Omit<ProviderAdapter.ProviderAdapter, "provider">) => {
  const primary = target("model://openai/bench@eu", "openai")
  const backup = target("model://openai/bench-fallback@eu", "openai", { model: "bench-fallback" })
  const down = target("model://openai/bench-down@eu", "openai", { model: downModel, maxAttempts: 1 })
  const stack = await buildGateway({
    targets: [primary, backup, down],
    workflows: [
      workflow("bench.http.fallback", [primary.ref, backup.ref]),
      workflow("bench.http.failover", [down.ref, backup.ref])
    ],
    adapters: { openai: adapter }
  })
  const fallback = command("bench.http.fallback")
  const failover = command("bench.http.failover")
  try {
    const happy = await Effect.runPromise(stack.gateway.generate(fallback))
    const served = await Effect.runPromise(stack.gateway.generate(failover))
    const statuses = (r: typeof happy) => r.evidence.attempts.map((a) => `${a.target}:${a.httpStatus}`).join(",")
    if (happy.content.text !== answerText || statuses(happy) !== `${primary.ref}:200`) {
      throw new Error(`bench http: primary + fallback made attempts ${statuses(happy)}`)
    }
    if (served.content.text !== answerText || statuses(served) !== `${down.ref}:503,${backup.ref}:200`) {
      throw new Error(`bench http: the failover made attempts ${statuses(served)}`)
    }
  } catch (error) {
    await stack.dispose()
    throw error
  }
  return { stack, fallback, failover }
}

/**
 * The `@effect/ai` call: `generateText` of the same messages with a timeout, through an
 * `ExecutionPlan` of two OpenAI models, on an `OpenAiClient` built once; checked once.
 */
const effectAiCall = async (
  http: HttpClient.HttpClient,
  baseUrl: string,
  params: OpenAI.ChatCompletionCreateParamsNonStreaming
) => {
  const runtime = ManagedRuntime.make(
    OpenAiClient.layer({ apiKey: Redacted.make(apiKey), apiUrl: baseUrl }).pipe(
      Layer.provide(Layer.succeed(HttpClient.HttpClient, http))
    )
  )
  try {
    const client = await runtime.runPromise(OpenAiClient.OpenAiClient)
    const config = params.max_completion_tokens != null ? { max_output_tokens: params.max_completion_tokens } : {}
    const plan = ExecutionPlan.make(
      { provide: OpenAiLanguageModel.model(params.model, config), attempts: 1 },
      { provide: OpenAiLanguageModel.model("bench-fallback", config), attempts: 1 }
    )
    const prompt = params.messages.map((m) =>
      m.role === "system"
        ? { role: "system" as const, content: String(m.content) }
        : { role: "user" as const, content: String(m.content) }
    )
    const call = LanguageModel.generateText({ prompt }).pipe(
      Effect.timeout(Duration.seconds(30)),
      Effect.withExecutionPlan(plan),
      Effect.provideService(OpenAiClient.OpenAiClient, client)
    )
    const check = await Effect.runPromise(call)
    if (check.text !== answerText) throw new Error(`bench http: @effect/ai got ${JSON.stringify(check.text)}`)
    return { call, dispose: () => runtime.dispose() }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}

export const run = async (profile: Profile): Promise<HttpResults> => {
  const server = await startMock()
  // One undici client for the Effect clients: same pool, same dispatcher.
  const clientRuntime = ManagedRuntime.make(NodeHttpClient.layerUndici)
  // The adapters' default transport, its own pool; and the floor's own undici pool.
  const transportRuntime = ManagedRuntime.make(HttpTransport.layerUndici())
  const agent = new Agent()
  // What the run built after these, disposed in reverse order whatever happens.
  const built: Array<() => Promise<void>> = []
  try {
    const http = await clientRuntime.runPromise(HttpClient.HttpClient)
    const { providerRequest: providerReq, httpRequest: request } = await probeRequests(http, server.baseUrl)
    const body = bodyText(request)
    const params: OpenAI.ChatCompletionCreateParamsNonStreaming = decodeChatBody(body)
    await checkSdkBody(server.baseUrl, params, body)
    const ai = await effectAiCall(http, server.baseUrl, params)
    built.push(ai.dispose)

    // The measured clients (no recording wrappers); the adapter over the default transport.
    const adapter = await transportRuntime.runPromise(
      OpenAi.make({ baseUrl: server.baseUrl, apiKey: Redacted.make(apiKey) }).pipe(
        Effect.provideService(HttpClient.HttpClient, http)
      )
    )
    const url = new URL(request.url)
    const undiciOptions = {
      origin: url.origin,
      path: url.pathname + url.search,
      method: "POST" as const,
      headers: { ...request.headers },
      body: body
    }
    const t = target("model://openai/bench@eu", "openai")
    const stack = await buildGateway({
      targets: [t],
      workflows: [workflow("bench.http", [t.ref])],
      adapters: { openai: adapter }
    })
    built.push(stack.dispose)
    const cmd = command("bench.http")
    const two = await twoTargetGateway(adapter)
    built.push(two.stack.dispose)
    const sdk = new OpenAI({ baseURL: server.baseUrl, apiKey, maxRetries: 0 })
    const drivers: Record<Client, Driver> = {
      // Every client builds its call per call, as a caller does.
      gateway: effectDriver(Effect.suspend(() => stack.gateway.generate(cmd))),
      fallback: effectDriver(Effect.suspend(() => two.stack.gateway.generate(two.fallback))),
      failover: effectDriver(Effect.suspend(() => two.stack.gateway.generate(two.failover))),
      adapter: effectDriver(Effect.suspend(() => adapter.generate(providerReq))),
      raw: effectDriver(Effect.suspend(() => Effect.flatMap(http.execute(request), (response) => response.json))),
      undici: promiseDriver(() => agent.request(undiciOptions).then((response) => response.body.json())),
      openai: promiseDriver(() => sdk.chat.completions.create(params)),
      effectAi: effectDriver(Effect.suspend(() => ai.call))
    }
    const levels = [await level(profile, drivers, 1), await level(profile, drivers, 64)]
    return { server: "child process", openaiClient: `openai ${openaiVersion}`, levels }
  } finally {
    for (const dispose of built.reverse()) await dispose()
    await clientRuntime.dispose()
    await transportRuntime.dispose()
    await agent.close()
    await server.stop()
  }
}
