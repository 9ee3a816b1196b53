/**
 * A hostile or broken upstream, through the real adapters over HTTP (and through the gateway):
 * issue 12, adapter half. An upstream that echoes the prompt into every field it controls must
 * not get it into any record, span, log line or error; oversized events, identifiers and usage
 * counts are bounded; deltas that arrive in the same read as an error event still reach the caller.
 */
import type { HttpClient } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway } from "@modelgate/core"
import type { GatewayError } from "@modelgate/core/Errors"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import type { CallRecord } from "@modelgate/core/ModelResult"
import type { ProviderAdapter, ProviderResponse } from "@modelgate/core/ProviderAdapter"
import type { StreamEvent } from "@modelgate/core/StreamEvent"
import type { Behavior, Provider as MockProvider, RecordedRequest } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import * as RecordingTracer from "@modelgate/testing/RecordingTracer"
import { Cause, Chunk, Effect, Either, Exit, Layer, Logger, LogLevel, Option, Schema, Stream } from "effect"
import * as Anthropic from "../src/Anthropic.js"
import * as Gemini from "../src/Gemini.js"
import { maxModelLength, maxRequestIdLength, truncatedMark } from "../src/internal/bounded.js"
import { defaultMaxEventBytes } from "../src/internal/sse.js"
import { maxTokenCount } from "../src/internal/usage.js"
import * as OpenAi from "../src/OpenAi.js"
import * as OpenAiCompatible from "../src/OpenAiCompatible.js"
import type { TransportCase } from "./adapters-fixtures.js"
import { apiKey, collectFailure, simpleRequest, testLayerWith, textOf, transports } from "./adapters-fixtures.js"

type Adapter = Omit<ProviderAdapter, "provider">

/** The wire formats of modelgate's own adapters (the mock also speaks the OpenAI Responses API). */
type Provider = Exclude<MockProvider, "openai-responses">

const providers: ReadonlyArray<Provider> = ["openai", "anthropic", "gemini", "openai-compatible"]

const makers: Record<
  Provider,
  (options: {
    readonly baseUrl: string
    readonly maxEventBytes?: number
  }) => Effect.Effect<Adapter, never, HttpClient.HttpClient>
> = {
  openai: (o) => OpenAi.make({ ...o, apiKey }),
  anthropic: (o) => Anthropic.make({ ...o, apiKey }),
  gemini: (o) => Gemini.make({ ...o, apiKey }),
  "openai-compatible": (o) => OpenAiCompatible.make({ ...o, apiKey })
}

const adapterFor = (provider: Provider, options: { readonly maxEventBytes?: number } = {}) =>
  Effect.flatMap(MockProviderServer, (mock) => makers[provider]({ baseUrl: mock.baseUrl(provider), ...options }))

/** Scripts `behaviors` for the next requests to `provider`, after clearing the mock. */
const script = (provider: Provider, ...behaviors: ReadonlyArray<Behavior>) =>
  Effect.flatMap(MockProviderServer, (mock) => Effect.zipRight(mock.reset, mock.enqueue(behaviors, { provider })))

const sseBody = (frames: ReadonlyArray<string>) =>
  MockProviderServer.raw(200, frames.join(""), { contentType: "text/event-stream" })

const frame = (data: unknown, event?: string) =>
  `${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`

/** Frames of a stream that delivers `text` in two deltas, per wire format (before any terminator). */
const deltaFrames = (provider: Provider, first: string, second: string): Array<string> => {
  switch (provider) {
    case "openai":
    case "openai-compatible":
      return [first, second].map((content) =>
        frame({ id: "chatcmpl-1", model: "m", choices: [{ index: 0, delta: { content }, finish_reason: null }] })
      )
    case "anthropic":
      return [
        frame(
          { type: "message_start", message: { model: "m", usage: { input_tokens: 5, output_tokens: 1 } } },
          "message_start"
        ),
        frame(
          { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
          "content_block_start"
        ),
        ...[first, second].map((text) =>
          frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } }, "content_block_delta")
        )
      ]
    case "gemini":
      return [first, second].map((text) => frame({ candidates: [{ content: { parts: [{ text }], role: "model" } }] }))
  }
}

