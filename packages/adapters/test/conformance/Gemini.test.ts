/**
 * The Gemini generateContent adapter against the mock server: the conformance suite, then the
 * exact request body, the streaming URL, finish reasons and blocked prompts, and retry hints from
 * the body's `RetryInfo`.
 */
import { assert } from "@effect/vitest"
import * as Gemini from "@modelgate/adapters/gemini"
import { Duration, Effect } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import {
  answerSchema,
  canary,
  collect,
  lastRequestFor,
  recordOf,
  representativeRequest,
  simpleRequest
} from "../adapters-fixtures.js"
import type { ClassificationRow } from "./AdapterConformance.js"
import { adapterFor, describeAdapter, scriptFor } from "./AdapterConformance.js"

const adapter = adapterFor("gemini", Gemini.make)

const script = scriptFor("gemini")

const quotaFailure = (quotaId: string) => ({
  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
  violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests", quotaId }]
})
const retryInfo = (retryDelay: string) => ({ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay })

const classification: ReadonlyArray<ClassificationRow> = [
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
    processed: "no",
    retryAfterMs: 3_600_000
  },
  { name: "402", status: 402, kind: "quota_exhausted", processed: "no" },
  { name: "500 INTERNAL", status: 500, kind: "server_error", processed: "maybe" },
  { name: "503 UNAVAILABLE", status: 503, kind: "overloaded", processed: "no" },
  { name: "504 DEADLINE_EXCEEDED", status: 504, kind: "timeout", processed: "maybe" }
]

describeAdapter(
  {
    provider: "gemini",
    make: Gemini.make,
    auth: { header: "x-goog-api-key", value: canary },
    modelVersion: (model) => model,
    // Gemini function calls carry no ids: the adapter numbers them.
    toolCallId: (_wireId, index) => `call_${index}`,
    // Gemini has no refusal message: a blocked prompt is its refusal.
    refusal: { behavior: MockProviderServer.success({ blockReason: "SAFETY" }), finishReason: "content_filter" },
    terminator: "a finishReason",
    framesBeforeText: 0,
    usageBeforeContent: false,
    classification,
    streamErrors: [
      {
        name: "bare JSON 503 UNAVAILABLE",
        error: { message: "The model is overloaded." },
        code: 503,
        kind: "overloaded",
        providerCode: "UNAVAILABLE"
      },
      {
        name: "bare JSON 429 with RetryInfo",
        error: { details: [quotaFailure("GenerateRequestsPerMinutePerProjectPerModel"), retryInfo("2s")] },
        code: 429,
        kind: "rate_limited",
        retryAfterMs: 2000
      }
    ],
    options: {
      request: {
        temperature: 0.3,
        topP: 0.9,
        seed: 42,
        stop: ["END"],
        reasoningBudget: 512,
        presencePenalty: 0.5,
        frequencyPenalty: -0.5
      },
      providerOptions: {
        topK: 40,
        responseLogprobs: true,
        logprobs: 3,
        safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_ONLY_HIGH" }],
        generationConfig: { maxOutputTokens: 1 },
        thinkingConfig: { thinkingBudget: 0 },
        model: "evil-model",
        api_key: "sk-evil",
        baseURL: "https://evil.example/v1",
        headers: { authorization: "Bearer evil" },
        stream: false,
        max_tokens: 1
      },
      wire: () => ({
        generationConfig: {
          maxOutputTokens: 4096,
          temperature: 0.3,
          topP: 0.9,
          seed: 42,
          stopSequences: ["END"],
          presencePenalty: 0.5,
          frequencyPenalty: -0.5,
          thinkingConfig: { thinkingBudget: 512 },
          topK: 40,
          responseLogprobs: true,
          logprobs: 3
        },
        safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_ONLY_HIGH" }]
      }),
      neverSent: ["model", "api_key", "baseURL", "headers", "stream", "max_tokens"],
      unmappable: ["parallelToolCalls", "userId"]
    }
  },
  (it) => {
    it.effect("sends the exact generateContent body to :generateContent, with no authorization", () =>
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
            {
              role: "model",
              parts: [{ text: "Let me look." }, { functionCall: { name: "lookup", args: { q: "x" } } }]
            },
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
        assert.isUndefined(recorded.headers.authorization)
      })
    )

    it.effect("streams from :streamGenerateContent?alt=sse, maps a named tool choice, no request id header", () =>
      Effect.gen(function* () {
        const gemini = yield* adapter
        const events = yield* collect(gemini, simpleRequest("gemini", "stream-url", { toolChoice: { tool: "lookup" } }))
        const recorded = yield* lastRequestFor("stream-url")
        assert.strictEqual(recorded.url, "/v1beta/models/stream-url:streamGenerateContent?alt=sse")
        assert.deepInclude(recordOf(recorded.body), {
          toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["lookup"] } }
        })
        // Gemini documents no request-id header (the mock sends none unless scripted).
        assert.isTrue(events._tag === "Right")
        if (events._tag !== "Right") return
        assert.deepStrictEqual(events.right[0], { _tag: "Started", requestId: undefined, httpStatus: 200 })
      })
    )

    it.effect("reads the response id as the request id when no header carries one", () =>
      Effect.gen(function* () {
        const gemini = yield* adapter
        yield* script("id-model", MockProviderServer.success({ text: "Hello" }))
        const response = yield* gemini.generate(simpleRequest("gemini", "id-model"))
        assert.match(response.requestId ?? "", /^resp-mock-\d+$/)
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
          MockProviderServer.success({ blockReason: "PROHIBITED_CONTENT" }),
          MockProviderServer.success({ blockReason: "PROHIBITED_CONTENT" }),
          MockProviderServer.success({ text: "x", finishReason: "LANGUAGE" }),
          MockProviderServer.success({ text: "", finishReason: "MALFORMED_FUNCTION_CALL" }),
          MockProviderServer.success({ text: "x", finishReason: "OTHER" }),
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
        assert.deepInclude(yield* run, { finishReason: "stop", refusal: false, text: "I can't help with that." })
      })
    )

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
  }
)
