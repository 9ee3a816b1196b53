/**
 * The Anthropic Messages adapter against the mock server: the conformance suite, then the exact
 * request body, tool choice, text beside tool calls, stop reasons and the
 * `anthropic-ratelimit-*` reset hints.
 */
import { assert } from "@effect/vitest"
import * as Anthropic from "@modelgate/adapters/anthropic"
import { Duration, Effect } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import {
  answerSchema,
  canary,
  collect,
  lastRequestFor,
  recordOf,
  representativeRequest,
  simpleRequest,
  textOf
} from "../adapters-fixtures.js"
import type { ClassificationRow } from "./AdapterConformance.js"
import { adapterFor, describeAdapter, scriptFor } from "./AdapterConformance.js"

const adapter = adapterFor("anthropic", Anthropic.make)

const script = scriptFor("anthropic")

const classification: ReadonlyArray<ClassificationRow> = [
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
    contentType: "text/html",
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

describeAdapter(
  {
    provider: "anthropic",
    make: Anthropic.make,
    auth: { header: "x-api-key", value: canary },
    modelVersion: (model) => model,
    toolCallId: (wireId) => wireId,
    refusal: { behavior: MockProviderServer.success({ refusal: true }), finishReason: "refusal" },
    terminator: "message_stop",
    framesBeforeText: 1,
    usageBeforeContent: true,
    classification,
    streamErrors: [
      {
        name: "overloaded_error",
        error: { type: "overloaded_error", message: "Overloaded" },
        kind: "overloaded",
        providerCode: "overloaded_error"
      }
    ],
    options: {
      // Thinking allows temperature 1 only; temperature and top_p never go together.
      request: {
        temperature: 1,
        stop: ["END"],
        reasoningEffort: "high",
        reasoningBudget: 2048,
        parallelToolCalls: false,
        userId: "user-7f3a"
      },
      providerOptions: {
        service_tier: "standard_only",
        metadata: { user_id: "other" },
        thinking: { type: "disabled" },
        model: "evil-model",
        api_key: "sk-evil",
        baseURL: "https://evil.example/v1",
        headers: { authorization: "Bearer evil" },
        stream: false,
        max_tokens: 1
      },
      wire: (model) => ({
        model,
        max_tokens: 4096,
        temperature: 1,
        stop_sequences: ["END"],
        output_config: { effort: "high" },
        thinking: { type: "enabled", budget_tokens: 2048 },
        tool_choice: { type: "auto", disable_parallel_tool_use: true },
        metadata: { user_id: "user-7f3a" },
        service_tier: "standard_only"
      }),
      neverSent: ["api_key", "baseURL", "headers", "top_k"],
      unmappable: ["seed", "presencePenalty", "frequencyPenalty"]
    }
  },
  (it) => {
    it.effect("sends the exact Messages body to /v1/messages, with anthropic-version and no authorization", () =>
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
        assert.strictEqual(recorded.headers["anthropic-version"], "2023-06-01")
        assert.isUndefined(recorded.headers.authorization)
      })
    )

    it.effect("maps tool choice and sends stream: true", () =>
      Effect.gen(function* () {
        const anthropic = yield* adapter
        yield* collect(anthropic, simpleRequest("anthropic", "choice-model", { toolChoice: "required" }))
        const streamed = yield* lastRequestFor("choice-model")
        assert.deepInclude(recordOf(streamed.body), { stream: true, tool_choice: { type: "any" }, max_tokens: 256 })
        assert.deepStrictEqual(recordOf(streamed.body).messages, [{ role: "user", content: "Say hello." }])
        yield* anthropic.generate(simpleRequest("anthropic", "choice-model", { toolChoice: { tool: "lookup" } }))
        const named = yield* lastRequestFor("choice-model")
        assert.deepStrictEqual(recordOf(named.body).tool_choice, { type: "tool", name: "lookup" })
        assert.isUndefined(recordOf(named.body).stream)
      })
    )

    it.effect("text beside tool_use blocks, and a tool call without arguments (generate and stream)", () =>
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

    it.effect("stop reasons: max_tokens, stop_sequence, context window, pause_turn", () =>
      Effect.gen(function* () {
        const anthropic = yield* adapter
        yield* script(
          "stop-model",
          MockProviderServer.success({ text: "partial", finishReason: "max_tokens" }),
          MockProviderServer.success({ text: "done", finishReason: "stop_sequence" }),
          MockProviderServer.success({ text: "partial", finishReason: "model_context_window_exceeded" }),
          MockProviderServer.success({ text: "partial", finishReason: "pause_turn" })
        )
        const run = anthropic.generate(simpleRequest("anthropic", "stop-model"))
        assert.strictEqual((yield* run).finishReason, "length")
        assert.strictEqual((yield* run).finishReason, "stop")
        const window = yield* Effect.flip(run)
        assert.deepInclude(window, { kind: "context_length", processed: "maybe" })
        assert.isDefined(window.usage)
        const paused = yield* Effect.flip(run)
        assert.deepInclude(paused, { kind: "invalid_output", processed: "maybe" })
      })
    )

    it.effect("a retry hint from anthropic-ratelimit-*-reset (an RFC 3339 instant)", () =>
      Effect.gen(function* () {
        const anthropic = yield* adapter
        const reset = new Date(Date.now() + 20_000).toISOString()
        yield* script(
          "reset-model",
          MockProviderServer.failure(429, {
            headers: { "anthropic-ratelimit-tokens-reset": reset, "anthropic-ratelimit-tokens-remaining": "0" }
          })
        )
        const error = yield* Effect.flip(anthropic.generate(simpleRequest("anthropic", "reset-model")))
        const ms = error.retryAfter === undefined ? undefined : Duration.toMillis(error.retryAfter)
        assert.isTrue(ms !== undefined && ms > 15_000 && ms <= 20_000, `got ${ms}`)
      })
    )
  }
)