/** An error event after HTTP 200, per wire format. */
const errorFrame = (provider: Provider): string => {
  switch (provider) {
    case "openai":
    case "openai-compatible":
      return frame({ error: { message: "boom", type: "server_error", code: "server_error" } })
    case "anthropic":
      return frame({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }, "error")
    case "gemini":
      return frame({ error: { code: 503, message: "overloaded", status: "UNAVAILABLE" } })
  }
}

// ---------------------------------------------------------------------------------------------
// What an exporter, a log sink and the recorder would receive
// ---------------------------------------------------------------------------------------------

/** A tracer, a logger (every level) and a sink for values, all dumped as text. */
const makeSinks = () => {
  const { spans, tracer } = RecordingTracer.make()
  const lines: Array<string> = []
  const values: Array<string> = []
  const logger = Logger.make(({ annotations, cause, logLevel, message }) => {
    lines.push(
      `${logLevel.label} ${String(message)} ${safeJson(message)} ${safeJson([...annotations])} ${Cause.pretty(cause, { renderErrorCause: true })}`
    )
  })
  /** Runs `effect` under the tracer and the logger. */
  const observe = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Effect.withTracer(tracer),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Logger.withMinimumLogLevel(LogLevel.All)
    )
  const keep = (value: unknown) => {
    values.push(`${String(value)} ${safeJson(value)}`)
  }
  const texts = () => [...spans.map((s) => s.dump(String)), ...lines, ...values]
  return { spans, lines, observe, keep, texts }
}

const safeJson = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? ""
  } catch {
    return "<unserializable>"
  }
}

// ---------------------------------------------------------------------------------------------
// An upstream that echoes the prompt everywhere it can
// ---------------------------------------------------------------------------------------------

const canary = "CANARY-7f3c9e"
const prompt = `Repeat after me: ${canary} is the launch code.`

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? Object.entries(value).find(([k]) => k === key)?.[1]
    : undefined
const first = (value: unknown): unknown => (Array.isArray(value) ? value[0] : undefined)
const last = (value: unknown): unknown => (Array.isArray(value) ? value[value.length - 1] : undefined)

/** The user text of a recorded request, read the way an echoing server would. */
const promptOf = (request: RecordedRequest): string => {
  const text =
    request.provider === "gemini"
      ? field(first(field(first(field(request.body, "contents")), "parts")), "text")
      : field(last(field(request.body, "messages")), "content")
  return typeof text === "string" ? text : ""
}

type Echo = "http400" | "http503" | "errorAfter200" | "success" | "streamError"

/** The provider's error object fields, every one the echoed text. */
const echoedError = (provider: MockProvider, text: string) => ({
  type: text,
  code: text,
  message: text,
  status: text,
  details:
    provider === "gemini"
      ? [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: text, domain: text }]
      : provider === "anthropic"
        ? { error_code: text }
        : undefined
})

const echo = (mode: Echo, request: RecordedRequest): Behavior => {
  const text = promptOf(request)
  const common = { requestId: text, headers: { "x-echo": text, "request-id": text, "x-request-id": text } }
  switch (mode) {
    case "http400":
      return MockProviderServer.failure(400, { ...common, error: echoedError(request.provider, text) })
    case "http503":
      return MockProviderServer.failure(503, { ...common, error: echoedError(request.provider, text) })
    case "errorAfter200":
      return MockProviderServer.failure(200, { ...common, error: echoedError(request.provider, text) })
    case "success":
      return MockProviderServer.success({ ...common, text, model: text, systemFingerprint: text, finishReason: text })
    case "streamError":
      return MockProviderServer.success({
        ...common,
        text,
        model: text,
        chunkSize: 8,
        streamEnd: { _tag: "Error", afterChunks: 2, error: echoedError(request.provider, text), code: 500 }
      })
  }
}

const echoing = (mode: Echo) =>
  Effect.flatMap(MockProviderServer, (mock) =>
    Effect.zipRight(
      mock.reset,
      mock.setHandler((request) => echo(mode, request))
    )
  )

