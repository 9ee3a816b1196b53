/**
 * Fixtures of the adapter-vs-mock integration tests: the shared ones from
 * `@modelgate/testing/AdapterFixtures`, plus a representative conversation and leak checks.
 */
import { assert } from "@effect/vitest"
import { ToolCall, ToolDefinition } from "@modelgate/core/ModelCommand"
import { Capabilities, ModelTarget, Pricing, ProviderId, TargetRef } from "@modelgate/core/ModelTarget"
import { Duration } from "effect"
import type { Message } from "@modelgate/core/ModelCommand"
import type { ProviderRequest } from "@modelgate/core/ProviderAdapter"
import type { Usage } from "@modelgate/core/ModelResult"
import type { HttpClient } from "@effect/platform"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import { canary, simpleRequest, TestLayer } from "@modelgate/testing/AdapterFixtures"
import { Layer } from "effect"

/** The shared adapter fixtures (canary key, mock server layer, requests, collectors), all of them. */
export * from "@modelgate/testing/AdapterFixtures"

/** A transport the wire tests run over, by name. */
export interface TransportCase {
  readonly name: string
  readonly layer: Layer.Layer<HttpTransport.HttpTransport, never, HttpClient.HttpClient>
}

/**
 * The two transports every wire test (conformance, hostile upstream, embeddings) runs over: the
 * `@effect/platform` `HttpClient` one and the direct `undici` one.
 */
export const transports: ReadonlyArray<TransportCase> = [
  { name: "HttpClient transport", layer: HttpTransport.layerHttpClient },
  { name: "undici transport", layer: HttpTransport.layerUndici() }
]

/** The mock server and the HTTP client, with `transport` for the adapters. */
export const testLayerWith = (transport: TransportCase) => Layer.provideMerge(transport.layer, TestLayer)

export const lookupTool = new ToolDefinition({
  name: "lookup",
  description: "Look up an order.",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"], additionalProperties: false },
  sideEffecting: false
})

export const answerSchema = {
  type: "object",
  properties: { a: { type: "string" } },
  required: ["a"],
  additionalProperties: false
}

/** A conversation with every message kind. */
export const conversation: ReadonlyArray<Message> = [
  { _tag: "system", content: "Be terse." },
  {
    _tag: "user",
    content: [
      { _tag: "text", text: "What is in this picture?" },
      { _tag: "image", url: "data:image/png;base64,iVBORw0KGgo=", mediaType: "image/png" }
    ]
  },
  {
    _tag: "assistant",
    content: "Let me look.",
    toolCalls: [new ToolCall({ id: "call_1", name: "lookup", arguments: '{"q":"x"}' })]
  },
  { _tag: "tool", toolCallId: "call_1", name: "lookup", content: '{"found":true}' }
]

/** {@link conversation} as Chat Completions `messages` (what the OpenAI-style adapters send). */
export const chatConversation = [
  { role: "system", content: "Be terse." },
  {
    role: "user",
    content: [
      { type: "text", text: "What is in this picture?" },
      { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }
    ]
  },
  {
    role: "assistant",
    content: "Let me look.",
    tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }]
  },
  { role: "tool", tool_call_id: "call_1", content: '{"found":true}' }
]

export const representativeRequest = (provider: string, model: string): ProviderRequest =>
  simpleRequest(provider, model, {
    messages: conversation,
    tools: [lookupTool],
    toolChoice: "auto",
    output: { name: "answer", jsonSchema: answerSchema, strict: true },
    maxOutputTokens: 512
  })

/** A one-word request to a small target `model://x/m` of provider `x`, with `overrides`. */
export const hiRequest = (model = "m", overrides: Partial<ProviderRequest> = {}): ProviderRequest => ({
  target: new ModelTarget({
    ref: TargetRef.make("model://x/m"),
    provider: ProviderId.make("x"),
    model,
    capabilities: new Capabilities({ contextWindow: 1000, maxOutputTokens: 100 }),
    regions: ["eu"],
    dataClasses: ["public"],
    pricing: new Pricing({ inputPerMillion: 1, outputPerMillion: 1, pricingVersion: "1" })
  }),
  messages: [{ _tag: "user", content: "hi" }],
  tools: [],
  toolChoice: undefined,
  output: undefined,
  maxOutputTokens: 64,
  timeout: Duration.seconds(1),
  ...overrides
})

/** Asserts the canary key reached only `header` (as `value`) of `recorded`: no other header, the URL nor the body. */
export const assertKeyOnlyIn = (
  recorded: { readonly headers: Readonly<Record<string, string>>; readonly url: string; readonly rawBody: string },
  header: string,
  value: string
) => {
  assert.strictEqual(recorded.headers[header], value)
  const others = Object.entries(recorded.headers).filter(([name]) => name !== header)
  assert.deepStrictEqual(
    others.filter(([, v]) => v.includes(canary)),
    []
  )
  assert.isFalse(recorded.url.includes(canary))
  assert.isFalse(recorded.rawBody.includes(canary))
}

/** Asserts nothing in `value` (error, body) holds the canary. */
export const leaks = (value: unknown): boolean =>
  JSON.stringify(value ?? null).includes(canary) || String(value).includes(canary)

/** A recorded JSON body as a record (no casts). */
export const recordOf = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value)) : {}

/** Asserts the four token counts of `usage` (a `Usage` instance, compared by its fields). */
export const assertUsage = (
  usage: Usage | undefined,
  expected: { inputTokens: number; cachedInputTokens: number; outputTokens: number; reasoningTokens: number }
): void =>
  assert.deepStrictEqual(
    usage === undefined
      ? undefined
      : {
          inputTokens: usage.inputTokens,
          cachedInputTokens: usage.cachedInputTokens,
          outputTokens: usage.outputTokens,
          reasoningTokens: usage.reasoningTokens
        },
    expected
  )
