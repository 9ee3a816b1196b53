/**
 * `EffectAi.providerAdapter`: `@effect/ai-openai`'s language model (the OpenAI Responses API) as a
 * modelgate provider, behind the gateway, over real HTTP to the mock server's `POST /v1/responses`:
 * success (text, structured output, usage, the request on the wire), a 429 whose retry-after the
 * engine honours to the exact virtual instant, a 503 that falls back, streams, tool calls both
 * ways, and the classification of its `AiError`s.
 */
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { assert, describe, it } from "@effect/vitest"
import * as EffectAi from "@modelgate/adapters/effect-ai"
import { ModelGateway } from "@modelgate/core"
import { ModelCommand } from "@modelgate/core/ModelCommand"
import type { RecordedRequest } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { Behavior, Service as MockService } from "@modelgate/testing/MockProviderServer"
import { Chunk, Context, Duration, Effect, Fiber, Layer, Schema, Stream, TestClock } from "effect"
import {
  apiKey,
  canary,
  collectFailure,
  mockGateway,
  TestLayer,
  simpleRequest,
  targetJson,
  workflowJson
} from "./adapters-fixtures.js"

const Answer = Schema.Struct({ category: Schema.Literal("billing", "other"), confidence: Schema.Number })

const target = (model: string, maxAttempts: number) =>
  targetJson(`model://openai-responses/${model}@eu`, {
    pricing: { inputPerMillion: 0.4, outputPerMillion: 1.6 },
    capabilities: {
      contextWindow: 128_000,
      maxOutputTokens: 4096,
      tools: true,
      structuredOutput: { mode: "json_schema_strict" }
    },
    maxAttempts
  })

const workflow = (name: string, route: ReadonlyArray<string>, output?: string) =>
  workflowJson(name, route, output, { maxOutputTokens: 300, requires: { tools: name === "agent" } })

const mini = "model://openai-responses/gpt-4.1-mini@eu"
const nano = "model://openai-responses/gpt-4.1-nano@eu"
const full = "model://openai-responses/gpt-4.1@eu"

const config = {
  targets: [target("gpt-4.1-mini", 2), target("gpt-4.1-nano", 1), target("gpt-4.1", 1)],
  workflows: [
    workflow("reply", [mini, full]),
    workflow("reply.fast", [nano, full]),
    workflow("classify", [nano, full], "Answer"),
    workflow("agent", [nano, full])
  ]
}

/** The `@effect/ai-openai` model per target model, and the request's token cap as its config. */
const ResponsesAdapter = EffectAi.providerAdapter("openai-responses", {
  model: (model) => OpenAiLanguageModel.layer({ model }),
  requestContext: (request) => Context.make(OpenAiLanguageModel.Config, { max_output_tokens: request.maxOutputTokens })
})

/** {@link ResponsesAdapter} over the mock server. */
const responsesAt = (mock: MockService) =>
  ResponsesAdapter.pipe(Layer.provide(OpenAiClient.layer({ apiUrl: mock.baseUrl("openai-responses"), apiKey })))

const GatewayLayer = mockGateway(config, { schemas: { Answer } }, responsesAt)

const command = (workflow: string, extra: Partial<typeof ModelCommand.Encoded> = {}) =>
  Schema.decodeSync(ModelCommand)({
    workflow,
    tenant: "acme",
    messages: [{ _tag: "user", content: "I was charged twice" }],
    ...extra
  })

const forModel = (model: string) => ({ provider: "openai-responses" as const, model })

/** One turn of the I/O loop (no timer): the HTTP exchange with the mock server progresses. */
const ioTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * Waits (on I/O, not on the clock) until a fiber sleeps until the virtual instant `at`: the engine
 * has classified the failure and scheduled the retry.
 */
const sleepingUntil = (at: number) =>
  Effect.gen(function* () {
    for (let turn = 0; turn < 20_000; turn++) {
      const sleeps = yield* TestClock.sleeps()
      if (Chunk.some(sleeps, (instant) => instant === at)) return
      yield* ioTurn
    }
    return yield* Effect.dieMessage(`nothing slept until ${at}`)
  })

const bodyOf = (request: RecordedRequest): Record<string, unknown> => {
  const body = request.body
  assert.isTrue(typeof body === "object" && body !== null && !Array.isArray(body))
  return Object.fromEntries(Object.entries(body ?? {}))
}