const modes: ReadonlyArray<Echo> = ["http400", "http503", "errorAfter200", "success", "streamError"]

/** What of a provider answer may reach a record: everything but the content. */
const recordable = (response: ProviderResponse) => ({
  modelVersion: response.modelVersion,
  requestId: response.requestId,
  finishReason: response.finishReason,
  httpStatus: response.httpStatus,
  usage: response.usage
})

// ---------------------------------------------------------------------------------------------
// The gateway over the four adapters
// ---------------------------------------------------------------------------------------------

const target = (provider: Provider) => `model://${provider}/echo@eu`

const gatewayConfig = {
  targets: providers.map((provider) => ({
    ref: target(provider),
    provider,
    model: "echo-model",
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "p1" },
    capabilities: { contextWindow: 128_000, maxOutputTokens: 4096 },
    limits: { maxAttempts: 1, perAttemptTimeout: 5000 }
  })),
  workflows: [
    ...providers.map((provider) => ({
      name: `echo.${provider}`,
      policyVersion: "1",
      prompt: { id: "echo", version: "1" },
      route: [target(provider)],
      timeout: 10_000,
      regions: ["eu"],
      dataClass: "internal"
    })),
    {
      name: "fallback",
      policyVersion: "1",
      prompt: { id: "fallback", version: "1" },
      route: [target("openai"), target("anthropic")],
      timeout: 10_000,
      regions: ["eu"],
      dataClass: "internal"
    },
    {
      name: "tight",
      policyVersion: "1",
      prompt: { id: "tight", version: "1" },
      route: [target("openai")],
      timeout: 1_200,
      regions: ["eu"],
      dataClass: "internal"
    }
  ]
}

/** The four adapters, pointed at the mock server. */
const adapters = Layer.unwrapEffect(
  Effect.map(MockProviderServer, (mock) =>
    Layer.mergeAll(
      OpenAi.layer({ baseUrl: mock.baseUrl("openai"), apiKey }),
      Anthropic.layer({ baseUrl: mock.baseUrl("anthropic"), apiKey }),
      Gemini.layer({ baseUrl: mock.baseUrl("gemini"), apiKey }),
      OpenAiCompatible.layer({ baseUrl: mock.baseUrl("openai-compatible"), apiKey })
    )
  )
)

const gateway = ModelGateway.layerJson(gatewayConfig).pipe(
  Layer.provideMerge(Layer.mergeAll(adapters, Budgets.layerOff, Concurrency.layerOff, Health.layerOff))
)

/** Records kept in memory (`MemoryRecorder`). */
const memoryGateway = (transport: TransportCase) =>
  gateway.pipe(Layer.provideMerge(CallRecorder.layerMemory), Layer.provideMerge(testLayerWith(transport)))

/** Records logged, encoded with their schema (`CallRecorder.layerLog`). */
const logGateway = (transport: TransportCase) =>
  gateway.pipe(Layer.provideMerge(CallRecorder.layerLog), Layer.provideMerge(testLayerWith(transport)))

const command = (workflow: string, text: string = prompt) =>
  Schema.decodeSync(ModelCommand)({ workflow, tenant: "acme", messages: [{ _tag: "user", content: text }] })

const records = Effect.flatMap(CallRecorder.MemoryRecorder, (m) => m.records)

/** Runs a gateway stream to its end: its events, and its error if it failed. */
const runStream = (workflow: string) =>
  Effect.gen(function* () {
    const events: Array<StreamEvent> = []
    const exit = yield* ModelGateway.stream(command(workflow)).pipe(
      Stream.runForEach((event) => Effect.sync(() => events.push(event))),
      Effect.exit
    )
    return { events, exit }
  })

/** The parts of a gateway stream event that may reach a record (not content deltas, not the answer). */
const streamRecordable = (event: StreamEvent): unknown =>
  event._tag === "TextDelta" || event._tag === "ToolCallDelta"
    ? undefined
    : event._tag === "Final"
      ? event.result.evidence
      : event

