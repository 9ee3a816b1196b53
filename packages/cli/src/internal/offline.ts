/**
 * The gateway of a configuration file built offline: the real `ModelGateway.make` (so startup
 * validation is exactly the application's), with each provider's built-in adapter over an HTTP
 * client that never sends (their provider-option allowlists and embedding support are the real
 * ones), unlimited budgets, unbounded concurrency, no breakers and no call log. Nothing here calls
 * a provider: `check` only builds it, `explain` only asks its router.
 *
 * @internal
 */
import { HttpClient } from "@effect/platform"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import * as OpenAiCompatible from "@modelgate/adapters/openai-compatible"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway, ProviderAdapter } from "@modelgate/core"
import type { GatewayConfigError } from "@modelgate/core/Errors"
import { Effect, Layer, Logger, LogLevel, Stream } from "effect"
import type { AdapterKind, Loaded } from "../ConfigFile.js"

/** An HTTP client that refuses to send: reaching it is a bug of the CLI, not a provider call. */
const neverSends = HttpClient.make((request) =>
  Effect.dieMessage(`modelgate cli: no provider is ever called (refused ${request.method} ${request.url})`)
)

const unused = "http://provider.invalid"

/** A provider of the application's own: present for validation, with no allowlist, never called. */
const custom = Effect.succeed({
  generate: () => Effect.dieMessage("modelgate cli: no provider is ever called"),
  stream: () => Stream.dieMessage("modelgate cli: no provider is ever called"),
  embed: () => Effect.dieMessage("modelgate cli: no provider is ever called")
})

const adapterLayer = (
  id: string,
  kind: AdapterKind
): Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> => {
  switch (kind) {
    case "openai":
      return ProviderAdapter.layer(id, OpenAi.make({ id, baseUrl: unused }))
    case "anthropic":
      return ProviderAdapter.layer(id, Anthropic.make({ id, baseUrl: unused }))
    case "gemini":
      return ProviderAdapter.layer(id, Gemini.make({ id, baseUrl: unused }))
    case "openai-compatible":
      return ProviderAdapter.layer(id, OpenAiCompatible.make({ id, baseUrl: unused }))
    case "custom":
      return ProviderAdapter.layer(id, custom)
  }
}

/**
 * Builds the gateway of `loaded` offline (startup validation included) and runs `use` with it.
 * Startup warnings (unversioned workflows) are not logged: the CLI reports them itself.
 */
export const withGateway = <A, E>(
  loaded: Loaded,
  use: (gateway: ModelGateway.ModelGateway["Type"]) => Effect.Effect<A, E>
): Effect.Effect<A, E | GatewayConfigError> => {
  const adapters = [...loaded.adapters].map(([id, kind]) => adapterLayer(id, kind))
  const services = Layer.mergeAll(
    Budgets.layerOff,
    Concurrency.layerOff,
    Health.layerOff,
    CallRecorder.layerMemory,
    ...adapters
  ).pipe(Layer.provide(Layer.succeed(HttpClient.HttpClient, neverSends)))
  return Effect.flatMap(ModelGateway.ModelGateway, use).pipe(
    Effect.provide(Layer.provide(ModelGateway.layer(loaded.definition), services)),
    Logger.withMinimumLogLevel(LogLevel.None)
  )
}