describe("EffectAi.providerAdapter over @effect/ai-openai and the mock Responses API", () => {
  it.effect("success: text, usage, model version and the Responses request on the wire", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(
        MockProviderServer.success({
          text: "We will refund the duplicate charge.",
          usage: { input: 40, output: 12, cached: 8, reasoning: 3 },
          model: "gpt-4.1-mini-2026-04-14"
        }),
        forModel("gpt-4.1-mini")
      )
      const result = yield* ModelGateway.generate(command("reply"))
      assert.strictEqual(result.content.text, "We will refund the duplicate charge.")
      assert.strictEqual(result.finishReason, "stop")
      assert.strictEqual(result.evidence.modelVersion, "gpt-4.1-mini-2026-04-14")
      assert.deepStrictEqual(
        {
          inputTokens: result.evidence.usage.inputTokens,
          cachedInputTokens: result.evidence.usage.cachedInputTokens,
          outputTokens: result.evidence.usage.outputTokens,
          reasoningTokens: result.evidence.usage.reasoningTokens
        },
        { inputTokens: 40, cachedInputTokens: 8, outputTokens: 12, reasoningTokens: 3 }
      )
      assert.deepStrictEqual(
        result.evidence.attempts.map((a) => [String(a.target), a.outcome, a.httpStatus, a.providerRequestId]),
        [[mini, "success", 200, "resp_mock_1"]]
      )
      const [request] = yield* mock.requests
      assert.isDefined(request)
      if (request === undefined) return
      assert.strictEqual(request.url, "/v1/responses")
      assert.strictEqual(request.headers.authorization, `Bearer ${canary}`)
      const body = bodyOf(request)
      assert.strictEqual(body.model, "gpt-4.1-mini")
      assert.strictEqual(body.max_output_tokens, 300)
      assert.deepStrictEqual(body.input, [
        { role: "user", content: [{ type: "input_text", text: "I was charged twice" }] }
      ])
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.effect("structured output: the workflow's JSON Schema goes out as text.format, the value is validated", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(
        MockProviderServer.success({ json: { category: "billing", confidence: 0.9 } }),
        forModel("gpt-4.1-nano")
      )
      const result = yield* ModelGateway.generate(command("classify"))
      assert.deepStrictEqual(result.content.value, { category: "billing", confidence: 0.9 })
      const [request] = yield* mock.requests
      const text = request === undefined ? undefined : bodyOf(request).text
      assert.deepStrictEqual(text, {
        format: {
          type: "json_schema",
          // The output format's name (the workflow's); @effect/ai-openai adds the description.
          name: "classify",
          description: "Response with a JSON object",
          schema: {
            type: "object",
            required: ["category", "confidence"],
            properties: { category: { type: "string", enum: ["billing", "other"] }, confidence: { type: "number" } },
            additionalProperties: false
          },
          strict: true
        }
      })
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.effect("429 with retry-after: 2: the second attempt starts exactly 2 s later (virtual time)", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(
        [
          MockProviderServer.failure(429, { headers: { "retry-after": "2" }, error: { code: "rate_limit_exceeded" } }),
          MockProviderServer.success({ text: "ok" })
        ],
        forModel("gpt-4.1-mini")
      )
      const fiber = yield* Effect.fork(ModelGateway.generate(command("reply")))
      yield* sleepingUntil(2000)
      yield* TestClock.adjust(Duration.seconds(2))
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result.content.text, "ok")
      assert.isFalse(result.evidence.fallbackUsed)
      assert.deepStrictEqual(
        result.evidence.attempts.map((a) => [
          String(a.target),
          a.outcome,
          a.httpStatus,
          a.retryAfterMs,
          a.startOffsetMs
        ]),
        [
          [mini, "rate_limited", 429, 2000, 0],
          [mini, "success", 200, undefined, 2000]
        ]
      )
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.effect("503 on the primary: the fallback target answers", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(
        MockProviderServer.failure(503, { error: { type: "server_error" } }),
        forModel("gpt-4.1-nano")
      )
      yield* mock.enqueue(MockProviderServer.success({ text: "from the fallback" }), forModel("gpt-4.1"))
      const result = yield* ModelGateway.generate(command("reply.fast"))
      assert.strictEqual(result.content.text, "from the fallback")
      assert.isTrue(result.evidence.fallbackUsed)
      assert.deepStrictEqual(
        result.evidence.attempts.map((a) => [String(a.target), a.outcome, a.httpStatus]),
        [
          [nano, "unavailable", 503],
          [full, "success", 200]
        ]
      )
      assert.deepStrictEqual(
        (yield* mock.requests).map((r) => r.model),
        ["gpt-4.1-nano", "gpt-4.1"]
      )
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.effect("stream: SSE events become text deltas, and a 503 before the first delta falls back", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(MockProviderServer.failure(503), forModel("gpt-4.1-nano"))
      yield* mock.enqueue(
        MockProviderServer.success({ text: "We will refund the duplicate charge.", chunkSize: 8 }),
        forModel("gpt-4.1")
      )
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(ModelGateway.stream(command("reply.fast"))))
      const deltas = events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : []))
      assert.deepStrictEqual(deltas, ["We will ", "refund t", "he dupli", "cate cha", "rge."])
      const final = events.at(-1)
      assert.strictEqual(final?._tag, "Final")
      if (final?._tag !== "Final") return
      assert.strictEqual(final.result.content.text, "We will refund the duplicate charge.")
      assert.deepStrictEqual(
        final.result.evidence.attempts.map((a) => [String(a.target), a.outcome]),
        [
          [nano, "unavailable"],
          [full, "success"]
        ]
      )
      const requests = yield* mock.requests
      assert.deepStrictEqual(
        requests.map((r) => [r.model, r.stream]),
        [
          ["gpt-4.1-nano", true],
          ["gpt-4.1", true]
        ]
      )
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.effect("tool calls round-trip: a function_call comes back as a ToolCall, and goes out again with its result", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const tools = [
        {
          name: "lookup_order",
          description: "Find an order.",
          parameters: {
            type: "object",
            properties: { id: { type: "string" } },
            required: ["id"],
            additionalProperties: false
          }
        }
      ]
      yield* mock.enqueue(
        [
          MockProviderServer.success({ toolCalls: [{ id: "call_7", name: "lookup_order", arguments: { id: "A-1" } }] }),
          MockProviderServer.success({ text: "Order A-1 was charged twice; refunded." })
        ],
        forModel("gpt-4.1-nano")
      )
      const first = yield* ModelGateway.generate(command("agent", { tools }))
      assert.strictEqual(first.finishReason, "tool_calls")
      assert.deepStrictEqual(
        first.content.toolCalls.map((c) => [c.id, c.name, JSON.parse(c.arguments)]),
        [["call_7", "lookup_order", { id: "A-1" }]]
      )
      const second = yield* ModelGateway.generate(
        command("agent", {
          tools,
          messages: [
            { _tag: "user", content: "I was charged twice" },
            { _tag: "assistant", toolCalls: [{ id: "call_7", name: "lookup_order", arguments: '{"id":"A-1"}' }] },
            { _tag: "tool", toolCallId: "call_7", name: "lookup_order", content: '{"charged":2}' }
          ]
        })
      )
      assert.strictEqual(second.content.text, "Order A-1 was charged twice; refunded.")
      const requests = yield* mock.requests
      const [out, back] = requests.map(bodyOf)
      assert.deepStrictEqual(out?.tools, [
        {
          type: "function",
          name: "lookup_order",
          description: "Find an order.",
          parameters: tools[0]?.parameters,
          strict: true
        }
      ])
      assert.deepStrictEqual(back?.input, [
        { role: "user", content: [{ type: "input_text", text: "I was charged twice" }] },
        { type: "function_call", call_id: "call_7", name: "lookup_order", arguments: '{"id":"A-1"}' },
        { type: "function_call_output", call_id: "call_7", output: '{"charged":2}' }
      ])
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.effect("a streamed tool call arrives as tool-call deltas with the id and name first", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const tools = [{ name: "lookup_order", description: "Find an order.", parameters: { type: "object" } }]
      yield* mock.enqueue(
        MockProviderServer.success({
          toolCalls: [{ id: "call_9", name: "lookup_order", arguments: { id: "A-22" } }],
          chunkSize: 6
        }),
        forModel("gpt-4.1-nano")
      )
      const events = Chunk.toReadonlyArray(yield* Stream.runCollect(ModelGateway.stream(command("agent", { tools }))))
      const deltas = events.flatMap((e) =>
        e._tag === "ToolCallDelta" ? [[e.index, e.id, e.name, e.argumentsDelta]] : []
      )
      assert.deepStrictEqual(deltas, [
        [0, "call_9", "lookup_order", ""],
        [0, undefined, undefined, '{"id":'],
        [0, undefined, undefined, '"A-22"'],
        [0, undefined, undefined, "}"]
      ])
      const final = events.at(-1)
      assert.deepStrictEqual(
        final?._tag === "Final" ? final.result.content.toolCalls.map((c) => [c.id, c.name, c.arguments]) : [],
        [["call_9", "lookup_order", '{"id":"A-22"}']]
      )
    }).pipe(Effect.provide(GatewayLayer))
  )

  it.effect("a refusal under structured output is a refusal, not invalid output", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(MockProviderServer.success({ refusal: true }), forModel("gpt-4.1-nano"))
      const error = yield* Effect.flip(ModelGateway.generate(command("classify")))
      assert.strictEqual(error._tag, "Refusal")
      assert.strictEqual((yield* mock.requests).length, 1)
    }).pipe(Effect.provide(GatewayLayer))
  )
})