const failureOf = <A>(exit: Exit.Exit<A, GatewayError>): GatewayError | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

// ---------------------------------------------------------------------------------------------

describe.each(transports)("a hostile upstream, through the real adapters ($name)", (transport) => {
  it.live("item 6: a prompt echoed into codes, types, model, ids and headers reaches no error, span or log", () =>
    Effect.gen(function* () {
      const sinks = makeSinks()
      for (const provider of providers) {
        const adapter = yield* adapterFor(provider)
        for (const mode of modes) {
          yield* echoing(mode)
          const request = simpleRequest(provider, "echo-model", { messages: [{ _tag: "user", content: prompt }] })
          const generated = yield* sinks.observe(Effect.either(adapter.generate(request)))
          if (Either.isLeft(generated)) sinks.keep(generated.left)
          else sinks.keep(recordable(generated.right))
          const streamed = yield* sinks.observe(Effect.either(Stream.runCollect(adapter.stream(request))))
          if (Either.isLeft(streamed)) sinks.keep(streamed.left)
          else {
            const events = Chunk.toReadonlyArray(streamed.right)
            // The echo is the answer's content: it reaches the caller, and only the caller.
            if (mode === "success") assert.include(textOf(events), canary, `${provider} ${mode}`)
            for (const event of events) if (event._tag !== "TextDelta") sinks.keep(event)
          }
        }
        // The echo reached the provider's error paths (the test is not vacuous).
        yield* echoing("http400")
        const error = yield* Effect.flip(
          adapter.generate(simpleRequest(provider, "echo-model", { messages: [{ _tag: "user", content: prompt }] }))
        )
        assert.strictEqual(error.providerCode, "other", provider)
        assert.isUndefined(error.requestId, provider)
      }
      const texts = sinks.texts()
      assert.isAbove(sinks.spans.length, 0)
      assert.deepStrictEqual(
        texts.filter((text) => text.includes(canary)),
        []
      )
      // The HTTP client spans name the echoed headers but carry none of their values.
      const attributes = sinks.spans.flatMap((s) => [...s.attributes])
      assert.isTrue(
        attributes.some(([key, value]) => key === "http.response.header.x-echo" && String(value) === "<redacted>")
      )
    }).pipe(Effect.provide(testLayerWith(transport)))
  )

  it.live("item 6: through the gateway, the echoed prompt is in no CallRecord, error, span attribute or log line", () =>
    Effect.gen(function* () {
      const sinks = makeSinks()
      let calls = 0
      for (const provider of providers) {
        for (const mode of modes) {
          yield* echoing(mode)
          const generated = yield* sinks.observe(Effect.exit(ModelGateway.generate(command(`echo.${provider}`))))
          calls++
          if (Exit.isSuccess(generated)) sinks.keep(generated.value.evidence)
          else sinks.keep(failureOf(generated))
          const streamed = yield* sinks.observe(runStream(`echo.${provider}`))
          calls++
          for (const event of streamed.events) sinks.keep(streamRecordable(event))
          sinks.keep(failureOf(streamed.exit))
          if (mode === "http400") {
            // The path the issue found: the provider's code became `InvalidRequest.detail`.
            const failure = failureOf(generated)
            assert.strictEqual(failure?._tag, "InvalidRequest", provider)
          }
        }
      }
      const all: ReadonlyArray<CallRecord> = yield* records
      assert.strictEqual(all.length, calls)
      for (const record of all) sinks.keep(record)
      assert.isAbove(sinks.spans.length, calls)
      assert.deepStrictEqual(
        sinks.texts().filter((text) => text.includes(canary)),
        []
      )
    }).pipe(Effect.provide(memoryGateway(transport)))
  )

  it.live("item 5: a 5 MB model, a 12 KB request id and prose in them are bounded or dropped, marked", () =>
    Effect.gen(function* () {
      // Of the provider's request-id shape and of the requested model's family, but too long.
      const cut = (value: string, max: number) => `${value.slice(0, max)}${truncatedMark}`
      const longId = `req_${"r".repeat(12 * 1024)}`
      const longModel = (length: number) => `bounded${"m".repeat(length)}`
      // The mock sends `requestId` in the provider's request-id header (and body id where there is one).
      const ids = { requestId: longId }
      const prose = "my model has spaces"
      for (const provider of providers) {
        const adapter = yield* adapterFor(provider)
        const request = simpleRequest(provider, "bounded")
        yield* script(
          provider,
          MockProviderServer.success({ ...ids, model: longModel(5 * 1024 * 1024) }),
          // Streams repeat the model in every chunk; under the event cap it is still cut.
          MockProviderServer.success({ ...ids, model: longModel(512 * 1024) }),
          MockProviderServer.failure(429, ids),
          MockProviderServer.success({
            model: prose,
            systemFingerprint: prose,
            requestId: prose
          })
        )
        const generated = yield* adapter.generate(request)
        assert.strictEqual(
          generated.modelVersion?.startsWith(cut(longModel(maxModelLength), maxModelLength)),
          true,
          provider
        )
        assert.strictEqual(generated.requestId, cut(longId, maxRequestIdLength), provider)
        const events = Chunk.toReadonlyArray(yield* Stream.runCollect(adapter.stream(request)))
        const started = events[0]
        const finish = events[events.length - 1]
        assert.strictEqual(started?._tag === "Started" ? started.requestId : undefined, cut(longId, maxRequestIdLength))
        assert.isTrue(
          finish?._tag === "Finish" &&
            finish.modelVersion?.startsWith(cut(longModel(maxModelLength), maxModelLength)) === true,
          provider
        )
        const error = yield* Effect.flip(adapter.generate(request))
        assert.strictEqual(error.requestId, cut(longId, maxRequestIdLength), provider)
        const spoken = yield* adapter.generate(request)
        assert.isUndefined(spoken.modelVersion, provider)
        // OpenAI-style bodies fall back to the completion id, which the mock makes `chatcmpl-mock-N`.
        assert.isTrue(spoken.requestId === undefined || spoken.requestId.startsWith("chatcmpl-mock-"), provider)
      }
    }).pipe(Effect.provide(testLayerWith(transport)))
  )
})

