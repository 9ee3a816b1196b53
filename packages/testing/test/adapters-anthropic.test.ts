import { assert, describe, layer } from "@effect/vitest"
import * as Anthropic from "@modelgate/adapters/anthropic"
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
  return yield* Anthropic.make({ baseUrl: mock.baseUrl("anthropic"), apiKey })
})

const script = (model: string, ...behaviors: ReadonlyArray<Behavior>) =>
  Effect.flatMap(MockProviderServer, (mock) => mock.enqueue(behaviors, { provider: "anthropic", model }))

layer(TestLayer, { excludeTestServices: true })("anthropic adapter against the mock server", (it) => {
  it.effect("sends the exact Messages body, with the key only in x-api-key", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      yield* script("body-model", MockProviderServer.success({ json: { a: "b" } }))
      yield* anthropic.generate(representativeRequest("anthropic", "body-model"))
      const recorded = yield* lastRequestFor("body-model")
      assert.deepStrictEqual(recorded.body, {
        model: "body-model",
        max_tokens: 512,
        system: "Be terse.",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "What is in this picture?" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }
            ]
          },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Let me look." },
              { type: "tool_use", id: "call_1", name: "lookup", input: { q: "x" } }
            ]
          },
          { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1", content: '{"found":true}' }] }
        ],
        tools: [
          {
            name: "lookup",
            description: "Look up an order.",
            input_schema: {
              type: "object",
              properties: { q: { type: "string" } },
              required: ["q"],
              additionalProperties: false
            }
          }
        ],
        tool_choice: { type: "auto" },
        output_config: { format: { type: "json_schema", schema: answerSchema } }
      })
      assert.strictEqual(recorded.url, "/v1/messages")
      assert.strictEqual(recorded.headers["x-api-key"], canary)
      assert.strictEqual(recorded.headers["anthropic-version"], "2023-06-01")
      assert.isUndefined(recorded.headers.authorization)
      assert.isFalse(recorded.rawBody.includes(canary))
    })
  )

  it.effect("maps tool choice and sends stream: true", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      yield* collect(anthropic, simpleRequest("anthropic", "choice-model", { toolChoice: "required" }))
      const streamed = yield* lastRequestFor("choice-model")
      assert.deepInclude(recordOf(streamed.body), { stream: true, tool_choice: { type: "any" }, max_tokens: 256 })
      assert.deepStrictEqual(field(streamed.body, "messages"), [{ role: "user", content: "Say hello." }])
      yield* anthropic.generate(simpleRequest("anthropic", "choice-model", { toolChoice: { tool: "lookup" } }))
      const named = yield* lastRequestFor("choice-model")
      assert.deepStrictEqual(field(named.body, "tool_choice"), { type: "tool", name: "lookup" })
      assert.isUndefined(field(named.body, "stream"))
    })
  )

  it.effect("reads text, usage (cache reads included in input), model and request id", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      yield* script(
        "ok-model",
        MockProviderServer.success({
          text: "Hi",
          usage: { input: 1250, output: 30, cached: 1200, reasoning: 5 },
          model: "claude-x-20260101",
          requestId: "req_011"
        })
      )
      const response = yield* anthropic.generate(simpleRequest("anthropic", "ok-model"))
      assert.strictEqual(response.text, "Hi")
      assert.strictEqual(response.finishReason, "stop")
      assert.strictEqual(response.modelVersion, "claude-x-20260101")
      assert.strictEqual(response.requestId, "req_011")
      assert.deepStrictEqual(
        { ...response.usage },
        { inputTokens: 1250, cachedInputTokens: 1200, outputTokens: 30, reasoningTokens: 5 }
      )
      const recorded = yield* lastRequestFor("ok-model")
      assert.strictEqual(recorded.headers["x-api-key"], canary)
    })
  )

  it.effect("reads tool_use blocks (generate and stream)", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      const toolCalls = [{ id: "toolu_1", name: "lookup", arguments: { q: "x" } }]
      yield* script(
        "tool-model",
        MockProviderServer.success({ text: "Looking.", toolCalls }),
        MockProviderServer.success({ text: "Looking.", toolCalls, chunkSize: 3 }),
        MockProviderServer.success({ text: "", toolCalls: [{ id: "toolu_2", name: "ping", arguments: {} }] })
      )
      const response = yield* anthropic.generate(simpleRequest("anthropic", "tool-model"))
      assert.strictEqual(response.finishReason, "tool_calls")
      assert.strictEqual(response.text, "Looking.")
      assert.deepStrictEqual(
        response.toolCalls.map((c) => ({ ...c })),
        [{ id: "toolu_1", name: "lookup", arguments: '{"q":"x"}' }]
      )
      const events = yield* collect(anthropic, simpleRequest("anthropic", "tool-model"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      assert.strictEqual(textOf(events.right), "Looking.")
      const deltas = events.right.flatMap((e) => (e._tag === "ToolCallDelta" ? [e] : []))
      assert.deepInclude(deltas[0], { index: 0, id: "toolu_1", name: "lookup" })
      assert.strictEqual(deltas.map((d) => d.argumentsDelta).join(""), '{"q":"x"}')
      assert.deepInclude(events.right[events.right.length - 1], { _tag: "Finish", finishReason: "tool_calls" })
      const empty = yield* collect(anthropic, simpleRequest("anthropic", "tool-model"))
      assert.isTrue(empty._tag === "Right")
      if (empty._tag !== "Right") return
      const emptyArgs = empty.right.flatMap((e) => (e._tag === "ToolCallDelta" ? [e.argumentsDelta] : [])).join("")
      assert.deepStrictEqual(JSON.parse(emptyArgs), {})
    })
  )

  it.effect("stop reasons: refusal, max_tokens, stop_sequence, context window, pause_turn", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      yield* script(
        "stop-model",
        MockProviderServer.success({ refusal: true }),
        MockProviderServer.success({ refusal: true }),
        MockProviderServer.success({ text: "partial", finishReason: "max_tokens" }),
        MockProviderServer.success({ text: "done", finishReason: "stop_sequence" }),
        MockProviderServer.success({ text: "partial", finishReason: "model_context_window_exceeded" }),
        MockProviderServer.success({ text: "partial", finishReason: "pause_turn" })
      )
      const refusal = yield* anthropic.generate(simpleRequest("anthropic", "stop-model"))
      assert.deepInclude(refusal, { refusal: true, finishReason: "refusal", text: undefined })
      const streamed = yield* collect(anthropic, simpleRequest("anthropic", "stop-model"))
      assert.isTrue(streamed._tag === "Right")
      if (streamed._tag === "Right") {
        assert.deepInclude(streamed.right[streamed.right.length - 1], {
          _tag: "Finish",
          finishReason: "refusal",
          refusal: true
        })
      }
      assert.strictEqual((yield* anthropic.generate(simpleRequest("anthropic", "stop-model"))).finishReason, "length")
      assert.strictEqual((yield* anthropic.generate(simpleRequest("anthropic", "stop-model"))).finishReason, "stop")
      const window = yield* Effect.flip(anthropic.generate(simpleRequest("anthropic", "stop-model")))
      assert.deepInclude(window, { kind: "context_length", processed: "maybe" })
      assert.isDefined(window.usage)
      const paused = yield* Effect.flip(anthropic.generate(simpleRequest("anthropic", "stop-model")))
      assert.deepInclude(paused, { kind: "invalid_output", processed: "maybe" })
    })
  )

  describe("classification table (providers.md §9, Anthropic rows)", () => {
    const rows: ReadonlyArray<{
      readonly name: string
      readonly status: number
      readonly error?: ErrorSpec
      readonly headers?: Record<string, string>
      readonly body?: string
      readonly kind: ProviderError["kind"]
      readonly processed: "no" | "maybe"
      readonly retryAfterMs?: number
    }> = [
      {
        name: "400 prompt is too long",
        status: 400,
        error: { message: "prompt is too long: 213462 tokens > 200000 maximum" },
        kind: "context_length",
        processed: "no"
      },
      {
        name: "400 exceed context limit",
        status: 400,
        error: { message: "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000" },
        kind: "context_length",
        processed: "no"
      },
      {
        name: "400 API usage limits",
        status: 400,
        error: { message: "You have reached your specified API usage limits. You will regain access on 2026-09-01." },
        kind: "spend_cap",
        processed: "no"
      },
      { name: "other 400", status: 400, kind: "invalid_request", processed: "no" },
      { name: "404", status: 404, kind: "model_not_found", processed: "no" },
      {
        name: "413 from Cloudflare (HTML)",
        status: 413,
        body: "<html>413 Request Entity Too Large</html>",
        kind: "request_too_large",
        processed: "no"
      },
      { name: "401", status: 401, kind: "authentication", processed: "no" },
      { name: "403", status: 403, kind: "permission", processed: "no" },
      { name: "402 billing_error", status: 402, kind: "quota_exhausted", processed: "no" },
      {
        name: "429 rate_limit_error with retry-after",
        status: 429,
        headers: { "retry-after": "7" },
        kind: "rate_limited",
        processed: "no",
        retryAfterMs: 7000
      },
      {
        name: "429 enforced_spend_limit_reached",
        status: 429,
        error: { message: "spend limit", details: { error_code: "enforced_spend_limit_reached" } },
        kind: "spend_cap",
        processed: "no"
      },
      { name: "500 api_error", status: 500, kind: "server_error", processed: "maybe" },
      { name: "504 timeout_error", status: 504, kind: "timeout", processed: "maybe" },
      {
        name: "529 overloaded_error",
        status: 529,
        headers: { "x-should-retry": "true" },
        kind: "overloaded",
        processed: "no"
      },
      {
        name: "529 with x-should-retry: false",
        status: 529,
        headers: { "x-should-retry": "false" },
        kind: "rejected",
        processed: "no"
      }
    ]
    for (const row of rows) {
      it.effect(`${row.name} → ${row.kind}`, () =>
        Effect.gen(function* () {
          const anthropic = yield* adapter
          const model = `table-${row.name.replace(/\W+/g, "-")}`
          const behavior = MockProviderServer.failure(row.status, {
            error: row.error,
            headers: row.headers,
            requestId: "req_err",
            ...(row.body === undefined ? {} : { body: row.body, contentType: "text/html" })
          })
          yield* script(model, behavior, behavior)
          const error = yield* Effect.flip(anthropic.generate(simpleRequest("anthropic", model)))
          assert.deepInclude(error, {
            kind: row.kind,
            processed: row.processed,
            httpStatus: row.status,
            requestId: "req_err"
          })
          if (row.retryAfterMs !== undefined)
            assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), row.retryAfterMs)
          assert.isFalse(leaks(error))
          assert.isFalse(/prompt is too long|usage limits/.test(error.detail))
          const streamed = yield* collectFailure(anthropic, simpleRequest("anthropic", model))
          assert.deepStrictEqual(streamed.events, [])
          assert.deepInclude(streamed.error, { kind: row.kind, processed: row.processed })
        })
      )
    }
  })

  it.effect("retry hints: retry-after-ms first, then retry-after, then RFC 3339 reset headers", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      const reset = new Date(Date.now() + 20_000).toISOString()
      yield* script(
        "retry-model",
        MockProviderServer.failure(429, { headers: { "retry-after-ms": "0", "retry-after": "30" } }),
        MockProviderServer.failure(429, { headers: { "retry-after": new Date(Date.now() + 10_000).toUTCString() } }),
        MockProviderServer.failure(429, {
          headers: { "anthropic-ratelimit-tokens-reset": reset, "anthropic-ratelimit-tokens-remaining": "0" }
        })
      )
      const hint = () =>
        Effect.map(Effect.flip(anthropic.generate(simpleRequest("anthropic", "retry-model"))), (e) =>
          e.retryAfter === undefined ? undefined : Duration.toMillis(e.retryAfter)
        )
      // `retry-after-ms: 0` is a real hint here (the Anthropic SDK treats it as absent).
      assert.strictEqual(yield* hint(), 0)
      const fromDate = yield* hint()
      assert.isTrue(fromDate !== undefined && fromDate > 5_000 && fromDate <= 10_000, `got ${fromDate}`)
      const fromReset = yield* hint()
      assert.isTrue(fromReset !== undefined && fromReset > 15_000 && fromReset <= 20_000, `got ${fromReset}`)
    })
  )

  it.effect("streams text with Started, one Finish with usage from message_start and message_delta", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      yield* script(
        "stream-model",
        MockProviderServer.success({
          text: "Streaming from Claude.",
          chunkSize: 4,
          usage: { input: 300, output: 12, cached: 200 },
          requestId: "req_s",
          ttftMs: 5
        })
      )
      const events = yield* collect(anthropic, simpleRequest("anthropic", "stream-model"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      assert.deepStrictEqual(events.right[0], { _tag: "Started", requestId: "req_s", httpStatus: 200 })
      assert.strictEqual(textOf(events.right), "Streaming from Claude.")
      assert.strictEqual(events.right.filter((e) => e._tag === "Finish").length, 1)
      const finish = events.right[events.right.length - 1]
      assert.isTrue(finish?._tag === "Finish")
      if (finish?._tag !== "Finish") return
      assert.strictEqual(finish.finishReason, "stop")
      assert.strictEqual(finish.modelVersion, "stream-model")
      assert.deepStrictEqual(
        { ...finish.usage },
        { inputTokens: 300, cachedInputTokens: 200, outputTokens: 12, reasoningTokens: 0 }
      )
    })
  )

  it.effect("an error event after 200, a stream without message_stop, a dropped connection", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      yield* script(
        "fault-model",
        MockProviderServer.success({
          text: "abcdefghij",
          chunkSize: 2,
          streamEnd: { _tag: "Error", afterChunks: 3, error: { type: "overloaded_error", message: "Overloaded" } }
        }),
        MockProviderServer.success({
          text: "abcdefghij",
          chunkSize: 2,
          streamEnd: { _tag: "Truncate", afterChunks: 100 }
        }),
        MockProviderServer.success({ text: "abcdefghij", chunkSize: 2, streamEnd: { _tag: "Drop", afterChunks: 2 } })
      )
      const midstream = yield* collectFailure(anthropic, simpleRequest("anthropic", "fault-model"))
      assert.strictEqual(midstream.events[0]?._tag, "Started")
      assert.deepInclude(midstream.error, {
        kind: "overloaded",
        processed: "maybe",
        providerCode: "overloaded_error",
        httpStatus: 200
      })
      assert.isDefined(midstream.error.usage)
      const truncated = yield* collectFailure(anthropic, simpleRequest("anthropic", "fault-model"))
      assert.strictEqual(textOf(truncated.events), "abcdefghij")
      assert.deepInclude(truncated.error, { kind: "stream_truncated", processed: "maybe" })
      const dropped = yield* collectFailure(anthropic, simpleRequest("anthropic", "fault-model"))
      assert.deepInclude(dropped.error, { kind: "transport", processed: "maybe" })
    })
  )

  it.effect("invalid JSON is invalid_output", () =>
    Effect.gen(function* () {
      const anthropic = yield* adapter
      yield* script(
        "json-model",
        MockProviderServer.success({ invalidJson: true }),
        MockProviderServer.success({ streamEnd: { _tag: "InvalidJson", afterChunks: 0 } })
      )
      assert.deepInclude(yield* Effect.flip(anthropic.generate(simpleRequest("anthropic", "json-model"))), {
        kind: "invalid_output"
      })
      assert.deepInclude((yield* collectFailure(anthropic, simpleRequest("anthropic", "json-model"))).error, {
        kind: "invalid_output"
      })
    })
  )
})

function field(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null && key in value ? Reflect.get(value, key) : undefined
}
