/**
 * The OpenAI-compatible adapter (vLLM, Ollama, llama.cpp, …) against the mock server: the
 * conformance suite, then what local servers do differently: `max_tokens`, no key, request ids
 * from the body, their error shapes, their stream quirks.
 */
import { assert } from "@effect/vitest"
import * as Compatible from "@modelgate/adapters/openai-compatible"
import { Effect } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import * as Fixtures from "../adapters-fixtures.js"
import type { ClassificationRow } from "./AdapterConformance.js"
import * as Conformance from "./AdapterConformance.js"
import { row } from "./AdapterConformance.js"

const adapter = (options: Partial<Compatible.Options> = {}) =>
  Effect.flatMap(MockProviderServer, (mock) =>
    Compatible.make({ baseUrl: mock.baseUrl("openai-compatible"), ...options })
  )

const script = Conformance.scriptFor("openai-compatible")

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-local", object: "chat.completion.chunk", model: "llama", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`

/** providers.md §9, vLLM / Ollama / llama.cpp rows. */
const classification: ReadonlyArray<ClassificationRow> = [
  row("vLLM 400 maximum context length", 400, "context_length", "no", {
    error: {
      type: "BadRequestError",
      code: 400,
      message:
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)."
    }
  }),
  row("vLLM other 400", 400, "invalid_request", "no", {
    error: { type: "BadRequestError", code: 400, message: "[{'type': 'missing', 'loc': ('body', 'messages')}]" }
  }),
  row("vLLM 404", 404, "model_not_found", "no", {
    error: { type: "NotFoundError", code: 404, message: "The model `x` does not exist." }
  }),
  row("vLLM 500", 500, "server_error", "maybe", { error: { type: "InternalServerError", code: 500 } }),
  row("vLLM old flat error", 400, "context_length", "no", {
    body: JSON.stringify({
      object: "error",
      message: "This model's maximum context length is 2048 tokens.",
      type: "BadRequestError",
      param: null,
      code: 400
    })
  }),
  row("Ollama 400", 400, "invalid_request", "no", {
    error: {
      type: "invalid_request_error",
      message: "json: cannot unmarshal string into Go struct field ChatRequest.messages"
    }
  }),
  row("Ollama 404 try pulling it first", 404, "model_not_found", "no", {
    error: { type: "not_found_error", message: 'model "x" not found, try pulling it first' }
  }),
  row("Ollama 503 server busy", 503, "overloaded", "no", {
    error: { type: "api_error", message: "server busy, please try again.  maximum pending requests exceeded" }
  }),
  row("Ollama 500", 500, "server_error", "maybe", { error: { type: "api_error" } }),
  row("llama.cpp 400 exceed_context_size_error", 400, "context_length", "no", {
    error: {
      type: "exceed_context_size_error",
      code: 400,
      message: "request exceeds the available context size",
      extra: { n_prompt_tokens: 9412, n_ctx: 8192 }
    }
  }),
  row("llama.cpp 400 invalid_request_error", 400, "invalid_request", "no", {
    error: { type: "invalid_request_error", code: 400 }
  }),
  row("llama.cpp 501 not_supported_error", 501, "invalid_request", "maybe", {
    error: { type: "not_supported_error", code: 501 }
  }),
  row("llama.cpp 401", 401, "authentication", "no", { error: { type: "authentication_error", code: 401 } }),
  row("llama.cpp 403", 403, "permission", "no", { error: { type: "permission_error", code: 403 } }),
  row("llama.cpp 503 loading", 503, "overloaded", "no", {
    error: { type: "unavailable_error", code: 503, message: "Loading model" }
  })
]