describe.each(transports)("oversized events and mid-stream errors ($name)", (transport) => {
  it.live("item 3: a 6 MB SSE event fails as invalid_output under the default 1 MiB cap; maxEventBytes sets it", () =>
    Effect.gen(function* () {
      const big = `data: "${"x".repeat(6 * 1024 * 1024)}"\n\n`
      for (const provider of providers) {
        yield* script(provider, sseBody([big]), MockProviderServer.success({ text: "a fairly ordinary answer text" }))
        const { error, events } = yield* collectFailure(yield* adapterFor(provider), simpleRequest(provider, "big"))
        assert.deepStrictEqual(
          events.map((e) => e._tag),
          ["Started"],
          provider
        )
        assert.deepInclude(
          error,
          {
            kind: "invalid_output",
            processed: "maybe",
            httpStatus: 200,
            detail: `${provider}: stream event exceeds ${defaultMaxEventBytes} bytes`
          },
          provider
        )
        const small = yield* collectFailure(
          yield* adapterFor(provider, { maxEventBytes: 64 }),
          simpleRequest(provider, "big")
        )
        assert.strictEqual(small.error.detail, `${provider}: stream event exceeds 64 bytes`, provider)
      }
    }).pipe(Effect.provide(testLayerWith(transport)))
  )

  it.live("item 4: deltas sent in the same write as an error event reach the caller before the error", () =>
    Effect.gen(function* () {
      for (const provider of providers) {
        // One write: the deltas and the error arrive in one network read.
        yield* script(provider, sseBody([...deltaFrames(provider, "Hel", "lo"), errorFrame(provider)]))
        const { error, events } = yield* collectFailure(yield* adapterFor(provider), simpleRequest(provider, "mixed"))
        assert.strictEqual(textOf(events), "Hello", provider)
        assert.strictEqual(error.processed, "maybe", provider)
        assert.include(["server_error", "overloaded"], error.kind, provider)
      }
    }).pipe(Effect.provide(testLayerWith(transport)))
  )

  it.live("item 4, gateway: those deltas reach the caller and the attempt's usage", () =>
    Effect.gen(function* () {
      yield* script("openai", sseBody([...deltaFrames("openai", "Hel", "lo"), errorFrame("openai")]))
      const { events, exit } = yield* runStream("echo.openai")
      const text = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")
      assert.strictEqual(text, "Hello")
      assert.isTrue(Exit.isFailure(exit))
      const [record] = yield* records
      assert.isAbove(record?.evidence.attempts[0]?.usage?.outputTokens ?? 0, 0)
    }).pipe(Effect.provide(memoryGateway(transport)))
  )

  it.live("item 3, gateway: a 6 MB event ends the call typed, with its attempt recorded, inside a 1.2 s deadline", () =>
    Effect.gen(function* () {
      yield* script(
        "openai",
        sseBody([frame({ choices: [{ index: 0, delta: { content: "y".repeat(6 * 1024 * 1024) } }] })])
      )
      const started = performance.now()
      const { exit } = yield* runStream("tight")
      const elapsed = performance.now() - started
      assert.strictEqual(failureOf(exit)?._tag, "InvalidOutput")
      assert.isBelow(elapsed, 1_200)
      const [record] = yield* records
      assert.strictEqual(record?.evidence.attempts[0]?.errorTag, "InvalidOutput")
    }).pipe(Effect.provide(memoryGateway(transport)))
  )
})

