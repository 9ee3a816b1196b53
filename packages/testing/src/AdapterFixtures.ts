/**
 * Fixtures for testing a provider adapter against the {@link MockProviderServer}: a target and a
 * request to send, a canary API key that must reach the auth header and nothing else, and helpers
 * that run an adapter's stream to its events or its error and read what the mock recorded. The
 * adapters' own conformance suite and the examples' SDK fidelity tests share them.
 *
 * @since 0.2.0
 */
import type { HttpClient } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import * as Budgets from "@modelgate/core/Budgets"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import type { GatewayConfigError } from "@modelgate/core/Errors"
import type { Definition } from "@modelgate/core/GatewayConfig"
import * as Health from "@modelgate/core/Health"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { Capabilities, ModelTarget, Pricing, ProviderId, TargetRef } from "@modelgate/core/ModelTarget"
import type {
  ProviderAdapter,
  ProviderError,
  ProviderRequest,
  ProviderStreamEvent
} from "@modelgate/core/ProviderAdapter"
import { Chunk, Duration, Effect, Either, Layer, Redacted, Stream } from "effect"
import { MockProviderServer, type Service as MockService } from "./MockProviderServer.js"

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

/**
 * A target's JSON configuration for gateway tests over the mock server: the provider and model
 * read from `ref` (`model://<provider>/<model>@<region>`), in `eu` for internal data, priced under
 * version `p1`, `maxAttempts` attempts (default 1) of at most 5 s each.
 *
 * @since 0.2.0
 */
export const targetJson = (
  ref: string,
  fields: {
    readonly pricing: { readonly inputPerMillion: number; readonly outputPerMillion: number }
    readonly capabilities: Readonly<Record<string, unknown>>
    readonly maxAttempts?: number
  }
) => {
  const [, provider = "", model = ""] = /^model:\/\/([^/]+)\/([^@]+)@/.exec(ref) ?? []
  return {
    ref,
    provider,
    model,
    regions: ["eu"],
    dataClasses: ["internal"],
    pricing: { ...fields.pricing, pricingVersion: "p1" },
    capabilities: fields.capabilities,
    limits: { maxAttempts: fields.maxAttempts ?? 1, perAttemptTimeout: 5000 }
  }
}

/**
 * A workflow's JSON configuration for gateway tests over the mock server: policy and prompt
 * version 1 (the prompt named as the workflow), a 10 s deadline, in `eu` for internal data;
 * `output` names its schema, `extra` adds or overrides fields.
 *
 * @since 0.2.0
 */
export const workflowJson = (
  name: string,
  route: ReadonlyArray<string>,
  output?: string,
  extra: Readonly<Record<string, unknown>> = {}
) => ({
  name,
  policyVersion: "1",
  prompt: { id: name, version: "1" },
  ...(output === undefined ? {} : { output: { schema: output, schemaVersion: "1" } }),
  route,
  timeout: 10_000,
  regions: ["eu"],
  dataClass: "internal",
  ...extra
})

/**
 * The gateway of `config` (JSON) over the adapters `adapters` builds against the mock server:
 * budgets and concurrency off, `health` (default off), calls recorded in memory; the mock server
 * and the undici client ({@link TestLayer}) provided and kept in the output.
 *
 * @since 0.2.0
 */
export const mockGateway = <A, E>(
  config: unknown,
  code: Omit<Definition, "config">,
  adapters: (mock: MockService) => Layer.Layer<A, E, HttpClient.HttpClient>,
  health: Layer.Layer<Health.Health, GatewayConfigError> = Health.layerOff
) =>
  Layer.unwrapEffect(
    Effect.map(MockProviderServer, (mock) =>
      ModelGateway.layerJson(config, code).pipe(
        Layer.provideMerge(
          Layer.mergeAll(adapters(mock), Budgets.layerOff, Concurrency.layerOff, health, CallRecorder.layerMemory)
        )
      )
    )
  ).pipe(Layer.provideMerge(TestLayer))