/** The adapter alone (no gateway), to read its classified errors. */
const AdapterLayer = Layer.unwrapEffect(Effect.map(MockProviderServer, responsesAt)).pipe(Layer.provideMerge(TestLayer))

const request = simpleRequest("openai-responses", "gpt-4.1-mini")

interface Row {
  readonly name: string
  readonly behavior: Behavior
  readonly kind: string
  readonly processed: "no" | "maybe"
  readonly httpStatus?: number
  readonly retryAfterMs?: number
  readonly code?: string
}

const rows: ReadonlyArray<Row> = [
  {
    name: "429 rate_limit_exceeded with retry-after-ms",
    behavior: MockProviderServer.failure(429, {
      headers: { "retry-after-ms": "1500" },
      error: { code: "rate_limit_exceeded" }
    }),
    kind: "rate_limited",
    processed: "no",
    httpStatus: 429,
    retryAfterMs: 1500,
    code: "rate_limit_exceeded"
  },
  {
    name: "429 insufficient_quota",
    behavior: MockProviderServer.failure(429, { error: { type: "insufficient_quota", code: "insufficient_quota" } }),
    kind: "quota_exhausted",
    processed: "no",
    httpStatus: 429,
    code: "insufficient_quota"
  },
  {
    name: "400 context_length_exceeded",
    behavior: MockProviderServer.failure(400, { error: { code: "context_length_exceeded" } }),
    kind: "context_length",
    processed: "no",
    httpStatus: 400,
    code: "context_length_exceeded"
  },
  {
    name: "401 invalid_api_key",
    behavior: MockProviderServer.failure(401),
    kind: "authentication",
    processed: "no",
    httpStatus: 401,
    code: "invalid_api_key"
  },
  {
    name: "500 server_error",
    behavior: MockProviderServer.failure(500),
    kind: "server_error",
    processed: "maybe",
    httpStatus: 500,
    code: "server_error"
  },
  {
    name: "503 with x-should-retry: false",
    behavior: MockProviderServer.failure(503, { headers: { "x-should-retry": "false" } }),
    kind: "rejected",
    processed: "no",
    httpStatus: 503,
    code: "server_error"
  },
  {
    name: "connection dropped before the headers",
    behavior: MockProviderServer.drop(),
    kind: "transport",
    processed: "maybe",
    // The undici error of the HttpClient under @effect/ai's HttpRequestError.
    code: "UND_ERR_SOCKET"
  }
]