describe.each(transports)("provider-reported usage ($name)", (transport) => {
  it.live("item 8: counts are non-negative integers clamped to 10^9 per field", () =>
    Effect.gen(function* () {
      const huge = 1e300
      for (const provider of providers) {
        const adapter = yield* adapterFor(provider)
        yield* script(
          provider,
          MockProviderServer.success({
            usage: { input: huge, output: huge, cached: huge, reasoning: huge, cacheCreation: huge }
          }),
          MockProviderServer.success({ usage: { input: -5, output: 2.7 } })
        )
        const clamped = yield* adapter.generate(simpleRequest(provider, "usage"))
        assert.deepInclude(
          clamped.usage,
          { inputTokens: maxTokenCount, outputTokens: maxTokenCount, cachedInputTokens: maxTokenCount },
          provider
        )
        assert.isAtMost(clamped.usage?.reasoningTokens ?? 0, maxTokenCount, provider)
        const negative = yield* adapter.generate(simpleRequest(provider, "usage"))
        assert.deepInclude(negative.usage, { inputTokens: 0, outputTokens: 2, cachedInputTokens: 0 }, provider)
      }
      // JSON's `1e400` is Infinity: clamped too.
      yield* script(
        "openai",
        MockProviderServer.raw(
          200,
          '{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1e400,"completion_tokens":3}}'
        )
      )
      const infinite = yield* Effect.flatMap(adapterFor("openai"), (a) => a.generate(simpleRequest("openai", "usage")))
      assert.deepInclude(infinite.usage, { inputTokens: maxTokenCount, outputTokens: 3 })
    }).pipe(Effect.provide(testLayerWith(transport)))
  )

  it.live("item 8, gateway: usage summed over a fallback stays a safe integer and the logged record encodes", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.reset
      const huge = { input: 9e15, output: 9e15 }
      // An empty answer (invalid output, billed) on the primary, a success on the fallback.
      yield* mock.enqueue(MockProviderServer.success({ text: "", usage: huge }), { provider: "openai" })
      yield* mock.enqueue(MockProviderServer.success({ text: "fine", usage: huge }), { provider: "anthropic" })
      const sinks = makeSinks()
      const result = yield* sinks.observe(ModelGateway.generate(command("fallback")))
      assert.isTrue(result.evidence.fallbackUsed)
      assert.isTrue(Number.isSafeInteger(result.evidence.usage.inputTokens))
      assert.isAtMost(result.evidence.usage.inputTokens, 2 * maxTokenCount)
      assert.isTrue(sinks.lines.some((line) => line.includes("modelgate call")))
    }).pipe(Effect.provide(logGateway(transport)))
  )
})
