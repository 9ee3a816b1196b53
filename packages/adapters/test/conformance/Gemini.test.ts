/**
 * The Gemini generateContent adapter against the mock server: the conformance suite, then the
 * exact request body, the streaming URL, finish reasons and blocked prompts, and retry hints from
 * the body's `RetryInfo`.
 */
import { assert } from "@effect/vitest"
import * as Gemini from "@modelgate/adapters/gemini"
import { Duration, Effect } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import * as Fixtures from "../adapters-fixtures.js"
import type { ClassificationRow } from "./AdapterConformance.js"
import * as Conformance from "./AdapterConformance.js"
import { row } from "./AdapterConformance.js"

const adapter = Conformance.adapterFor("gemini", Gemini.make)

const script = Conformance.scriptFor("gemini")

const quotaFailure = (quotaId: string) => ({
  "@type": "type.googleapis.com/google.rpc.QuotaFailure",
  violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests", quotaId }]
})
const retryInfo = (retryDelay: string) => ({ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay })

const classification: ReadonlyArray<ClassificationRow> = [
  row("400 input token count exceeds", 400, "context_length", "no", {
    error: { message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)." }
  }),
  row("400 API_KEY_INVALID", 400, "authentication", "no", {
    error: {
      message: "API key not valid. Please pass a valid API key.",
      details: [
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }
      ]
    },
    code: "API_KEY_INVALID"
  }),
  row("other 400 INVALID_ARGUMENT", 400, "invalid_request", "no", { code: "INVALID_ARGUMENT" }),
  row("404", 404, "model_not_found", "no"),
  row("400 FAILED_PRECONDITION", 400, "permission", "no", {
    error: { status: "FAILED_PRECONDITION", message: "Gemini API free tier is not available in your country." }
  }),
  row("401", 401, "authentication", "no"),
  row("403", 403, "permission", "no"),
  row("429 PerMinute with RetryInfo", 429, "rate_limited", "no", {
    error: {
      message: "You exceeded your current quota. Please retry in 37.2s.",
      details: [quotaFailure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), retryInfo("37s")]
    },
    retryAfterMs: 37_000
  }),
  row("429 RetryInfo only", 429, "rate_limited", "no", { error: { details: [retryInfo("1.5s")] }, retryAfterMs: 1500 }),
  row("429 PerDay", 429, "quota_exhausted", "no", {
    error: { details: [quotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), retryInfo("3600s")] },
    retryAfterMs: 3_600_000
  }),
  row("402", 402, "quota_exhausted", "no"),
  row("500 INTERNAL", 500, "server_error", "maybe"),
  row("503 UNAVAILABLE", 503, "overloaded", "no"),
  row("504 DEADLINE_EXCEEDED", 504, "timeout", "maybe")
]

Conformance.describeAdapter(
  {
    provider: "gemini",
    make: Gemini.make,
    auth: { header: "x-goog-api-key", value: Fixtures.canary },
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
        ...Conformance.sampling,
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
        ...Conformance.hostileProviderOptions
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
        const recorded = yield* Conformance.sentRepresentative("gemini", adapter)
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
            responseJsonSchema: Fixtures.answerSchema
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
        const events = yield* Fixtures.collect(
          gemini,
          Fixtures.simpleRequest("gemini", "stream-url", { toolChoice: { tool: "lookup" } })
        )
        const recorded = yield* Fixtures.lastRequestFor("stream-url")
        assert.strictEqual(recorded.url, "/v1beta/models/stream-url:streamGenerateContent?alt=sse")
        assert.deepInclude(Fixtures.recordOf(recorded.body), {
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
        const response = yield* gemini.generate(Fixtures.simpleRequest("gemini", "id-model"))
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
        const run = gemini.generate(Fixtures.simpleRequest("gemini", "finish-model"))
        assert.strictEqual((yield* run).finishReason, "length")
        assert.deepInclude(yield* run, { finishReason: "content_filter", refusal: true })
        assert.deepInclude(yield* run, { finishReason: "content_filter", refusal: true })
        assert.deepInclude(yield* run, { finishReason: "content_filter", refusal: true, text: undefined })
        const streamedBlock = yield* Fixtures.collect(gemini, Fixtures.simpleRequest("gemini", "finish-model"))
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
        const error = yield* Effect.flip(gemini.generate(Fixtures.simpleRequest("gemini", "hint-model")))
        assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), 3000)
      })
    )
  }
)