Conformance.describeAdapter(
  {
    provider: "openai-compatible",
    make: Compatible.make,
    auth: { header: "authorization", value: `Bearer ${Fixtures.canary}` },
    modelVersion: (model, fingerprint) => `${model}+${fingerprint}`,
    toolCallId: (wireId) => wireId,
    refusal: { behavior: MockProviderServer.success({ refusal: true }), finishReason: "refusal" },
    terminator: "[DONE]",
    framesBeforeText: 0,
    usageBeforeContent: false,
    classification,
    streamErrors: [
      {
        // vLLM sends `data: [DONE]` after the error frame: the stream still fails.
        name: "vLLM error frame followed by [DONE]",
        error: { type: "InternalServerError", code: 500, message: "boom" },
        kind: "server_error"
      }
    ],
    options: {
      request: {
        ...Conformance.sampling,
        stop: ["END"],
        reasoningEffort: "medium",
        parallelToolCalls: true,
        presencePenalty: 0.5,
        frequencyPenalty: -0.5,
        userId: "user-7f3a"
      },
      providerOptions: {
        top_k: 40,
        min_p: 0.05,
        repetition_penalty: 1.1,
        logprobs: true,
        service_tier: "flex",
        ...Conformance.hostileProviderOptions
      },
      wire: (model) => ({
        model,
        max_tokens: 4096,
        temperature: 0.3,
        top_p: 0.9,
        seed: 42,
        stop: ["END"],
        reasoning_effort: "medium",
        parallel_tool_calls: true,
        presence_penalty: 0.5,
        frequency_penalty: -0.5,
        user: "user-7f3a",
        top_k: 40,
        min_p: 0.05,
        repetition_penalty: 1.1,
        logprobs: true
      }),
      neverSent: ["api_key", "baseURL", "headers", "service_tier", "safety_identifier"],
      unmappable: ["reasoningBudget"]
    }
  },
  (it) => {
    it.effect("sends max_tokens (Ollama ignores max_completion_tokens) and no auth header without a key", () =>
      Effect.gen(function* () {
        const recorded = yield* Conformance.sentRepresentative("openai-compatible", adapter())
        const body = Fixtures.recordOf(recorded.body)
        assert.strictEqual(body.max_tokens, 512)
        assert.isUndefined(body.max_completion_tokens)
        assert.deepStrictEqual(body.messages, Fixtures.chatConversation)
        assert.deepStrictEqual(body.response_format, {
          type: "json_schema",
          json_schema: { name: "answer", schema: Fixtures.answerSchema, strict: true }
        })
        assert.isUndefined(body.guided_json)
        assert.strictEqual(recorded.url, "/compat/v1/chat/completions")
        assert.isUndefined(recorded.headers.authorization)
      })
    )

    it.effect("never sends empty tools nor stream_options without stream; honours maxTokensField", () =>
      Effect.gen(function* () {
        const local = yield* adapter({ apiKey: Fixtures.apiKey, maxTokensField: "max_completion_tokens" })
        yield* local.generate(Fixtures.simpleRequest("openai-compatible", "flags-model"))
        const plain = yield* Fixtures.lastRequestFor("flags-model")
        const body = Fixtures.recordOf(plain.body)
        assert.isUndefined(body.tools)
        assert.isUndefined(body.stream_options)
        assert.isUndefined(body.stream)
        assert.strictEqual(body.max_completion_tokens, 256)
        yield* Fixtures.collect(local, Fixtures.simpleRequest("openai-compatible", "flags-model"))
        const streamed = yield* Fixtures.lastRequestFor("flags-model")
        assert.deepInclude(Fixtures.recordOf(streamed.body), { stream: true, stream_options: { include_usage: true } })
      })
    )

    it.effect("takes the request id from the chatcmpl body id; usage without cache details", () =>
      Effect.gen(function* () {
        const local = yield* adapter()
        yield* script(
          "id-model",
          MockProviderServer.success({ text: "ok", usage: { input: 9, output: 3 }, systemFingerprint: "fp_ollama" })
        )
        const response = yield* local.generate(Fixtures.simpleRequest("openai-compatible", "id-model"))
        assert.match(response.requestId ?? "", /^chatcmpl-mock-\d+$/)
        assert.strictEqual(response.modelVersion, "id-model+fp_ollama")
        Fixtures.assertUsage(response.usage, {
          inputTokens: 9,
          cachedInputTokens: 0,
          outputTokens: 3,
          reasoningTokens: 0
        })
      })
    )

    it.effect("stream order of Ollama: separate finish chunk, usage chunk, [DONE]; no request id header", () =>
      Effect.gen(function* () {
        const local = yield* adapter()
        yield* script(
          "stream-model",
          MockProviderServer.success({ text: "local stream", chunkSize: 3, usage: { input: 5, output: 4 } })
        )
        const events = yield* Fixtures.collect(local, Fixtures.simpleRequest("openai-compatible", "stream-model"))
        assert.isTrue(events._tag === "Right")
        if (events._tag !== "Right") return
        assert.deepStrictEqual(events.right[0], { _tag: "Started", requestId: undefined, httpStatus: 200 })
        assert.strictEqual(Fixtures.textOf(events.right), "local stream")
        assert.deepInclude(events.right[events.right.length - 1], { _tag: "Finish", finishReason: "stop" })
      })
    )

    it.effect("llama.cpp: a final data: [DONE] without its blank line still finishes", () =>
      Effect.gen(function* () {
        const local = yield* adapter()
        const body = `${chunk({ role: "assistant", content: "" })}${chunk({ content: "hi" })}${chunk({}, "stop")}data: [DONE]\n`
        yield* script("llama-done", MockProviderServer.raw(200, body, { contentType: "text/event-stream" }))
        const events = yield* Fixtures.collect(local, Fixtures.simpleRequest("openai-compatible", "llama-done"))
        assert.isTrue(events._tag === "Right")
        if (events._tag !== "Right") return
        assert.strictEqual(Fixtures.textOf(events.right), "hi")
        assert.deepInclude(events.right[events.right.length - 1], {
          _tag: "Finish",
          finishReason: "stop",
          usage: undefined
        })
      })
    )

    it.effect("a server that ignores stream: true and answers JSON still yields events", () =>
      Effect.gen(function* () {
        const local = yield* adapter()
        const body = JSON.stringify({
          id: "chatcmpl-json",
          object: "chat.completion",
          model: "llama",
          choices: [{ index: 0, message: { role: "assistant", content: "whole" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 3, completion_tokens: 1 }
        })
        yield* script("json-stream", MockProviderServer.raw(200, body))
        const events = yield* Fixtures.collect(local, Fixtures.simpleRequest("openai-compatible", "json-stream"))
        assert.isTrue(events._tag === "Right")
        if (events._tag !== "Right") return
        assert.strictEqual(Fixtures.textOf(events.right), "whole")
        assert.deepInclude(events.right[events.right.length - 1], { _tag: "Finish", finishReason: "stop" })
      })
    )

    it.effect("200 with length or invalid JSON (e.g. ignored guided_*) surfaces as length / invalid_output", () =>
      Effect.gen(function* () {
        const local = yield* adapter()
        yield* script(
          "output-model",
          MockProviderServer.success({ text: '{"a":', finishReason: "length" }),
          MockProviderServer.success({ invalidJson: true })
        )
        assert.strictEqual(
          (yield* local.generate(Fixtures.simpleRequest("openai-compatible", "output-model"))).finishReason,
          "length"
        )
        assert.deepInclude(
          yield* Effect.flip(local.generate(Fixtures.simpleRequest("openai-compatible", "output-model"))),
          {
            kind: "invalid_output"
          }
        )
      })
    )
  }
)
