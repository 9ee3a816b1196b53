/**
 * The OpenAI Chat Completions adapter against the mock server: the conformance suite, then the
 * exact request body, the finish-reason vocabulary and the `x-ratelimit-*` reset hints.
 */
import { assert } from "@effect/vitest"
import * as OpenAi from "@modelgate/adapters/openai"
import { Duration, Effect } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import {
  answerSchema,
  canary,
  chatConversation,
  collect,
  lastRequestFor,
  recordOf,
  representativeRequest,
  simpleRequest
} from "../adapters-fixtures.js"
import type { ClassificationRow } from "./AdapterConformance.js"
import { adapterFor, describeAdapter, scriptFor } from "./AdapterConformance.js"

const adapter = adapterFor("openai", OpenAi.make)

const script = scriptFor("openai")

const classification: ReadonlyArray<ClassificationRow> = [
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
  {
    name: "502 with an HTML body",
    status: 502,
    body: "<html>Bad gateway</html>",
    contentType: "text/html",
    kind: "server_error",
    processed: "maybe"
  },
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

describeAdapter(
  {
    provider: "openai",
    make: OpenAi.make,
    auth: { header: "authorization", value: `Bearer ${canary}` },
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
        temperature: 0.3,
        topP: 0.9,
        seed: 42,
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
        model: "evil-model",
        api_key: "sk-evil",
        baseURL: "https://evil.example/v1",
        headers: { authorization: "Bearer evil" },
        stream: false,
        max_tokens: 1
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
        const openai = yield* adapter
        yield* script("body-model", MockProviderServer.success({ json: { a: "b" } }))
        yield* openai.generate(representativeRequest("openai", "body-model"))
        const recorded = yield* lastRequestFor("body-model")
        assert.deepStrictEqual(recorded.body, {
          model: "body-model",
          messages: chatConversation,
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
        const error = yield* Effect.flip(openai.generate(simpleRequest("openai", "reset-model")))
        assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), 360_000)
      })
    )
  }
)
