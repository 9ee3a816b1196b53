/**
 * The OpenAI Chat Completions adapter against the mock server: the conformance suite, then the
 * exact request body, the finish-reason vocabulary and the `x-ratelimit-*` reset hints.
 */
import { assert } from "@effect/vitest"
import * as OpenAi from "@modelgate/adapters/openai"
import { Duration, Effect } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import * as Fixtures from "../adapters-fixtures.js"
import type { ClassificationRow } from "./AdapterConformance.js"
import * as Conformance from "./AdapterConformance.js"
import { row } from "./AdapterConformance.js"

const adapter = Conformance.adapterFor("openai", OpenAi.make)

const script = Conformance.scriptFor("openai")

const classification: ReadonlyArray<ClassificationRow> = [
  row("400 context_length_exceeded", 400, "context_length", "no", {
    error: { code: "context_length_exceeded" },
    code: "context_length_exceeded"
  }),
  row("400 invalid_prompt", 400, "refusal", "no", { error: { code: "invalid_prompt" }, code: "invalid_prompt" }),
  row("other 400", 400, "invalid_request", "no"),
  row("404", 404, "model_not_found", "no", { code: "model_not_found" }),
  row("422", 422, "invalid_request", "no"),
  row("401", 401, "authentication", "no", { code: "invalid_api_key" }),
  row("403", 403, "permission", "no", {
    error: { type: "invalid_request_error", code: "unsupported_country_region_territory" }
  }),
  row("408", 408, "timeout", "no"),
  row("409", 409, "server_error", "no"),
  row("429 rate_limit_exceeded", 429, "rate_limited", "no", { error: { type: "tokens", code: "rate_limit_exceeded" } }),
  row("429 slow_down", 429, "rate_limited", "no", { error: { type: "rate_limit_error", code: "slow_down" } }),
  row("429 Request too large", 429, "request_too_large", "no", {
    error: {
      type: "tokens",
      code: "rate_limit_exceeded",
      message: "Request too large for gpt-x on tokens per min (TPM): Limit 30000, Requested 50000."
    }
  }),
  row("429 insufficient_quota", 429, "quota_exhausted", "no", {
    error: { type: "insufficient_quota", code: "insufficient_quota" }
  }),
  row("429 credit_balance_exhausted", 429, "quota_exhausted", "no", {
    error: { type: "insufficient_quota", code: "credit_balance_exhausted" }
  }),
  row("429 organization_usage_limit_exceeded", 429, "quota_exhausted", "no", {
    error: { code: "organization_usage_limit_exceeded" }
  }),
  row("429 project_spend_limit_exceeded", 429, "spend_cap", "no", { error: { code: "project_spend_limit_exceeded" } }),
  row("429 organization_spend_limit_exceeded", 429, "spend_cap", "no", {
    error: { code: "organization_spend_limit_exceeded" }
  }),
  row("500", 500, "server_error", "maybe"),
  row("502 with an HTML body", 502, "server_error", "maybe", {
    body: "<html>Bad gateway</html>",
    contentType: "text/html"
  }),
  row("503 server_is_overloaded", 503, "overloaded", "no", {
    error: { type: "service_unavailable_error", code: "server_is_overloaded" }
  }),
  row("504", 504, "timeout", "maybe"),
  row("503 with x-should-retry: false", 503, "rejected", "no", { headers: { "x-should-retry": "false" } }),
  row("409 with x-should-retry: true", 409, "server_error", "no", { headers: { "x-should-retry": "true" } }),
  row("418 with x-should-retry: true", 418, "server_error", "no", {
    error: { type: "teapot" },
    headers: { "x-should-retry": "true" }
  })
]

