/**
 * Fidelity of the mock server: the official SDKs (dev dependencies only) are pointed at it and must
 * parse its success responses, streams and errors into the same meaning as our adapters (status,
 * error type, request id, usage, refusal). If an SDK rejects the mock's output, the mock is wrong.
 */
import { assert, layer } from "@effect/vitest"
import AnthropicSdk from "@anthropic-ai/sdk"
import { ApiError as GeminiApiError, GoogleGenAI } from "@google/genai"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Behavior, Provider } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Duration, Effect } from "effect"
import OpenAI from "openai"
import {
  apiKey,
  canary,
  collect,
  collectFailure,
  lastRequestFor,
  simpleRequest,
  TestLayer,
  textOf
} from "@modelgate/testing/AdapterFixtures"

const script = (provider: Provider, model: string, behavior: Behavior) =>
  Effect.flatMap(MockProviderServer, (mock) => mock.enqueue([behavior, behavior], { provider, model }))

const sdk = Effect.map(MockProviderServer, (mock) => ({
  openai: new OpenAI({ apiKey: canary, baseURL: mock.baseUrl("openai"), maxRetries: 0 }),
  anthropic: new AnthropicSdk({ apiKey: canary, baseURL: mock.url, maxRetries: 0 }),
  gemini: new GoogleGenAI({ apiKey: canary, httpOptions: { baseUrl: mock.url, apiVersion: "v1beta" } })
}))

const adapters = Effect.map(MockProviderServer, (mock) =>
  Effect.all({
    openai: OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey }),
    anthropic: Anthropic.make({ baseUrl: mock.baseUrl("anthropic"), apiKey }),
    gemini: Gemini.make({ baseUrl: mock.baseUrl("gemini"), apiKey })
  })
).pipe(Effect.flatten)

/** Runs an SDK call, giving its thrown error (the call must fail). */
const sdkFailure = (run: () => Promise<unknown>) =>
  Effect.flip(Effect.tryPromise({ try: run, catch: (error) => error }))

const usage = { input: 120, output: 40, cached: 64, reasoning: 16 }

