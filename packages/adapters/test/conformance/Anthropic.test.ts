/**
 * The Anthropic Messages adapter against the mock server: the conformance suite, then the exact
 * request body, tool choice, text beside tool calls, stop reasons and the
 * `anthropic-ratelimit-*` reset hints.
 */
import { assert } from "@effect/vitest"
import * as Anthropic from "@modelgate/adapters/anthropic"
import { Duration, Effect } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import * as Fixtures from "../adapters-fixtures.js"
import type { ClassificationRow } from "./AdapterConformance.js"
import * as Conformance from "./AdapterConformance.js"
import { row } from "./AdapterConformance.js"

const adapter = Conformance.adapterFor("anthropic", Anthropic.make)

const script = Conformance.scriptFor("anthropic")

const classification: ReadonlyArray<ClassificationRow> = [
  row("400 prompt is too long", 400, "context_length", "no", {
    error: { message: "prompt is too long: 213462 tokens > 200000 maximum" }
  }),
  row("400 exceed context limit", 400, "context_length", "no", {
    error: { message: "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000" }
  }),
  row("400 API usage limits", 400, "spend_cap", "no", {
    error: { message: "You have reached your specified API usage limits. You will regain access on 2026-09-01." }
  }),
  row("other 400", 400, "invalid_request", "no"),
  row("404", 404, "model_not_found", "no"),
  row("413 from Cloudflare (HTML)", 413, "request_too_large", "no", {
    body: "<html>413 Request Entity Too Large</html>",
    contentType: "text/html"
  }),
  row("401", 401, "authentication", "no"),
  row("403", 403, "permission", "no"),
  row("402 billing_error", 402, "quota_exhausted", "no"),
  row("429 rate_limit_error with retry-after", 429, "rate_limited", "no", {
    headers: { "retry-after": "7" },
    retryAfterMs: 7000
  }),
  row("429 enforced_spend_limit_reached", 429, "spend_cap", "no", {
    error: { message: "spend limit", details: { error_code: "enforced_spend_limit_reached" } }
  }),
  row("500 api_error", 500, "server_error", "maybe"),
  row("504 timeout_error", 504, "timeout", "maybe"),
  row("529 overloaded_error", 529, "overloaded", "no", { headers: { "x-should-retry": "true" } }),
  row("529 with x-should-retry: false", 529, "rejected", "no", { headers: { "x-should-retry": "false" } })
]

Conformance.describeAdapter(
  {
    provider: "anthropic",
    make: Anthropic.make,
    auth: { header: "x-api-key", value: Fixtures.canary },
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
        ...Conformance.hostileProviderOptions
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
        const recorded = yield* Conformance.sentRepresentative("anthropic", adapter)
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
          output_config: { format: { type: "json_schema", schema: Fixtures.answerSchema } }
        })
        assert.strictEqual(recorded.url, "/v1/messages")
        assert.strictEqual(recorded.headers["anthropic-version"], "2023-06-01")
        assert.isUndefined(recorded.headers.authorization)
      })
    )

    it.effect("maps tool choice and sends stream: true", () =>
      Effect.gen(function* () {
        const anthropic = yield* adapter
        yield* Fixtures.collect(
          anthropic,
          Fixtures.simpleRequest("anthropic", "choice-model", { toolChoice: "required" })
        )
        const streamed = yield* Fixtures.lastRequestFor("choice-model")
        assert.deepInclude(Fixtures.recordOf(streamed.body), {
          stream: true,
          tool_choice: { type: "any" },
          max_tokens: 256
        })
        assert.deepStrictEqual(Fixtures.recordOf(streamed.body).messages, [{ role: "user", content: "Say hello." }])
        yield* anthropic.generate(
          Fixtures.simpleRequest("anthropic", "choice-model", { toolChoice: { tool: "lookup" } })
        )
        const named = yield* Fixtures.lastRequestFor("choice-model")
        assert.deepStrictEqual(Fixtures.recordOf(named.body).tool_choice, { type: "tool", name: "lookup" })
        assert.isUndefined(Fixtures.recordOf(named.body).stream)
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
        const response = yield* anthropic.generate(Fixtures.simpleRequest("anthropic", "tool-model"))
        assert.strictEqual(response.finishReason, "tool_calls")
        assert.strictEqual(response.text, "Looking.")
        assert.deepStrictEqual(
          response.toolCalls.map((c) => ({ ...c })),
          [{ id: "toolu_1", name: "lookup", arguments: '{"q":"x"}' }]
        )
        const events = yield* Fixtures.collect(anthropic, Fixtures.simpleRequest("anthropic", "tool-model"))
        assert.isTrue(events._tag === "Right")
        if (events._tag !== "Right") return
        assert.strictEqual(Fixtures.textOf(events.right), "Looking.")
        const deltas = events.right.flatMap((e) => (e._tag === "ToolCallDelta" ? [e] : []))
        assert.deepInclude(deltas[0], { index: 0, id: "toolu_1", name: "lookup" })
        assert.strictEqual(deltas.map((d) => d.argumentsDelta).join(""), '{"q":"x"}')
        assert.deepInclude(events.right[events.right.length - 1], { _tag: "Finish", finishReason: "tool_calls" })
        const empty = yield* Fixtures.collect(anthropic, Fixtures.simpleRequest("anthropic", "tool-model"))
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
        const run = anthropic.generate(Fixtures.simpleRequest("anthropic", "stop-model"))
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
        const error = yield* Effect.flip(anthropic.generate(Fixtures.simpleRequest("anthropic", "reset-model")))
        const ms = error.retryAfter === undefined ? undefined : Duration.toMillis(error.retryAfter)
        assert.isTrue(ms !== undefined && ms > 15_000 && ms <= 20_000, `got ${ms}`)
      })
    )
  }
)
