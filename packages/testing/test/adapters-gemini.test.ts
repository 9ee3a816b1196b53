import { assert, describe, layer } from "@effect/vitest"
import * as Gemini from "@modelgate/adapters/gemini"
import type { ProviderError } from "@modelgate/core/Errors"
import { Duration, Effect } from "effect"
import type { Behavior, ErrorSpec } from "../src/MockProviderServer.js"
import { MockProviderServer } from "../src/MockProviderServer.js"
import {
  answerSchema,
  apiKey,
  canary,
  collect,
  collectFailure,
  lastRequestFor,
  leaks,
  recordOf,
  representativeRequest,
  simpleRequest,
  TestLayer,
  textOf
} from "./adapters-fixtures.js"

const adapter = Effect.gen(function* () {
  const mock = yield* MockProviderServer
  return yield* Gemini.make({ baseUrl: mock.baseUrl("gemini"), apiKey })
})

const script = (model: string, ...behaviors: ReadonlyArray<Behavior>) =>
  Effect.flatMap(MockProviderServer, (mock) => mock.enqueue(behaviors, { provider: "gemini", model }))

const quotaFailure = (quotaId: string) => ({
  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
  violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests", quotaId }]
})
const retryInfo = (retryDelay: string) => ({ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay })

layer(TestLayer, { excludeTestServices: true })("gemini adapter against the mock server", (it) => {
  it.effect("sends the exact generateContent body, with the key only in x-goog-api-key", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* script("body-model", MockProviderServer.success({ json: { a: "b" } }))
      yield* gemini.generate(representativeRequest("gemini", "body-model"))
      const recorded = yield* lastRequestFor("body-model")
      assert.deepStrictEqual(recorded.body, {
        systemInstruction: { parts: [{ text: "Be terse." }] },
        contents: [
          {
            role: "user",
            parts: [
              { text: "What is in this picture?" },
              { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }
            ]
          },
          { role: "model", parts: [{ text: "Let me look." }, { functionCall: { name: "lookup", args: { q: "x" } } }] },
          { role: "user", parts: [{ functionResponse: { name: "lookup", response: { found: true } } }] }
        ],
        generationConfig: {
          maxOutputTokens: 512,
          responseMimeType: "application/json",
          responseJsonSchema: answerSchema
        },
        tools: [
          {
            functionDeclarations: [
              {
                name: "lookup",
                description: "Look up an order.",
                parametersJsonSchema: {
                  type: "object",
                  properties: { q: { type: "string" } },
                  required: ["q"],
                  additionalProperties: false
                }
              }
            ]
          }
        ],
        toolConfig: { functionCallingConfig: { mode: "AUTO" } }
      })
      assert.strictEqual(recorded.url, "/v1beta/models/body-model:generateContent")
      assert.strictEqual(recorded.headers["x-goog-api-key"], canary)
      assert.isUndefined(recorded.headers.authorization)
      assert.isFalse(recorded.rawBody.includes(canary))
      assert.isFalse(recorded.url.includes(canary))
    })
  )

  it.effect("streams from :streamGenerateContent?alt=sse and maps a named tool choice", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* collect(gemini, simpleRequest("gemini", "stream-url", { toolChoice: { tool: "lookup" } }))
      const recorded = yield* lastRequestFor("stream-url")
      assert.strictEqual(recorded.url, "/v1beta/models/stream-url:streamGenerateContent?alt=sse")
      assert.deepInclude(recordOf(recorded.body), {
        toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["lookup"] } }
      })
    })
  )

  it.effect("reads text, usage (thoughts in output, cached input), model version and response id", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* script(
        "ok-model",
        MockProviderServer.success({
          text: "Hello",
          usage: { input: 40, output: 112, cached: 10, reasoning: 100 },
          model: "gemini-x-flash-002",
          requestId: "resp-abc"
        })
      )
      const response = yield* gemini.generate(simpleRequest("gemini", "ok-model"))
      assert.strictEqual(response.text, "Hello")
      assert.strictEqual(response.finishReason, "stop")
      assert.strictEqual(response.modelVersion, "gemini-x-flash-002")
      assert.strictEqual(response.requestId, "resp-abc")
      assert.deepStrictEqual(
        { ...response.usage },
        { inputTokens: 40, cachedInputTokens: 10, outputTokens: 112, reasoningTokens: 100 }
      )
    })
  )

  it.effect("reads function calls (generate and stream)", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      const toolCalls = [{ name: "lookup", arguments: { q: "x" } }]
      yield* script(
        "tool-model",
        MockProviderServer.success({ text: "", toolCalls }),
        MockProviderServer.success({ text: "", toolCalls })
      )
      const response = yield* gemini.generate(simpleRequest("gemini", "tool-model"))
      assert.strictEqual(response.finishReason, "tool_calls")
      assert.deepStrictEqual(
        response.toolCalls.map((c) => ({ ...c })),
        [{ id: "call_0", name: "lookup", arguments: '{"q":"x"}' }]
      )
      const events = yield* collect(gemini, simpleRequest("gemini", "tool-model"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      assert.deepInclude(
        events.right.find((e) => e._tag === "ToolCallDelta"),
        { index: 0, name: "lookup", argumentsDelta: '{"q":"x"}' }
      )
      assert.deepInclude(events.right[events.right.length - 1], { _tag: "Finish", finishReason: "tool_calls" })
    })
  )

  it.effect("finish reasons and blocked prompts", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* script(
        "finish-model",
        MockProviderServer.success({ text: "part", finishReason: "MAX_TOKENS" }),
        MockProviderServer.success({ text: "", finishReason: "SAFETY" }),
        MockProviderServer.success({ text: "", finishReason: "IMAGE_SAFETY" }),
        MockProviderServer.success({ blockReason: "SAFETY" }),
        MockProviderServer.success({ blockReason: "PROHIBITED_CONTENT" }),
        MockProviderServer.success({ text: "x", finishReason: "LANGUAGE" }),
        MockProviderServer.success({ text: "", finishReason: "MALFORMED_FUNCTION_CALL" }),
        MockProviderServer.success({ text: "x", finishReason: "OTHER" }),
        MockProviderServer.success({ text: "" }),
        // A text refusal under STOP is ordinary text.
        MockProviderServer.success({ text: "I can't help with that." })
      )
      const run = gemini.generate(simpleRequest("gemini", "finish-model"))
      assert.strictEqual((yield* run).finishReason, "length")
      assert.deepInclude(yield* run, { finishReason: "content_filter", refusal: true })
      assert.deepInclude(yield* run, { finishReason: "content_filter", refusal: true })
      assert.deepInclude(yield* run, { finishReason: "content_filter", refusal: true, text: undefined })
      const streamedBlock = yield* collect(gemini, simpleRequest("gemini", "finish-model"))
      assert.isTrue(streamedBlock._tag === "Right")
      if (streamedBlock._tag === "Right") {
        assert.deepInclude(streamedBlock.right[streamedBlock.right.length - 1], {
          _tag: "Finish",
          finishReason: "content_filter",
          refusal: true
        })
      }
      assert.deepInclude(yield* Effect.flip(run), { kind: "invalid_request", providerCode: "LANGUAGE" })
      assert.deepInclude(yield* Effect.flip(run), { kind: "invalid_output", processed: "maybe" })
      assert.deepInclude(yield* Effect.flip(run), { kind: "invalid_output" })
      assert.deepInclude(yield* Effect.flip(run), { kind: "invalid_output" })
      assert.deepInclude(yield* run, { finishReason: "stop", refusal: false, text: "I can't help with that." })
    })
  )

  describe("classification table (providers.md §9, Gemini rows)", () => {
    const rows: ReadonlyArray<{
      readonly name: string
      readonly status: number
      readonly error?: ErrorSpec
      readonly kind: ProviderError["kind"]
      readonly processed: "no" | "maybe"
      readonly retryAfterMs?: number
      readonly code?: string
    }> = [
      {
        name: "400 input token count exceeds",
        status: 400,
        error: { message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)." },
        kind: "context_length",
        processed: "no"
      },
      {
        name: "400 API_KEY_INVALID",
        status: 400,
        error: {
          message: "API key not valid. Please pass a valid API key.",
          details: [
            { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }
          ]
        },
        kind: "authentication",
        processed: "no",
        code: "API_KEY_INVALID"
      },
      {
        name: "other 400 INVALID_ARGUMENT",
        status: 400,
        kind: "invalid_request",
        processed: "no",
        code: "INVALID_ARGUMENT"
      },
      { name: "404", status: 404, kind: "model_not_found", processed: "no" },
      {
        name: "400 FAILED_PRECONDITION",
        status: 400,
        error: { status: "FAILED_PRECONDITION", message: "Gemini API free tier is not available in your country." },
        kind: "permission",
        processed: "no"
      },
      { name: "401", status: 401, kind: "authentication", processed: "no" },
      { name: "403", status: 403, kind: "permission", processed: "no" },
      {
        name: "429 PerMinute with RetryInfo",
        status: 429,
        error: {
          message: "You exceeded your current quota. Please retry in 37.2s.",
          details: [quotaFailure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), retryInfo("37s")]
        },
        kind: "rate_limited",
        processed: "no",
        retryAfterMs: 37_000
      },
      {
        name: "429 RetryInfo only",
        status: 429,
        error: { details: [retryInfo("1.5s")] },
        kind: "rate_limited",
        processed: "no",
        retryAfterMs: 1500
      },
      {
        name: "429 PerDay",
        status: 429,
        error: { details: [quotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), retryInfo("3600s")] },
        kind: "quota_exhausted",
        processed: "no"
      },
      { name: "402", status: 402, kind: "quota_exhausted", processed: "no" },
      { name: "500 INTERNAL", status: 500, kind: "server_error", processed: "maybe" },
      { name: "503 UNAVAILABLE", status: 503, kind: "overloaded", processed: "no" },
      { name: "504 DEADLINE_EXCEEDED", status: 504, kind: "timeout", processed: "maybe" }
    ]
    for (const row of rows) {
      it.effect(`${row.name} → ${row.kind}`, () =>
        Effect.gen(function* () {
          const gemini = yield* adapter
          const model = `table-${row.name.replace(/\W+/g, "-")}`
          const behavior = MockProviderServer.failure(row.status, { error: row.error })
          yield* script(model, behavior, behavior)
          const error = yield* Effect.flip(gemini.generate(simpleRequest("gemini", model)))
          assert.deepInclude(error, { kind: row.kind, processed: row.processed, httpStatus: row.status })
          if (row.retryAfterMs !== undefined)
            assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), row.retryAfterMs)
          if (row.code !== undefined) assert.strictEqual(error.providerCode, row.code)
          assert.isFalse(leaks(error))
          const streamed = yield* collectFailure(gemini, simpleRequest("gemini", model))
          assert.deepStrictEqual(streamed.events, [])
          assert.deepInclude(streamed.error, { kind: row.kind, processed: row.processed })
        })
      )
    }
  })

  it.effect("retry-after headers win over the body's retryDelay", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* script(
        "hint-model",
        MockProviderServer.failure(429, { headers: { "retry-after": "3" }, error: { details: [retryInfo("37s")] } })
      )
      const error = yield* Effect.flip(gemini.generate(simpleRequest("gemini", "hint-model")))
      assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), 3000)
    })
  )

  it.effect("streams text deltas and one Finish with the last usage", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* script(
        "stream-model",
        MockProviderServer.success({
          text: "Gemini streams without a terminator.",
          chunkSize: 6,
          usage: { input: 20, output: 9, reasoning: 2 },
          chunkDelayMs: 2
        })
      )
      const events = yield* collect(gemini, simpleRequest("gemini", "stream-model"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      assert.deepStrictEqual(events.right[0], { _tag: "Started", requestId: undefined, httpStatus: 200 })
      assert.strictEqual(textOf(events.right), "Gemini streams without a terminator.")
      assert.strictEqual(events.right.filter((e) => e._tag === "Finish").length, 1)
      const finish = events.right[events.right.length - 1]
      assert.isTrue(finish?._tag === "Finish")
      if (finish?._tag !== "Finish") return
      assert.deepStrictEqual(
        { ...finish.usage },
        { inputTokens: 20, cachedInputTokens: 0, outputTokens: 9, reasoningTokens: 2 }
      )
      assert.strictEqual(finish.modelVersion, "stream-model")
    })
  )

  it.effect("a bare JSON error mid-stream, a stream without finishReason, a dropped connection", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* script(
        "fault-model",
        MockProviderServer.success({
          text: "abcdefghijklmnop",
          chunkSize: 4,
          streamEnd: { _tag: "Error", afterChunks: 2, code: 503, error: { message: "The model is overloaded." } }
        }),
        MockProviderServer.success({
          text: "abcdefghijklmnop",
          chunkSize: 4,
          streamEnd: {
            _tag: "Error",
            afterChunks: 1,
            code: 429,
            error: { details: [quotaFailure("GenerateRequestsPerMinutePerProjectPerModel"), retryInfo("2s")] }
          }
        }),
        MockProviderServer.success({
          text: "abcdefghijklmnop",
          chunkSize: 4,
          streamEnd: { _tag: "Truncate", afterChunks: 3 }
        }),
        MockProviderServer.success({
          text: "abcdefghijklmnop",
          chunkSize: 4,
          streamEnd: { _tag: "Drop", afterChunks: 1 }
        })
      )
      const overloaded = yield* collectFailure(gemini, simpleRequest("gemini", "fault-model"))
      assert.strictEqual(textOf(overloaded.events), "abcdefgh")
      assert.deepInclude(overloaded.error, {
        kind: "overloaded",
        processed: "maybe",
        httpStatus: 200,
        providerCode: "UNAVAILABLE"
      })
      const limited = yield* collectFailure(gemini, simpleRequest("gemini", "fault-model"))
      assert.deepInclude(limited.error, { kind: "rate_limited", processed: "maybe" })
      assert.strictEqual(Duration.toMillis(limited.error.retryAfter ?? Duration.zero), 2000)
      const truncated = yield* collectFailure(gemini, simpleRequest("gemini", "fault-model"))
      assert.strictEqual(textOf(truncated.events), "abcdefghijkl")
      assert.deepInclude(truncated.error, { kind: "stream_truncated", processed: "maybe" })
      const dropped = yield* collectFailure(gemini, simpleRequest("gemini", "fault-model"))
      assert.deepInclude(dropped.error, { kind: "transport", processed: "maybe" })
    })
  )

  it.effect("invalid JSON is invalid_output", () =>
    Effect.gen(function* () {
      const gemini = yield* adapter
      yield* script(
        "json-model",
        MockProviderServer.success({ invalidJson: true }),
        MockProviderServer.success({ streamEnd: { _tag: "InvalidJson", afterChunks: 0 } })
      )
      assert.deepInclude(yield* Effect.flip(gemini.generate(simpleRequest("gemini", "json-model"))), {
        kind: "invalid_output"
      })
      assert.deepInclude((yield* collectFailure(gemini, simpleRequest("gemini", "json-model"))).error, {
        kind: "invalid_output"
      })
    })
  )
})