Conformance.describeAdapter(
  {
    provider: "openai",
    make: OpenAi.make,
    auth: { header: "authorization", value: `Bearer ${Fixtures.canary}` },
    modelVersion: (model, fingerprint) => `${model}+${fingerprint}`,
    toolCallId: (wireId) => wireId,
    refusal: { behavior: MockProviderServer.success({ refusal: "I can't." }), finishReason: "refusal" },
    terminator: "[DONE]",
    framesBeforeText: 0,
    usageBeforeContent: false,
    classification,
    streamErrors: [
      {
        name: "server_error",
        error: { type: "server_error", code: "server_error", message: "boom" },
        kind: "server_error",
        providerCode: "server_error"
      },
      { name: "rate_limit_exceeded", error: { type: "tokens", code: "rate_limit_exceeded" }, kind: "rate_limited" }
    ],
    options: {
      request: {
        ...Conformance.sampling,
        stop: ["END", "\n\n"],
        reasoningEffort: "low",
        parallelToolCalls: false,
        presencePenalty: 0.5,
        frequencyPenalty: -0.5,
        userId: "user-7f3a"
      },
      providerOptions: {
        service_tier: "flex",
        logprobs: true,
        top_logprobs: 2,
        logit_bias: { "50256": -100 },
        verbosity: "low",
        top_k: 5,
        ...Conformance.hostileProviderOptions
      },
      wire: (model) => ({
        model,
        max_completion_tokens: 4096,
        temperature: 0.3,
        top_p: 0.9,
        seed: 42,
        stop: ["END", "\n\n"],
        reasoning_effort: "low",
        parallel_tool_calls: false,
        presence_penalty: 0.5,
        frequency_penalty: -0.5,
        safety_identifier: "user-7f3a",
        service_tier: "flex",
        logprobs: true,
        top_logprobs: 2,
        logit_bias: { "50256": -100 },
        verbosity: "low"
      }),
      neverSent: ["api_key", "baseURL", "headers", "max_tokens", "top_k", "user"],
      unmappable: ["reasoningBudget"]
    }
  },
  (it) => {
    it.effect("sends the exact Chat Completions body to /v1/chat/completions, without trace headers", () =>
      Effect.gen(function* () {
        const recorded = yield* Conformance.sentRepresentative("openai", adapter)
        assert.deepStrictEqual(recorded.body, {
          model: "body-model",
          messages: Fixtures.chatConversation,
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
          response_format: {
            type: "json_schema",
            json_schema: { name: "answer", schema: Fixtures.answerSchema, strict: true }
          }
        })
        assert.strictEqual(recorded.url, "/v1/chat/completions")
        assert.isUndefined(recorded.headers.traceparent)
      })
    )

    it.effect("streams with stream: true and stream_options.include_usage", () =>
      Effect.gen(function* () {
        const openai = yield* adapter
        yield* Fixtures.collect(
          openai,
          Fixtures.simpleRequest("openai", "stream-flags", { toolChoice: { tool: "lookup" }, tools: [] })
        )
        const recorded = yield* Fixtures.lastRequestFor("stream-flags")
        assert.strictEqual(recorded.headers.accept, "text/event-stream")
        assert.deepInclude(Fixtures.recordOf(recorded.body), {
          stream: true,
          stream_options: { include_usage: true },
          tool_choice: { type: "function", function: { name: "lookup" } },
          max_completion_tokens: 256
        })
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
        const filtered = yield* openai.generate(Fixtures.simpleRequest("openai", "finish-model"))
        assert.strictEqual(filtered.finishReason, "content_filter")
        assert.isTrue(filtered.refusal)
        const truncated = yield* openai.generate(Fixtures.simpleRequest("openai", "finish-model"))
        assert.strictEqual(truncated.finishReason, "length")
        assert.isFalse(truncated.refusal)
      })
    )

    it.effect("a retry hint from the exhausted limit's x-ratelimit-reset-* (a Go duration)", () =>
      Effect.gen(function* () {
        const openai = yield* adapter
        yield* script(
          "reset-model",
          MockProviderServer.failure(429, {
            headers: {
              "x-ratelimit-reset-requests": "1.5s",
              "x-ratelimit-remaining-requests": "10",
              "x-ratelimit-reset-tokens": "6m0s",
              "x-ratelimit-remaining-tokens": "0"
            }
          })
        )
        const error = yield* Effect.flip(openai.generate(Fixtures.simpleRequest("openai", "reset-model")))
        assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), 360_000)
      })
    )
  }
)
