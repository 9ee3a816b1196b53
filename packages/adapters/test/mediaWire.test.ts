/**
 * Audio and file inputs on the wire, against the mock server: the exact user message each adapter
 * sends (OpenAI Chat Completions `input_audio` and `file`; Anthropic a `document` block with a
 * base64 source; Gemini `inlineData`), what an adapter refuses before sending (audio to Anthropic),
 * and audio input tokens read from OpenAI's and Gemini's usage.
 */
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { assert, layer } from "@effect/vitest"
import type { ContentPart } from "@modelgate/core/ModelCommand"
import type { ProviderAdapter, ProviderRequest } from "@modelgate/core/ProviderAdapter"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Effect, Either } from "effect"
import * as Anthropic from "../src/Anthropic.js"
import * as EffectAi from "../src/EffectAi.js"
import * as Gemini from "../src/Gemini.js"
import * as OpenAi from "../src/OpenAi.js"
import { apiKey, recordOf, simpleRequest, TestLayer } from "./adapters-fixtures.js"

const audio = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
const pdf = "JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoK"

const withParts = (provider: string, parts: ReadonlyArray<ContentPart>): ProviderRequest =>
  simpleRequest(provider, "media-model", { messages: [{ _tag: "user", content: parts }] })

const audioParts: ReadonlyArray<ContentPart> = [
  { _tag: "text", text: "Transcribe this." },
  { _tag: "audio", data: audio, format: "wav" }
]
const fileParts: ReadonlyArray<ContentPart> = [
  { _tag: "text", text: "Summarize the report." },
  { _tag: "file", data: pdf, mediaType: "application/pdf", filename: "report.pdf" }
]

/** The body the mock server received for the last request. */
const lastBody = Effect.flatMap(MockProviderServer, (mock) =>
  Effect.map(mock.requests, (requests) => recordOf(requests[requests.length - 1]?.body))
)

type Wire = "openai" | "anthropic" | "gemini" | "openai-responses"

const reset = (provider: Wire, ...behaviors: ReadonlyArray<MockProviderServer.Behavior>) =>
  Effect.flatMap(MockProviderServer, (mock) => Effect.zipRight(mock.reset, mock.enqueue(behaviors, { provider })))

/** Sends a request of `parts` through `adapter` (the mock answers "ok"); the body the mock received. */
const sentBody = (adapter: Omit<ProviderAdapter, "provider">, provider: Wire, parts: ReadonlyArray<ContentPart>) =>
  Effect.zipRight(
    Effect.zipRight(
      reset(provider, MockProviderServer.success({ text: "ok" })),
      adapter.generate(withParts(provider, parts))
    ),
    lastBody
  )

const baseUrl = (provider: Wire) => Effect.map(MockProviderServer, (mock) => mock.baseUrl(provider))