describe("EffectAi.providerAdapter classifies @effect/ai-openai's AiErrors (providers.md §9)", () => {
  for (const row of rows) {
    it.effect(`${row.name} → ${row.kind}`, () =>
      Effect.gen(function* () {
        const mock = yield* MockProviderServer
        yield* mock.enqueue(row.behavior, { provider: "openai-responses" })
        const adapter = yield* ProviderAdapter.tag("openai-responses")
        const error = yield* Effect.flip(adapter.generate(request))
        assert.deepStrictEqual(
          {
            kind: error.kind,
            processed: error.processed,
            httpStatus: error.httpStatus,
            retryAfterMs: error.retryAfter === undefined ? undefined : Duration.toMillis(error.retryAfter),
            code: error.providerCode
          },
          {
            kind: row.kind,
            processed: row.processed,
            httpStatus: row.httpStatus,
            retryAfterMs: row.retryAfterMs,
            code: row.code
          }
        )
      }).pipe(Effect.provide(AdapterLayer))
    )
  }

  it.effect("an error event after HTTP 200 fails the stream by its code; a stream without its end is truncated", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const adapter = yield* ProviderAdapter.tag("openai-responses")
      yield* mock.enqueue(
        MockProviderServer.success({
          text: "partial answer here",
          chunkSize: 4,
          streamEnd: { _tag: "Error", afterChunks: 3, error: { code: "rate_limit_exceeded" }, code: 429 }
        }),
        { provider: "openai-responses" }
      )
      const failed = yield* collectFailure(adapter, request)
      assert.deepStrictEqual(
        failed.events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])),
        ["part", "ial "]
      )
      assert.deepStrictEqual([failed.error.kind, failed.error.providerCode], ["rate_limited", "rate_limit_exceeded"])

      yield* mock.enqueue(
        MockProviderServer.success({ text: "cut short", streamEnd: { _tag: "Truncate", afterChunks: 2 } }),
        { provider: "openai-responses" }
      )
      const truncated = yield* collectFailure(adapter, request)
      assert.strictEqual(truncated.error.kind, "stream_truncated")
    }).pipe(Effect.provide(AdapterLayer))
  )
})