layer(TestLayer, { excludeTestServices: true })("official SDKs against the mock server", (it) => {
  it.effect("openai: success with tool call, usage details and request id", () =>
    Effect.gen(function* () {
      const { openai } = yield* sdk
      const ours = (yield* adapters).openai
      yield* script(
        "openai",
        "fid-openai-ok",
        MockProviderServer.success({
          text: "Checking.",
          toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "x" } }],
          usage,
          requestId: "req_fid_1",
          model: "fid-openai-ok-2026-05-01",
          systemFingerprint: "fp_1"
        })
      )
      const { data, request_id } = yield* Effect.promise(() =>
        openai.chat.completions
          .create({ model: "fid-openai-ok", messages: [{ role: "user", content: "hi" }], max_completion_tokens: 10 })
          .withResponse()
      )
      const response = yield* ours.generate(simpleRequest("openai", "fid-openai-ok"))
      const choice = data.choices[0]
      assert.strictEqual(request_id, "req_fid_1")
      assert.strictEqual(response.requestId, request_id)
      assert.strictEqual(choice?.message.content, response.text)
      assert.strictEqual(choice?.finish_reason, "tool_calls")
      assert.strictEqual(response.finishReason, "tool_calls")
      const call = choice?.message.tool_calls?.[0]
      assert.strictEqual(
        call?.type === "function" ? call.function.arguments : undefined,
        response.toolCalls[0]?.arguments
      )
      assert.strictEqual(call?.id, response.toolCalls[0]?.id)
      assert.strictEqual(data.usage?.prompt_tokens, response.usage?.inputTokens)
      assert.strictEqual(data.usage?.prompt_tokens_details?.cached_tokens, response.usage?.cachedInputTokens)
      assert.strictEqual(data.usage?.completion_tokens, response.usage?.outputTokens)
      assert.strictEqual(data.usage?.completion_tokens_details?.reasoning_tokens, response.usage?.reasoningTokens)
      assert.strictEqual(`${data.model}+${data.system_fingerprint}`, response.modelVersion)
      const recorded = yield* lastRequestFor("fid-openai-ok")
      assert.strictEqual(recorded.headers.authorization, `Bearer ${canary}`)
    })
  )

  it.effect("openai: refusal and structured output", () =>
    Effect.gen(function* () {
      const { openai } = yield* sdk
      const ours = (yield* adapters).openai
      yield* script("openai", "fid-openai-refusal", MockProviderServer.success({ refusal: "I can't help with that." }))
      const refused = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "fid-openai-refusal", messages: [{ role: "user", content: "hi" }] })
      )
      const response = yield* ours.generate(simpleRequest("openai", "fid-openai-refusal"))
      assert.strictEqual(refused.choices[0]?.message.refusal, "I can't help with that.")
      assert.isTrue(response.refusal)
      yield* script("openai", "fid-openai-json", MockProviderServer.success({ json: { a: "b" } }))
      const parsed = yield* Effect.promise(() =>
        openai.chat.completions.create({
          model: "fid-openai-json",
          messages: [{ role: "user", content: "hi" }],
          response_format: {
            type: "json_schema",
            json_schema: { name: "answer", schema: { type: "object" }, strict: true }
          }
        })
      )
      const structured = yield* ours.generate(simpleRequest("openai", "fid-openai-json"))
      assert.deepStrictEqual(JSON.parse(parsed.choices[0]?.message.content ?? ""), { a: "b" })
      assert.deepStrictEqual(JSON.parse(structured.text ?? ""), { a: "b" })
    })
  )

  it.effect("openai: stream text and final usage chunk", () =>
    Effect.gen(function* () {
      const { openai } = yield* sdk
      const ours = (yield* adapters).openai
      yield* script(
        "openai",
        "fid-openai-stream",
        MockProviderServer.success({ text: "one two three four", chunkSize: 4, usage })
      )
      const sdkResult = yield* Effect.promise(async () => {
        const stream = await openai.chat.completions.create({
          model: "fid-openai-stream",
          messages: [{ role: "user", content: "hi" }],
          stream: true,
          stream_options: { include_usage: true }
        })
        let text = ""
        let total: number | undefined
        let finish: string | null | undefined
        for await (const chunk of stream) {
          text += chunk.choices[0]?.delta.content ?? ""
          finish = chunk.choices[0]?.finish_reason ?? finish
          if (chunk.usage) total = chunk.usage.total_tokens
        }
        return { text, total, finish }
      })
      const events = yield* collect(ours, simpleRequest("openai", "fid-openai-stream"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      const finish = events.right[events.right.length - 1]
      assert.strictEqual(sdkResult.text, textOf(events.right))
      assert.strictEqual(sdkResult.finish, "stop")
      assert.isTrue(finish?._tag === "Finish" && finish.finishReason === "stop")
      assert.strictEqual(
        sdkResult.total,
        finish?._tag === "Finish" ? (finish.usage?.inputTokens ?? 0) + (finish.usage?.outputTokens ?? 0) : -1
      )
    })
  )

  it.effect("openai: 429 error with code, request id and retry-after", () =>
    Effect.gen(function* () {
      const { openai } = yield* sdk
      const ours = (yield* adapters).openai
      yield* script(
        "openai",
        "fid-openai-429",
        MockProviderServer.failure(429, {
          error: {
            type: "insufficient_quota",
            code: "insufficient_quota",
            message: "You exceeded your current quota."
          },
          requestId: "req_429",
          headers: { "retry-after": "3" }
        })
      )
      const thrown = yield* sdkFailure(() =>
        openai.chat.completions.create({ model: "fid-openai-429", messages: [{ role: "user", content: "hi" }] })
      )
      const error: ProviderError = yield* Effect.flip(ours.generate(simpleRequest("openai", "fid-openai-429")))
      assert.instanceOf(thrown, OpenAI.RateLimitError)
      if (!(thrown instanceof OpenAI.APIError)) return
      assert.strictEqual(thrown.status, error.httpStatus)
      assert.strictEqual(thrown.code, error.providerCode)
      assert.strictEqual(thrown.requestID, error.requestId)
      assert.strictEqual(thrown.headers?.get("retry-after"), "3")
      assert.strictEqual(error.kind, "quota_exhausted")
      assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), 3000)
    })
  )

  it.effect("openai: an error after 200 in the stream", () =>
    Effect.gen(function* () {
      const { openai } = yield* sdk
      const ours = (yield* adapters).openai
      yield* script(
        "openai",
        "fid-openai-midstream",
        MockProviderServer.success({
          text: "abcdefgh",
          chunkSize: 2,
          streamEnd: {
            _tag: "Error",
            afterChunks: 2,
            error: { type: "server_error", code: "server_error", message: "boom" }
          }
        })
      )
      const thrown = yield* sdkFailure(async () => {
        const stream = await openai.chat.completions.create({
          model: "fid-openai-midstream",
          messages: [],
          stream: true
        })
        for await (const _ of stream) {
          // drain
        }
      })
      const { error } = yield* collectFailure(ours, simpleRequest("openai", "fid-openai-midstream"))
      assert.instanceOf(thrown, OpenAI.APIError)
      if (!(thrown instanceof OpenAI.APIError)) return
      assert.strictEqual(thrown.code, error.providerCode)
      assert.strictEqual(error.kind, "server_error")
    })
  )

  it.effect("anthropic: success with tool use, cache usage and request id", () =>
    Effect.gen(function* () {
      const { anthropic } = yield* sdk
      const ours = (yield* adapters).anthropic
      yield* script(
        "anthropic",
        "fid-anthropic-ok",
        MockProviderServer.success({
          text: "Checking.",
          toolCalls: [{ id: "toolu_1", name: "lookup", arguments: { q: "x" } }],
          usage: { input: 1250, output: 30, cached: 1200 },
          requestId: "req_fid_a"
        })
      )
      const { data, request_id } = yield* Effect.promise(() =>
        anthropic.messages
          .create({ model: "fid-anthropic-ok", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
          .withResponse()
      )
      const response = yield* ours.generate(simpleRequest("anthropic", "fid-anthropic-ok"))
      assert.strictEqual(request_id, "req_fid_a")
      assert.strictEqual(response.requestId, request_id)
      assert.strictEqual(data.stop_reason, "tool_use")
      assert.strictEqual(response.finishReason, "tool_calls")
      const text = data.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("")
      assert.strictEqual(text, response.text)
      const tool = data.content.find((b) => b.type === "tool_use")
      assert.strictEqual(
        tool?.type === "tool_use" ? JSON.stringify(tool.input) : undefined,
        response.toolCalls[0]?.arguments
      )
      const inputTotal =
        data.usage.input_tokens +
        (data.usage.cache_creation_input_tokens ?? 0) +
        (data.usage.cache_read_input_tokens ?? 0)
      assert.strictEqual(inputTotal, response.usage?.inputTokens)
      assert.strictEqual(data.usage.cache_read_input_tokens, response.usage?.cachedInputTokens)
      assert.strictEqual(data.usage.output_tokens, response.usage?.outputTokens)
      assert.strictEqual(data.model, response.modelVersion)
      const recorded = yield* lastRequestFor("fid-anthropic-ok")
      assert.strictEqual(recorded.headers["x-api-key"], canary)
    })
  )

  it.effect("anthropic: refusal with stop_details, and a streamed answer", () =>
    Effect.gen(function* () {
      const { anthropic } = yield* sdk
      const ours = (yield* adapters).anthropic
      yield* script("anthropic", "fid-anthropic-refusal", MockProviderServer.success({ refusal: true }))
      const refused = yield* Effect.promise(() =>
        anthropic.messages.create({
          model: "fid-anthropic-refusal",
          max_tokens: 10,
          messages: [{ role: "user", content: "hi" }]
        })
      )
      const response = yield* ours.generate(simpleRequest("anthropic", "fid-anthropic-refusal"))
      assert.strictEqual(refused.stop_reason, "refusal")
      assert.strictEqual(refused.stop_details?.type, "refusal")
      assert.isTrue(response.refusal)
      yield* script(
        "anthropic",
        "fid-anthropic-stream",
        MockProviderServer.success({ text: "streaming words here", chunkSize: 5, usage: { input: 50, output: 9 } })
      )
      const final = yield* Effect.promise(() =>
        anthropic.messages
          .stream({ model: "fid-anthropic-stream", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
          .finalMessage()
      )
      const events = yield* collect(ours, simpleRequest("anthropic", "fid-anthropic-stream"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      const finish = events.right[events.right.length - 1]
      assert.strictEqual(
        final.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join(""),
        textOf(events.right)
      )
      assert.strictEqual(final.stop_reason, "end_turn")
      assert.strictEqual(final.usage.output_tokens, finish?._tag === "Finish" ? finish.usage?.outputTokens : -1)
      assert.strictEqual(final.usage.input_tokens, finish?._tag === "Finish" ? finish.usage?.inputTokens : -1)
    })
  )

  it.effect("anthropic: 429 spend cap and 529 overload errors", () =>
    Effect.gen(function* () {
      const { anthropic } = yield* sdk
      const ours = (yield* adapters).anthropic
      yield* script(
        "anthropic",
        "fid-anthropic-429",
        MockProviderServer.failure(429, {
          error: { message: "spend limit reached", details: { error_code: "enforced_spend_limit_reached" } },
          requestId: "req_a429"
        })
      )
      const thrown = yield* sdkFailure(() =>
        anthropic.messages.create({
          model: "fid-anthropic-429",
          max_tokens: 10,
          messages: [{ role: "user", content: "hi" }]
        })
      )
      const error = yield* Effect.flip(ours.generate(simpleRequest("anthropic", "fid-anthropic-429")))
      assert.instanceOf(thrown, AnthropicSdk.RateLimitError)
      if (!(thrown instanceof AnthropicSdk.APIError)) return
      assert.strictEqual(thrown.status, error.httpStatus)
      assert.strictEqual(thrown.errorCode, error.providerCode)
      assert.strictEqual(thrown.requestID, error.requestId)
      assert.strictEqual(error.kind, "spend_cap")
      yield* script(
        "anthropic",
        "fid-anthropic-529",
        MockProviderServer.failure(529, { headers: { "x-should-retry": "true" } })
      )
      const overloaded = yield* sdkFailure(() =>
        anthropic.messages.create({
          model: "fid-anthropic-529",
          max_tokens: 10,
          messages: [{ role: "user", content: "hi" }]
        })
      )
      const ourOverloaded = yield* Effect.flip(ours.generate(simpleRequest("anthropic", "fid-anthropic-529")))
      assert.instanceOf(overloaded, AnthropicSdk.APIError)
      if (!(overloaded instanceof AnthropicSdk.APIError)) return
      assert.strictEqual(overloaded.status, 529)
      assert.strictEqual(overloaded.type, ourOverloaded.providerCode)
      assert.strictEqual(ourOverloaded.kind, "overloaded")
    })
  )

  it.effect("anthropic: an error event after 200", () =>
    Effect.gen(function* () {
      const { anthropic } = yield* sdk
      const ours = (yield* adapters).anthropic
      yield* script(
        "anthropic",
        "fid-anthropic-midstream",
        MockProviderServer.success({
          text: "abcdefgh",
          chunkSize: 2,
          streamEnd: { _tag: "Error", afterChunks: 2, error: { type: "overloaded_error", message: "Overloaded" } }
        })
      )
      const thrown = yield* sdkFailure(() =>
        anthropic.messages
          .stream({ model: "fid-anthropic-midstream", max_tokens: 10, messages: [{ role: "user", content: "hi" }] })
          .finalMessage()
      )
      const { error } = yield* collectFailure(ours, simpleRequest("anthropic", "fid-anthropic-midstream"))
      assert.instanceOf(thrown, AnthropicSdk.APIError)
      if (!(thrown instanceof AnthropicSdk.APIError)) return
      assert.strictEqual(thrown.type, error.providerCode)
      assert.strictEqual(error.kind, "overloaded")
    })
  )

  it.effect("gemini: success with usage (thoughts, cache), model version and response id", () =>
    Effect.gen(function* () {
      const { gemini } = yield* sdk
      const ours = (yield* adapters).gemini
      yield* script(
        "gemini",
        "fid-gemini-ok",
        MockProviderServer.success({
          text: "Hello",
          usage: { input: 40, output: 112, cached: 10, reasoning: 100 },
          requestId: "resp-1"
        })
      )
      const sdkResponse = yield* Effect.promise(() =>
        gemini.models.generateContent({ model: "fid-gemini-ok", contents: "hi" })
      )
      const response = yield* ours.generate(simpleRequest("gemini", "fid-gemini-ok"))
      assert.strictEqual(sdkResponse.text, response.text)
      assert.strictEqual(sdkResponse.responseId, response.requestId)
      assert.strictEqual(sdkResponse.modelVersion, response.modelVersion)
      assert.strictEqual(sdkResponse.candidates?.[0]?.finishReason, "STOP")
      const meta = sdkResponse.usageMetadata
      assert.strictEqual(meta?.promptTokenCount, response.usage?.inputTokens)
      assert.strictEqual(meta?.cachedContentTokenCount, response.usage?.cachedInputTokens)
      assert.strictEqual(
        (meta?.candidatesTokenCount ?? 0) + (meta?.thoughtsTokenCount ?? 0),
        response.usage?.outputTokens
      )
      assert.strictEqual(meta?.thoughtsTokenCount, response.usage?.reasoningTokens)
      const recorded = yield* lastRequestFor("fid-gemini-ok")
      assert.strictEqual(recorded.headers["x-goog-api-key"], canary)
    })
  )

  it.effect("gemini: function call, blocked prompt and stream", () =>
    Effect.gen(function* () {
      const { gemini } = yield* sdk
      const ours = (yield* adapters).gemini
      yield* script(
        "gemini",
        "fid-gemini-tool",
        MockProviderServer.success({ text: "", toolCalls: [{ name: "lookup", arguments: { q: "x" } }] })
      )
      const withCall = yield* Effect.promise(() =>
        gemini.models.generateContent({ model: "fid-gemini-tool", contents: "hi" })
      )
      const response = yield* ours.generate(simpleRequest("gemini", "fid-gemini-tool"))
      assert.strictEqual(withCall.functionCalls?.[0]?.name, response.toolCalls[0]?.name)
      assert.strictEqual(JSON.stringify(withCall.functionCalls?.[0]?.args), response.toolCalls[0]?.arguments)
      yield* script("gemini", "fid-gemini-blocked", MockProviderServer.success({ blockReason: "SAFETY" }))
      const blocked = yield* Effect.promise(() =>
        gemini.models.generateContent({ model: "fid-gemini-blocked", contents: "hi" })
      )
      const ourBlocked = yield* ours.generate(simpleRequest("gemini", "fid-gemini-blocked"))
      assert.strictEqual(blocked.promptFeedback?.blockReason, "SAFETY")
      assert.isUndefined(blocked.candidates)
      assert.deepInclude(ourBlocked, { refusal: true, finishReason: "content_filter" })
      yield* script(
        "gemini",
        "fid-gemini-stream",
        MockProviderServer.success({ text: "streamed gemini text", chunkSize: 4 })
      )
      const sdkText = yield* Effect.promise(async () => {
        let text = ""
        for await (const chunk of await gemini.models.generateContentStream({
          model: "fid-gemini-stream",
          contents: "hi"
        })) {
          text += chunk.text ?? ""
        }
        return text
      })
      const events = yield* collect(ours, simpleRequest("gemini", "fid-gemini-stream"))
      assert.isTrue(events._tag === "Right")
      if (events._tag !== "Right") return
      assert.strictEqual(sdkText, textOf(events.right))
    })
  )

  it.effect("gemini: 429 with RetryInfo, and a bare error mid-stream", () =>
    Effect.gen(function* () {
      const { gemini } = yield* sdk
      const ours = (yield* adapters).gemini
      yield* script(
        "gemini",
        "fid-gemini-429",
        MockProviderServer.failure(429, {
          error: { details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "37s" }] }
        })
      )
      const thrown = yield* sdkFailure(() => gemini.models.generateContent({ model: "fid-gemini-429", contents: "hi" }))
      const error = yield* Effect.flip(ours.generate(simpleRequest("gemini", "fid-gemini-429")))
      assert.instanceOf(thrown, GeminiApiError)
      if (!(thrown instanceof GeminiApiError)) return
      assert.strictEqual(thrown.status, error.httpStatus)
      assert.strictEqual(error.kind, "rate_limited")
      assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), 37_000)
      yield* script(
        "gemini",
        "fid-gemini-midstream",
        MockProviderServer.success({
          text: "abcdefghijklmnop",
          chunkSize: 4,
          // js-genai recognizes a bare error only when it arrives as its own network read, which is
          // only certain for the first body chunk (later chunks may be coalesced by the client).
          streamEnd: { _tag: "Error", afterChunks: 0, code: 503, error: { message: "The model is overloaded." } }
        })
      )
      const midstream = yield* sdkFailure(async () => {
        for await (const _ of await gemini.models.generateContentStream({
          model: "fid-gemini-midstream",
          contents: "hi"
        })) {
          // drain
        }
      })
      const ourMidstream = yield* collectFailure(ours, simpleRequest("gemini", "fid-gemini-midstream"))
      assert.instanceOf(midstream, GeminiApiError)
      if (!(midstream instanceof GeminiApiError)) return
      assert.strictEqual(midstream.status, 503)
      assert.deepInclude(ourMidstream.error, { kind: "overloaded", processed: "maybe" })
    })
  )
})
