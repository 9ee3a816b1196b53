/**
 * Shared fixtures of the adapter-vs-mock integration tests.
 */
import { NodeHttpClient } from "@effect/platform-node"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ToolCall, ToolDefinition } from "@modelgate/core/ModelCommand"
import type { Message } from "@modelgate/core/ModelCommand"
import { Capabilities, ModelTarget, Pricing, ProviderId, TargetRef } from "@modelgate/core/ModelTarget"
import type { ProviderAdapter, ProviderRequest, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Chunk, Duration, Effect, Either, Layer, Redacted, Stream } from "effect"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"

/** The canary key: it must reach the auth header and nothing else. */
export const canary = "sk-CANARY-123"
export const apiKey = Redacted.make(canary)

/** One mock server per test file, and the undici client. */
export const TestLayer = Layer.merge(MockProviderServer.layer(), NodeHttpClient.layerUndici)

export const target = (provider: string, model: string): ModelTarget =>
  new ModelTarget({
    ref: TargetRef.make(`model://${provider}/${model}`),
    provider: ProviderId.make(provider),
    model,
    capabilities: new Capabilities({ contextWindow: 128_000, maxOutputTokens: 4096 }),
    regions: ["eu"],
    dataClasses: ["public"],
    pricing: new Pricing({ inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "test-1" })
  })

export const simpleRequest = (
  provider: string,
  model: string,
  overrides: Partial<ProviderRequest> = {}
): ProviderRequest => ({
  target: target(provider, model),
  messages: [{ _tag: "user", content: "Say hello." }],
  tools: [],
  toolChoice: undefined,
  output: undefined,
  maxOutputTokens: 256,
  timeout: Duration.seconds(10),
  ...overrides
})

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

export const representativeRequest = (provider: string, model: string): ProviderRequest =>
  simpleRequest(provider, model, {
    messages: conversation,
    tools: [lookupTool],
    toolChoice: "auto",
    output: { name: "answer", jsonSchema: answerSchema, strict: true },
    maxOutputTokens: 512
  })

/** Runs a stream to the end, giving its events or its error. */
export const collect = (adapter: Omit<ProviderAdapter, "provider">, request: ProviderRequest) =>
  Effect.either(Stream.runCollect(adapter.stream(request))).pipe(
    Effect.map(Either.map((chunk): ReadonlyArray<ProviderStreamEvent> => Chunk.toReadonlyArray(chunk)))
  )

/** Events of a stream that must fail, and the error. */
export const collectFailure = (adapter: Omit<ProviderAdapter, "provider">, request: ProviderRequest) =>
  Effect.gen(function* () {
    const events: Array<ProviderStreamEvent> = []
    const error: ProviderError = yield* adapter.stream(request).pipe(
      Stream.runForEach((event) => Effect.sync(() => events.push(event))),
      Effect.flip
    )
    return { events, error }
  })

/** The text of a stream's deltas. */
export const textOf = (events: ReadonlyArray<ProviderStreamEvent>) =>
  events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")

/** The last request the mock recorded for `model`. */
export const lastRequestFor = (model: string) =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer
    const requests = (yield* mock.requests).filter((r) => r.model === model)
    const last = requests[requests.length - 1]
    if (last === undefined) return yield* Effect.dieMessage(`no request recorded for ${model}`)
    return last
  })

/** Asserts nothing in `value` (error, body) holds the canary. */
export const leaks = (value: unknown): boolean =>
  JSON.stringify(value ?? null).includes(canary) || String(value).includes(canary)

/** A recorded JSON body as a record (no casts). */
export const recordOf = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value)) : {}
