/**
 * The constructors every HTTP adapter module shares around its `build(http, options)`: `make` over
 * the ambient `HttpClient`, `layerConfig` over `Config` and the undici transport, and the echo rules
 * each codec is handed.
 *
 * @internal
 */
import type { HttpClient } from "@effect/platform"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { ConfigError, Redacted } from "effect"
import { Config, Effect, Layer } from "effect"
import * as HttpTransport from "../HttpTransport.js"
import type { EchoRules } from "./echo.js"

/** An adapter before it is registered under its provider id. @internal */
export type Adapter = Omit<ProviderAdapter.ProviderAdapter, "provider">

/** Builds the adapter over one transport. @internal */
export type Build<O> = (http: HttpTransport.Transport, options: O) => Adapter

/** `make`: the adapter over the `HttpTransport` if one is provided, else the ambient `HttpClient`. @internal */
export const makeOver =
  <O>(build: Build<O>) =>
  (options: O): Effect.Effect<Adapter, never, HttpClient.HttpClient> =>
    Effect.map(HttpTransport.orHttpClient, (http) => build(http, options))

/**
 * `layerConfig`: options read from `Config`, the adapter over the `HttpTransport` if one is
 * provided, else the direct undici transport, registered under `options.id ?? defaultId`. @internal
 */
export const layerFromConfig = <O extends { readonly id?: string | undefined }>(
  config: Config.Config.Wrap<O>,
  defaultId: string,
  build: Build<O>
): Layer.Layer<ProviderAdapter.ProviderAdapter, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.map(Config.unwrap(config), (options) =>
      ProviderAdapter.layer(
        options.id ?? defaultId,
        Effect.map(HttpTransport.orUndici, (http) => build(http, options))
      )
    )
  )

/** The provider id a codec records under and the echo rules it checks against, from one adapter's options. @internal */
export const echoRules = (
  options: { readonly id?: string | undefined; readonly apiKey?: Redacted.Redacted<string> | undefined },
  defaultId: string,
  requestId: RegExp,
  families: ReadonlyArray<string>
): { readonly provider: string; readonly echo: EchoRules } => {
  const provider = options.id ?? defaultId
  return { provider, echo: { provider, requestId, families, secrets: [options.apiKey] } }
}
