/**
 * Fixtures of the gateway end-to-end and SDK fidelity tests (real adapters against the mock
 * provider server). The adapters' own wire tests have theirs beside the conformance suite
 * (`packages/adapters/test/adapters-fixtures.ts`); these are the subset the tests here use.
 */
import { NodeHttpClient } from "@effect/platform-node"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import { Capabilities, ModelTarget, Pricing, ProviderId, TargetRef } from "@modelgate/core/ModelTarget"
import type { ProviderAdapter, ProviderRequest, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Chunk, Duration, Effect, Either, Layer, Redacted, Stream } from "effect"

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
