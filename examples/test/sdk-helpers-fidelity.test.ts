/**
 * Fidelity of the mock server to the clients' high-level streaming helpers, which need every event
 * the real API sends, in its order: `openai`'s `chat.completions.stream()` and `responses.stream()`,
 * Anthropic's `messages.stream()`, `@google/genai`'s `generateContentStream`, and the Vercel AI
 * SDK's `@ai-sdk/openai` provider (chat and responses). Each helper's final answer must mean what
 * our adapter reads from the same scripted answer.
 */
import { createOpenAI } from "@ai-sdk/openai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { assert, layer } from "@effect/vitest"
import AnthropicSdk from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as EffectAi from "@modelgate/adapters/effect-ai"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import { ToolDefinition } from "@modelgate/core/ModelCommand"
import type { ProviderAdapter, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import type { Behavior, Provider } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { jsonSchema, streamText, tool } from "ai"
import { Chunk, Effect, Stream } from "effect"
import OpenAI from "openai"
import { apiKey, canary, simpleRequest, TestLayer, textOf } from "@modelgate/testing/AdapterFixtures"

const lookup = new ToolDefinition({
  name: "lookup",
  description: "Look up an order.",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"], additionalProperties: false }
})

const script = (provider: Provider, model: string, behavior: Behavior) =>
  Effect.flatMap(MockProviderServer, (mock) => mock.enqueue([behavior, behavior], { provider, model }))

const text = MockProviderServer.success({
  text: "Streaming through every helper.",
  chunkSize: 6,
  usage: { input: 30, output: 8 }
})
const toolCall = MockProviderServer.success({
  toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "order 42" } }],
  chunkSize: 5,
  usage: { input: 30, output: 8 }
})

/** Our adapter's stream of the same answer, folded: text and the tool calls' parsed arguments. */
const ours = (adapter: Omit<ProviderAdapter, "provider">, provider: string, model: string, tools = false) =>
  Effect.map(
    Stream.runCollect(adapter.stream(simpleRequest(provider, model, tools ? { tools: [lookup] } : {}))),
    (chunk) => {
      const events: ReadonlyArray<ProviderStreamEvent> = Chunk.toReadonlyArray(chunk)
      const args = new Map<number, string>()
      for (const e of events)
        if (e._tag === "ToolCallDelta") args.set(e.index, (args.get(e.index) ?? "") + e.argumentsDelta)
      return { text: textOf(events), arguments: [...args.values()].map((a) => JSON.parse(a)) }
    }
  )

const clients = Effect.gen(function* () {
  const mock = yield* MockProviderServer
  return {
    openai: new OpenAI({ apiKey: canary, baseURL: mock.baseUrl("openai"), maxRetries: 0 }),
    responses: new OpenAI({ apiKey: canary, baseURL: mock.baseUrl("openai-responses"), maxRetries: 0 }),
    anthropic: new AnthropicSdk({ apiKey: canary, baseURL: mock.url, maxRetries: 0 }),
    gemini: new GoogleGenAI({ apiKey: canary, httpOptions: { baseUrl: mock.url, apiVersion: "v1beta" } }),
    aiChat: createOpenAI({ apiKey: canary, baseURL: mock.baseUrl("openai") }),
    aiResponses: createOpenAI({ apiKey: canary, baseURL: mock.baseUrl("openai-responses") }),
    adapters: {
      openai: yield* OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey }),
      anthropic: yield* Anthropic.make({ baseUrl: mock.baseUrl("anthropic"), apiKey }),
      gemini: yield* Gemini.make({ baseUrl: mock.baseUrl("gemini"), apiKey }),
      responses: yield* EffectAi.makeProviderAdapter("openai-responses", {
        model: (model) => OpenAiLanguageModel.layer({ model })
      }).pipe(Effect.provide(OpenAiClient.layer({ apiUrl: mock.baseUrl("openai-responses"), apiKey })))
    }
  }
})

const lookupTool = {
  type: "function" as const,
  function: { name: "lookup", description: "Look up an order.", parameters: lookup.parameters }
}

