/**
 * Fixtures for testing a provider adapter against the {@link MockProviderServer}: a target and a
 * request to send, a canary API key that must reach the auth header and nothing else, and helpers
 * that run an adapter's stream to its events or its error and read what the mock recorded. The
 * adapters' own conformance suite and the examples' SDK fidelity tests share them.
 *
 * @since 0.2.0
 */
import { NodeHttpClient } from "@effect/platform-node"
import { Capabilities, ModelTarget, Pricing, ProviderId, TargetRef } from "@modelgate/core/ModelTarget"
import type {
  ProviderAdapter,
  ProviderError,
  ProviderRequest,
  ProviderStreamEvent
} from "@modelgate/core/ProviderAdapter"
import { Chunk, Duration, Effect, Either, Layer, Redacted, Stream } from "effect"
import { MockProviderServer } from "./MockProviderServer.js"

/** The canary key: it must reach the auth header and nothing else. @since 0.2.0 */
export const canary = "sk-CANARY-123"
/** The canary as a redacted API key. @since 0.2.0 */
export const apiKey = Redacted.make(canary)

/** One mock server per test file, and the undici client. @since 0.2.0 */
export const TestLayer = Layer.merge(MockProviderServer.layer(), NodeHttpClient.layerUndici)

/** A target of `provider`/`model` with small, fixed capabilities and prices. @since 0.2.0 */
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

/** A one-message request to `provider`/`model`, with `overrides`. @since 0.2.0 */
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

/** Runs a stream to the end, giving its events or its error. @since 0.2.0 */
export const collect = (adapter: Omit<ProviderAdapter, "provider">, request: ProviderRequest) =>
  Effect.either(Stream.runCollect(adapter.stream(request))).pipe(
    Effect.map(Either.map((chunk): ReadonlyArray<ProviderStreamEvent> => Chunk.toReadonlyArray(chunk)))
  )

/** Events of a stream that must fail, and the error. @since 0.2.0 */
export const collectFailure = (adapter: Omit<ProviderAdapter, "provider">, request: ProviderRequest) =>
  Effect.gen(function* () {
    const events: Array<ProviderStreamEvent> = []
    const error: ProviderError = yield* adapter.stream(request).pipe(
      Stream.runForEach((event) => Effect.sync(() => events.push(event))),
      Effect.flip
    )
    return { events, error }
  })

/** The text of a stream's deltas. @since 0.2.0 */
export const textOf = (events: ReadonlyArray<ProviderStreamEvent>) =>
  events.flatMap((e) => (e._tag === "TextDelta" ? [e.text] : [])).join("")

/** The last request the mock recorded for `model`. @since 0.2.0 */
export const lastRequestFor = (model: string) =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer
    const requests = (yield* mock.requests).filter((r) => r.model === model)
    const last = requests[requests.length - 1]
    if (last === undefined) return yield* Effect.dieMessage(`no request recorded for ${model}`)
    return last
  })
