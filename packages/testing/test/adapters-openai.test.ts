import { assert, describe, layer } from "@effect/vitest"
import * as OpenAi from "@modelgate/adapters/openai"
import { NodeHttpClient } from "@effect/platform-node"
import type { ProviderError } from "@modelgate/core/Errors"
import { Duration, Effect, Stream } from "effect"
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
  return yield* OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey })
})

const script = (model: string, ...behaviors: ReadonlyArray<Behavior>) =>
  Effect.flatMap(MockProviderServer, (mock) => mock.enqueue(behaviors, { provider: "openai", model }))

layer(TestLayer, { excludeTestServices: true })("openai adapter against the mock server", (it) => {
  it.effect("sends the exact Chat Completions body, with the key only in the auth header", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script("body-model", MockProviderServer.success({ json: { a: "b" } }))
      yield* openai.generate(representativeRequest("openai", "body-model"))
      const recorded = yield* lastRequestFor("body-model")
      assert.deepStrictEqual(recorded.body, {
        model: "body-model",
        messages: [
          { role: "system", content: "Be terse." },
          {
            role: "user",
            content: [
              { type: "text", text: "What is in this picture?" },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }
            ]
          },
          {
            role: "assistant",
            content: "Let me look.",
            tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }]
          },
          { role: "tool", tool_call_id: "call_1", content: '{"found":true}' }
        ],
        max_completion_tokens: 512,
        tools: [
          {
            type: "function",
            function: {
              name: "lookup",
              description: "Look up an order.",
              parameters: {
                type: "object",
                properties: { q: { type: "string" } },
                required: ["q"],
                additionalProperties: false
              }
            }
          }
        ],
        tool_choice: "auto",
        response_format: { type: "json_schema", json_schema: { name: "answer", schema: answerSchema, strict: true } }
      })
      assert.strictEqual(recorded.url, "/v1/chat/completions")
      assert.strictEqual(recorded.headers.authorization, `Bearer ${canary}`)
      assert.isFalse(recorded.rawBody.includes(canary))
      assert.isUndefined(recorded.headers.traceparent)
    })
  )

  it.effect("streams with stream: true and stream_options.include_usage", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* collect(openai, simpleRequest("openai", "stream-flags", { toolChoice: { tool: "lookup" }, tools: [] }))
      const recorded = yield* lastRequestFor("stream-flags")
      assert.strictEqual(recorded.headers.accept, "text/event-stream")
      assert.deepInclude(recordOf(recorded.body), {
        stream: true,
        stream_options: { include_usage: true },
        tool_choice: { type: "function", function: { name: "lookup" } },
        max_completion_tokens: 256
      })
    })
  )

  it.effect("reads text, usage with cached and reasoning tokens, model version and request id", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "ok-model",
        MockProviderServer.success({
          text: "Hi there",
          usage: { input: 120, output: 40, cached: 64, reasoning: 16 },
          model: "gpt-x-2026-05-01",
          systemFingerprint: "fp_abc",
          requestId: "req_123"
        })
      )
      const response = yield* openai.generate(simpleRequest("openai", "ok-model"))
      assert.strictEqual(response.text, "Hi there")
      assert.strictEqual(response.finishReason, "stop")
      assert.isFalse(response.refusal)
      assert.deepStrictEqual(response.toolCalls, [])
      assert.strictEqual(response.requestId, "req_123")
      assert.strictEqual(response.httpStatus, 200)
      assert.strictEqual(response.modelVersion, "gpt-x-2026-05-01+fp_abc")
      assert.deepStrictEqual(
        { ...response.usage },
        { inputTokens: 120, cachedInputTokens: 64, outputTokens: 40, reasoningTokens: 16 }
      )
    })
  )

  it.effect("reads structured output as JSON text", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script("json-model", MockProviderServer.success({ json: { a: "b" } }))
      const response = yield* openai.generate(
        simpleRequest("openai", "json-model", { output: { name: "answer", jsonSchema: answerSchema, strict: true } })
      )
      assert.deepStrictEqual(JSON.parse(response.text ?? ""), { a: "b" })
    })
  )

  it.effect("reads tool calls (generate and stream)", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      const toolCalls = [{ id: "call_9", name: "lookup", arguments: { q: "order 7" } }]
      yield* script(
        "tool-model",
        MockProviderServer.success({ text: "", toolCalls }),
        MockProviderServer.success({ text: "", toolCalls, chunkSize: 5 })
      )
      const response = yield* openai.generate(simpleRequest("openai", "tool-model", { tools: [] }))
      assert.strictEqual(response.finishReason, "tool_calls")
      assert.deepStrictEqual(
        response.toolCalls.map((c) => ({ ...c })),
        [{ id: "call_9", name: "lookup", arguments: '{"q":"order 7"}' }]
      )
      const events = yield* collect(openai, simpleRequest("openai", "tool-model"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      const deltas = events.right.flatMap((e) => (e._tag === "ToolCallDelta" ? [e] : []))
      assert.strictEqual(deltas[0]?.id, "call_9")
      assert.strictEqual(deltas[0]?.name, "lookup")
      assert.strictEqual(deltas.map((d) => d.argumentsDelta).join(""), '{"q":"order 7"}')
      const finish = events.right[events.right.length - 1]
      assert.strictEqual(finish?._tag === "Finish" ? finish.finishReason : undefined, "tool_calls")
    })
  )

  it.effect("reports a refusal (generate and stream)", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "refusal-model",
        MockProviderServer.success({ refusal: "I can't." }),
        MockProviderServer.success({ refusal: true })
      )
      const response = yield* openai.generate(simpleRequest("openai", "refusal-model"))
      assert.isTrue(response.refusal)
      assert.strictEqual(response.finishReason, "refusal")
      assert.isUndefined(response.text)
      const events = yield* collect(openai, simpleRequest("openai", "refusal-model"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      const finish = events.right[events.right.length - 1]
      assert.deepInclude(finish, { _tag: "Finish", finishReason: "refusal", refusal: true })
      assert.strictEqual(textOf(events.right), "")
    })
  )

  it.effect("maps content_filter and length finish reasons", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "finish-model",
        MockProviderServer.success({ text: "partial", finishReason: "content_filter" }),
        MockProviderServer.success({ text: "partial", finishReason: "length" })
      )
      const filtered = yield* openai.generate(simpleRequest("openai", "finish-model"))
      assert.strictEqual(filtered.finishReason, "content_filter")
      assert.isTrue(filtered.refusal)
      const truncated = yield* openai.generate(simpleRequest("openai", "finish-model"))
      assert.strictEqual(truncated.finishReason, "length")
      assert.isFalse(truncated.refusal)
    })
  )

  it.effect("empty content and invalid JSON are invalid_output", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "bad-output",
        MockProviderServer.success({ text: "" }),
        MockProviderServer.success({ invalidJson: true }),
        MockProviderServer.success({ streamEnd: { _tag: "InvalidJson", afterChunks: 1 } })
      )
      const empty = yield* Effect.flip(openai.generate(simpleRequest("openai", "bad-output")))
      assert.deepInclude(empty, { kind: "invalid_output", processed: "maybe", httpStatus: 200 })
      const invalid = yield* Effect.flip(openai.generate(simpleRequest("openai", "bad-output")))
      assert.deepInclude(invalid, { kind: "invalid_output", processed: "maybe" })
      const { error } = yield* collectFailure(openai, simpleRequest("openai", "bad-output"))
      assert.deepInclude(error, { kind: "invalid_output", processed: "maybe" })
    })
  )

  describe("classification table (providers.md §9, OpenAI rows)", () => {
    const rows: ReadonlyArray<{
      readonly name: string
      readonly status: number
      readonly error?: ErrorSpec
      readonly headers?: Record<string, string>
      readonly kind: ProviderError["kind"]
      readonly processed: "no" | "maybe"
      readonly code?: string
    }> = [
      {
        name: "400 context_length_exceeded",
        status: 400,
        error: { code: "context_length_exceeded" },
        kind: "context_length",
        processed: "no",
        code: "context_length_exceeded"
      },
      {
        name: "400 invalid_prompt",
        status: 400,
        error: { code: "invalid_prompt" },
        kind: "refusal",
        processed: "no",
        code: "invalid_prompt"
      },
      { name: "other 400", status: 400, kind: "invalid_request", processed: "no" },
      { name: "404", status: 404, kind: "model_not_found", processed: "no", code: "model_not_found" },
      { name: "422", status: 422, kind: "invalid_request", processed: "no" },
      { name: "401", status: 401, kind: "authentication", processed: "no", code: "invalid_api_key" },
      {
        name: "403",
        status: 403,
        error: { type: "invalid_request_error", code: "unsupported_country_region_territory" },
        kind: "permission",
        processed: "no"
      },
      { name: "408", status: 408, kind: "timeout", processed: "no" },
      { name: "409", status: 409, kind: "server_error", processed: "no" },
      {
        name: "429 rate_limit_exceeded",
        status: 429,
        error: { type: "tokens", code: "rate_limit_exceeded" },
        kind: "rate_limited",
        processed: "no"
      },
      {
        name: "429 slow_down",
        status: 429,
        error: { type: "rate_limit_error", code: "slow_down" },
        kind: "rate_limited",
        processed: "no"
      },
      {
        name: "429 Request too large",
        status: 429,
        error: {
          type: "tokens",
          code: "rate_limit_exceeded",
          message: "Request too large for gpt-x on tokens per min (TPM): Limit 30000, Requested 50000."
        },
        kind: "request_too_large",
        processed: "no"
      },
      {
        name: "429 insufficient_quota",
        status: 429,
        error: { type: "insufficient_quota", code: "insufficient_quota" },
        kind: "quota_exhausted",
        processed: "no"
      },
      {
        name: "429 credit_balance_exhausted",
        status: 429,
        error: { type: "insufficient_quota", code: "credit_balance_exhausted" },
        kind: "quota_exhausted",
        processed: "no"
      },
      {
        name: "429 organization_usage_limit_exceeded",
        status: 429,
        error: { code: "organization_usage_limit_exceeded" },
        kind: "quota_exhausted",
        processed: "no"
      },
      {
        name: "429 project_spend_limit_exceeded",
        status: 429,
        error: { code: "project_spend_limit_exceeded" },
        kind: "spend_cap",
        processed: "no"
      },
      {
        name: "429 organization_spend_limit_exceeded",
        status: 429,
        error: { code: "organization_spend_limit_exceeded" },
        kind: "spend_cap",
        processed: "no"
      },
      { name: "500", status: 500, kind: "server_error", processed: "maybe" },
      { name: "502 with an HTML body", status: 502, kind: "server_error", processed: "maybe" },
      {
        name: "503 server_is_overloaded",
        status: 503,
        error: { type: "service_unavailable_error", code: "server_is_overloaded" },
        kind: "overloaded",
        processed: "no"
      },
      { name: "504", status: 504, kind: "timeout", processed: "maybe" },
      {
        name: "503 with x-should-retry: false",
        status: 503,
        headers: { "x-should-retry": "false" },
        kind: "rejected",
        processed: "no"
      },
      {
        name: "409 with x-should-retry: true",
        status: 409,
        headers: { "x-should-retry": "true" },
        kind: "server_error",
        processed: "no"
      },
      {
        name: "418 with x-should-retry: true",
        status: 418,
        error: { type: "teapot" },
        headers: { "x-should-retry": "true" },
        kind: "server_error",
        processed: "no"
      }
    ]
    for (const row of rows) {
      it.effect(`${row.name} → ${row.kind}`, () =>
        Effect.gen(function* () {
          const openai = yield* adapter
          const model = `table-${row.name.replace(/\W+/g, "-")}`
          const behavior = MockProviderServer.failure(row.status, {
            error: row.error,
            headers: row.headers,
            requestId: "req_err",
            ...(row.status === 502 ? { body: "<html>Bad gateway</html>", contentType: "text/html" } : {})
          })
          yield* script(model, behavior, behavior)
          const error = yield* Effect.flip(openai.generate(simpleRequest("openai", model)))
          assert.deepInclude(error, {
            kind: row.kind,
            processed: row.processed,
            httpStatus: row.status,
            requestId: "req_err"
          })
          if (row.code !== undefined) assert.strictEqual(error.providerCode, row.code)
          assert.isFalse(leaks(error))
          assert.isFalse(error.detail.includes("Request too large"))
          const streamed = yield* collectFailure(openai, simpleRequest("openai", model))
          assert.deepStrictEqual(streamed.events, [])
          assert.deepInclude(streamed.error, { kind: row.kind, processed: row.processed })
        })
      )
    }
  })

  it.effect("retry hints: retry-after-ms, retry-after seconds, HTTP date, reset headers", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      const date = new Date(Date.now() + 30_000).toUTCString()
      yield* script(
        "retry-model",
        MockProviderServer.failure(429, { headers: { "retry-after-ms": "1500.5", "retry-after": "9" } }),
        MockProviderServer.failure(429, { headers: { "retry-after": "2.5" } }),
        MockProviderServer.failure(429, { headers: { "retry-after": date } }),
        MockProviderServer.failure(429, {
          headers: {
            "x-ratelimit-reset-requests": "1.5s",
            "x-ratelimit-remaining-requests": "10",
            "x-ratelimit-reset-tokens": "6m0s",
            "x-ratelimit-remaining-tokens": "0"
          }
        }),
        MockProviderServer.failure(429, { headers: { "retry-after": "120" } })
      )
      const hint = () =>
        Effect.map(Effect.flip(openai.generate(simpleRequest("openai", "retry-model"))), (e) =>
          e.retryAfter === undefined ? undefined : Duration.toMillis(e.retryAfter)
        )
      assert.strictEqual(yield* hint(), 1501)
      assert.strictEqual(yield* hint(), 2500)
      const fromDate = yield* hint()
      assert.isTrue(fromDate !== undefined && fromDate > 25_000 && fromDate <= 30_000, `got ${fromDate}`)
      assert.strictEqual(yield* hint(), 360_000)
      // Longer than 60 s is kept (openai-node would drop it).
      assert.strictEqual(yield* hint(), 120_000)
    })
  )

  it.effect("streams text deltas, Started with the request id, and one Finish with usage", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "stream-model",
        MockProviderServer.success({
          text: "The quick brown fox jumps over the lazy dog.",
          chunkSize: 7,
          usage: { input: 30, output: 11, cached: 10, reasoning: 3 },
          requestId: "req_stream",
          ttftMs: 10,
          chunkDelayMs: 2
        })
      )
      const events = yield* collect(openai, simpleRequest("openai", "stream-model"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      assert.deepStrictEqual(events.right[0], { _tag: "Started", requestId: "req_stream", httpStatus: 200 })
      assert.strictEqual(textOf(events.right), "The quick brown fox jumps over the lazy dog.")
      const finishes = events.right.filter((e) => e._tag === "Finish")
      assert.strictEqual(finishes.length, 1)
      const finish = events.right[events.right.length - 1]
      assert.isTrue(finish?._tag === "Finish")
      if (finish?._tag !== "Finish") return
      assert.strictEqual(finish.finishReason, "stop")
      assert.strictEqual(finish.modelVersion, "stream-model+fp_mock")
      assert.deepStrictEqual(
        { ...finish.usage },
        { inputTokens: 30, cachedInputTokens: 10, outputTokens: 11, reasoningTokens: 3 }
      )
    })
  )

  it.effect("an error event after 200 fails the stream with the mapped class", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "midstream-model",
        MockProviderServer.success({
          text: "abcdefghijklmnopqrstuvwxyz",
          chunkSize: 5,
          streamEnd: {
            _tag: "Error",
            afterChunks: 2,
            error: { type: "server_error", code: "server_error", message: "boom" }
          }
        }),
        MockProviderServer.success({
          streamEnd: { _tag: "Error", afterChunks: 1, error: { type: "tokens", code: "rate_limit_exceeded" } }
        })
      )
      const { events, error } = yield* collectFailure(openai, simpleRequest("openai", "midstream-model"))
      assert.strictEqual(textOf(events), "abcdefghij")
      assert.deepInclude(error, {
        kind: "server_error",
        processed: "maybe",
        httpStatus: 200,
        providerCode: "server_error"
      })
      const second = yield* collectFailure(openai, simpleRequest("openai", "midstream-model"))
      assert.deepInclude(second.error, { kind: "rate_limited", processed: "maybe" })
    })
  )

  it.effect("a stream without [DONE] is stream_truncated; a dropped connection is transport, both maybe", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "cut-model",
        MockProviderServer.success({
          text: "abcdefghijklmnopqrstuvwxyz",
          chunkSize: 5,
          streamEnd: { _tag: "Truncate", afterChunks: 5 }
        }),
        MockProviderServer.success({
          text: "abcdefghijklmnopqrstuvwxyz",
          chunkSize: 5,
          streamEnd: { _tag: "Drop", afterChunks: 2 }
        })
      )
      const truncated = yield* collectFailure(openai, simpleRequest("openai", "cut-model"))
      assert.strictEqual(textOf(truncated.events), "abcdefghijklmnopqrstuvwxy")
      assert.deepInclude(truncated.error, { kind: "stream_truncated", processed: "maybe", httpStatus: 200 })
      const dropped = yield* collectFailure(openai, simpleRequest("openai", "cut-model"))
      assert.strictEqual(textOf(dropped.events), "abcdefghij")
      assert.deepInclude(dropped.error, { kind: "transport", processed: "maybe" })
    })
  )

  it.effect("a connection dropped before headers is transport maybe; connection refused is transport no", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script("drop-model", MockProviderServer.drop())
      const dropped = yield* Effect.flip(openai.generate(simpleRequest("openai", "drop-model")))
      assert.deepInclude(dropped, { kind: "transport", processed: "maybe" })
      const refused = yield* OpenAi.make({ baseUrl: "http://127.0.0.1:1/v1", apiKey }).pipe(
        Effect.flatMap((a) => Effect.flip(a.generate(simpleRequest("openai", "refused")))),
        Effect.provide(NodeHttpClient.layerUndici)
      )
      assert.deepInclude(refused, { kind: "transport", processed: "no", providerCode: "ECONNREFUSED" })
      assert.isFalse(leaks(refused))
    })
  )

  it.effect("bounds the response size", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const small = yield* OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey, maxResponseBytes: 200 })
      yield* script(
        "big-model",
        MockProviderServer.success({ text: "x".repeat(1000) }),
        MockProviderServer.success({ text: "x".repeat(1000) })
      )
      const error = yield* Effect.flip(small.generate(simpleRequest("openai", "big-model")))
      assert.deepInclude(error, { kind: "invalid_output", processed: "maybe" })
      const streamed = yield* collectFailure(small, simpleRequest("openai", "big-model"))
      assert.deepInclude(streamed.error, { kind: "invalid_output", processed: "maybe" })
    })
  )

  it.effect("interrupting a stream aborts the request", () =>
    Effect.gen(function* () {
      const openai = yield* adapter
      yield* script(
        "slow-model",
        MockProviderServer.success({ text: "a".repeat(64), chunkSize: 8, chunkDelayMs: 5_000 })
      )
      const start = Date.now()
      const events = yield* openai.stream(simpleRequest("openai", "slow-model")).pipe(Stream.take(2), Stream.runCollect)
      assert.strictEqual(events.length, 2)
      assert.isBelow(Date.now() - start, 2_000)
    })
  )
})