layer(TestLayer, { excludeTestServices: true })("audio and file inputs on the wire", (it) => {
  it.effect("openai chat: input_audio {data, format}, file {file_data, filename}", () =>
    Effect.gen(function* () {
      const adapter = yield* OpenAi.make({ baseUrl: yield* baseUrl("openai"), apiKey })
      assert.deepStrictEqual((yield* sentBody(adapter, "openai", audioParts)).messages, [
        {
          role: "user",
          content: [
            { type: "text", text: "Transcribe this." },
            { type: "input_audio", input_audio: { data: audio, format: "wav" } }
          ]
        }
      ])
      assert.deepStrictEqual((yield* sentBody(adapter, "openai", fileParts)).messages, [
        {
          role: "user",
          content: [
            { type: "text", text: "Summarize the report." },
            { type: "file", file: { file_data: `data:application/pdf;base64,${pdf}`, filename: "report.pdf" } }
          ]
        }
      ])
    })
  )

  it.effect("anthropic: a PDF as a document block with a base64 source; audio refused before sending", () =>
    Effect.gen(function* () {
      const adapter = yield* Anthropic.make({ baseUrl: yield* baseUrl("anthropic"), apiKey })
      assert.deepStrictEqual((yield* sentBody(adapter, "anthropic", fileParts)).messages, [
        {
          role: "user",
          content: [
            { type: "text", text: "Summarize the report." },
            { type: "document", source: { type: "base64", media_type: "application/pdf", data: pdf } }
          ]
        }
      ])
      const before = (yield* Effect.flatMap(MockProviderServer, (m) => m.requests)).length
      const refused = yield* Effect.either(adapter.generate(withParts("anthropic", audioParts)))
      assert.isTrue(Either.isLeft(refused))
      if (Either.isLeft(refused)) {
        assert.strictEqual(refused.left.kind, "invalid_request")
        assert.strictEqual(refused.left.processed, "no")
        assert.include(refused.left.detail, "cannot carry audio")
      }
      assert.strictEqual((yield* Effect.flatMap(MockProviderServer, (m) => m.requests)).length, before)
    })
  )

  it.effect("gemini: inlineData {mimeType, data} for audio and files", () =>
    Effect.gen(function* () {
      const adapter = yield* Gemini.make({ baseUrl: yield* baseUrl("gemini"), apiKey })
      assert.deepStrictEqual((yield* sentBody(adapter, "gemini", [...audioParts, ...fileParts])).contents, [
        {
          role: "user",
          parts: [
            { text: "Transcribe this." },
            { inlineData: { mimeType: "audio/wav", data: audio } },
            { text: "Summarize the report." },
            { inlineData: { mimeType: "application/pdf", data: pdf } }
          ]
        }
      ])
    })
  )

  it.effect("OpenAI Responses through @effect/ai: a PDF as input_file {filename, file_data}", () =>
    Effect.gen(function* () {
      const url = yield* baseUrl("openai-responses")
      const adapter = yield* EffectAi.makeProviderAdapter("openai-responses", {
        model: (name) => OpenAiLanguageModel.layer({ model: name }),
        apiKey
      }).pipe(Effect.provide(OpenAiClient.layer({ apiUrl: url, apiKey })))
      assert.deepStrictEqual((yield* sentBody(adapter, "openai-responses", fileParts)).input, [
        {
          role: "user",
          content: [
            { type: "input_text", text: "Summarize the report." },
            { type: "input_file", filename: "report.pdf", file_data: `data:application/pdf;base64,${pdf}` }
          ]
        }
      ])
    }).pipe(Effect.scoped)
  )

  it.effect("audio input tokens: OpenAI prompt_tokens_details.audio_tokens, Gemini promptTokensDetails AUDIO", () =>
    Effect.gen(function* () {
      const openai = yield* OpenAi.make({ baseUrl: yield* baseUrl("openai"), apiKey })
      yield* reset(
        "openai",
        MockProviderServer.raw(
          200,
          JSON.stringify({
            id: "chatcmpl-abc123",
            object: "chat.completion",
            created: 1,
            model: "media-model",
            choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
            usage: {
              prompt_tokens: 300,
              completion_tokens: 5,
              total_tokens: 305,
              prompt_tokens_details: { cached_tokens: 0, audio_tokens: 250 }
            }
          })
        )
      )
      const a = yield* openai.generate(withParts("openai", audioParts))
      assert.deepStrictEqual([a.usage?.inputTokens, a.usage?.audioInputTokens, a.usage?.outputTokens], [300, 250, 5])
      const gemini = yield* Gemini.make({ baseUrl: yield* baseUrl("gemini"), apiKey })
      yield* reset(
        "gemini",
        MockProviderServer.raw(
          200,
          JSON.stringify({
            candidates: [{ content: { role: "model", parts: [{ text: "ok" }] }, finishReason: "STOP", index: 0 }],
            usageMetadata: {
              promptTokenCount: 400,
              candidatesTokenCount: 3,
              totalTokenCount: 403,
              promptTokensDetails: [
                { modality: "TEXT", tokenCount: 80 },
                { modality: "AUDIO", tokenCount: 320 }
              ]
            },
            modelVersion: "media-model"
          })
        )
      )
      const g = yield* gemini.generate(withParts("gemini", audioParts))
      assert.deepStrictEqual([g.usage?.inputTokens, g.usage?.audioInputTokens, g.usage?.outputTokens], [400, 320, 3])
      // A text-only answer reports none: the field stays absent.
      yield* reset("openai", MockProviderServer.success({ text: "ok" }))
      const plain = yield* openai.generate(simpleRequest("openai", "media-model"))
      assert.isUndefined(plain.usage?.audioInputTokens)
    })
  )
})