layer(TestLayer, { excludeTestServices: true })("the clients' streaming helpers against the mock", (it) => {
  it.scoped("openai chat.completions.stream(): final text and tool-call arguments", () =>
    Effect.gen(function* () {
      const c = yield* clients
      yield* script("openai", "helper-chat-text", text)
      yield* script("openai", "helper-chat-tool", toolCall)
      const final = yield* Effect.promise(() =>
        c.openai.chat.completions
          .stream({ model: "helper-chat-text", messages: [{ role: "user", content: "hi" }] })
          .finalChatCompletion()
      )
      const calls = yield* Effect.promise(() =>
        c.openai.chat.completions
          .stream({ model: "helper-chat-tool", messages: [{ role: "user", content: "hi" }], tools: [lookupTool] })
          .finalChatCompletion()
      )
      assert.strictEqual(
        final.choices[0]?.message.content,
        (yield* ours(c.adapters.openai, "openai", "helper-chat-text")).text
      )
      assert.deepStrictEqual(
        calls.choices[0]?.message.tool_calls?.map((call) =>
          call.type === "function" ? JSON.parse(call.function.arguments) : undefined
        ),
        (yield* ours(c.adapters.openai, "openai", "helper-chat-tool", true)).arguments
      )
      assert.strictEqual(calls.choices[0]?.finish_reason, "tool_calls")
    })
  )

  it.scoped("openai responses.stream(): every text event in order, final output text and function call", () =>
    Effect.gen(function* () {
      const c = yield* clients
      yield* script("openai-responses", "helper-resp-text", text)
      yield* script("openai-responses", "helper-resp-tool", toolCall)
      const types: Array<string> = []
      const final = yield* Effect.promise(async () => {
        const stream = c.responses.responses.stream({ model: "helper-resp-text", input: "hi" })
        for await (const event of stream) types.push(event.type)
        return stream.finalResponse()
      })
      const calls = yield* Effect.promise(() =>
        c.responses.responses
          .stream({
            model: "helper-resp-tool",
            input: "hi",
            tools: [{ type: "function", name: "lookup", parameters: lookup.parameters, strict: true }]
          })
          .finalResponse()
      )
      assert.strictEqual(
        final.output_text,
        (yield* ours(c.adapters.responses, "openai-responses", "helper-resp-text")).text
      )
      for (const type of [
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done"
      ]) {
        assert.include(types, type)
      }
      assert.deepStrictEqual(
        calls.output.flatMap((item) => (item.type === "function_call" ? [JSON.parse(item.arguments)] : [])),
        (yield* ours(c.adapters.responses, "openai-responses", "helper-resp-tool", true)).arguments
      )
    })
  )

  it.scoped("anthropic messages.stream(): final message with a streamed tool_use", () =>
    Effect.gen(function* () {
      const c = yield* clients
      yield* script("anthropic", "helper-anthropic-tool", toolCall)
      const final = yield* Effect.promise(() =>
        c.anthropic.messages
          .stream({
            model: "helper-anthropic-tool",
            max_tokens: 50,
            messages: [{ role: "user", content: "hi" }],
            tools: [{ name: "lookup", input_schema: { type: "object", properties: { q: { type: "string" } } } }]
          })
          .finalMessage()
      )
      assert.deepStrictEqual(
        final.content.flatMap((block) => (block.type === "tool_use" ? [block.input] : [])),
        (yield* ours(c.adapters.anthropic, "anthropic", "helper-anthropic-tool", true)).arguments
      )
      assert.strictEqual(final.stop_reason, "tool_use")
    })
  )

  it.scoped("@google/genai generateContentStream: text chunks and a function call", () =>
    Effect.gen(function* () {
      const c = yield* clients
      yield* script("gemini", "helper-gemini-text", text)
      yield* script("gemini", "helper-gemini-tool", toolCall)
      const streamed = yield* Effect.promise(async () => {
        let out = ""
        for await (const chunk of await c.gemini.models.generateContentStream({
          model: "helper-gemini-text",
          contents: "hi"
        }))
          out += chunk.text ?? ""
        const args: Array<unknown> = []
        for await (const chunk of await c.gemini.models.generateContentStream({
          model: "helper-gemini-tool",
          contents: "hi"
        }))
          for (const call of chunk.functionCalls ?? []) args.push(call.args)
        return { text: out, args }
      })
      assert.strictEqual(streamed.text, (yield* ours(c.adapters.gemini, "gemini", "helper-gemini-text")).text)
      assert.deepStrictEqual(
        streamed.args,
        (yield* ours(c.adapters.gemini, "gemini", "helper-gemini-tool", true)).arguments
      )
    })
  )

  it.scoped("Vercel AI SDK @ai-sdk/openai (chat and responses): streamed text, tool call and usage", () =>
    Effect.gen(function* () {
      const c = yield* clients
      yield* script("openai", "helper-ai-chat", text)
      yield* script("openai-responses", "helper-ai-resp", text)
      yield* script("openai-responses", "helper-ai-resp-tool", toolCall)
      const run = (model: Parameters<typeof streamText>[0]["model"], withTool = false) =>
        Effect.promise(async () => {
          const result = streamText({
            model,
            prompt: "hi",
            ...(withTool
              ? {
                  tools: {
                    lookup: tool({ description: "Look up an order.", inputSchema: jsonSchema(lookup.parameters) })
                  }
                }
              : {})
          })
          let out = ""
          for await (const delta of result.textStream) out += delta
          return {
            text: out,
            toolCalls: await result.toolCalls,
            usage: await result.usage,
            finish: await result.finishReason
          }
        })
      const chat = yield* run(c.aiChat.chat("helper-ai-chat"))
      const responses = yield* run(c.aiResponses.responses("helper-ai-resp"))
      const tools = yield* run(c.aiResponses.responses("helper-ai-resp-tool"), true)
      assert.strictEqual(chat.text, (yield* ours(c.adapters.openai, "openai", "helper-ai-chat")).text)
      assert.strictEqual(chat.usage.inputTokens, 30)
      assert.strictEqual(chat.finish, "stop")
      assert.strictEqual(responses.text, (yield* ours(c.adapters.responses, "openai-responses", "helper-ai-resp")).text)
      assert.strictEqual(responses.usage.outputTokens, 8)
      assert.deepStrictEqual(
        tools.toolCalls.map((call) => call.input),
        (yield* ours(c.adapters.responses, "openai-responses", "helper-ai-resp-tool", true)).arguments
      )
      assert.strictEqual(tools.finish, "tool-calls")
    })
  )
})
