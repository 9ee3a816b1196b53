/**
 * Anthropic Messages adapter (`POST {baseUrl}/messages`, `x-api-key`, `anthropic-version`) over
 * `@effect/platform`'s `HttpClient`, without the vendor SDK and without retries.
 *
 * Structured output uses the native `output_config.format = {type: "json_schema", schema}`.
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { HttpClientRequest } from "@effect/platform"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { ConfigError, Effect, Layer } from "effect"
import { Config, Redacted } from "effect"
import type { Limits } from "./internal/adapter.js"
import { makeAdapter } from "./internal/adapter.js"
import type { Adapter, Build } from "./internal/constructors.js"
import { echoRules, layerFromConfig, makeOver } from "./internal/constructors.js"
import { codec } from "./internal/anthropicMessages.js"
import { anthropicFamilies, anthropicRequestId } from "./internal/echo.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options extends Limits {
  /** Provider id the adapter is registered under. Default `"anthropic"`. */
  readonly id?: string | undefined
  /** API root including the version, e.g. `https://api.anthropic.com/v1`. */
  readonly baseUrl: string
  /** Sent as `x-api-key`; stays redacted until the header is set. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** `anthropic-version` header. Default `2023-06-01`. */
  readonly version?: string | undefined
  /** `anthropic-beta` header, when a beta feature is wanted. */
  readonly beta?: ReadonlyArray<string> | undefined
}

/**
 * The adapter's `generate` and `stream`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Adapter, never, HttpClient.HttpClient> => makeOver(build)(options)

/** The adapter over `http`. */
const build: Build<Options> = (http, options) =>
  makeAdapter(
    http,
    codec({
      ...echoRules(options, "anthropic", anthropicRequestId, anthropicFamilies),
      url: `${options.baseUrl.replace(/\/+$/, "")}/messages`,
      authorize: (request) => {
        let out = HttpClientRequest.setHeader(request, "anthropic-version", options.version ?? "2023-06-01")
        if (options.apiKey !== undefined)
          out = HttpClientRequest.setHeader(out, "x-api-key", Redacted.value(options.apiKey))
        if (options.beta !== undefined && options.beta.length > 0) {
          out = HttpClientRequest.setHeader(out, "anthropic-beta", options.beta.join(","))
        }
        return out
      }
    }),
    options
  )

/**
 * Provides the adapter under `ProviderAdapter.tag(options.id ?? "anthropic")`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> =>
  ProviderAdapter.layer(options.id ?? "anthropic", make(options))

/**
 * The API root with its version from `ANTHROPIC_BASE_URL` read as the official SDK reads it: the
 * server root without `/v1` (`https://api.anthropic.com`, a proxy, `modelgate-mock`'s root), to
 * which `/v1` is appended. A value that already ends in `/v1` (how earlier modelgate releases read
 * the variable) is taken as is.
 *
 * @since 0.2.0
 * @category Layers
 */
export const baseUrlFromEnv: Config.Config<string> = Config.string("ANTHROPIC_BASE_URL").pipe(
  Config.map((url) => url.replace(/\/+$/, "")),
  Config.map((root) => (/\/v1$/.test(root) ? root : `${root}/v1`)),
  Config.withDefault("https://api.anthropic.com/v1")
)

/**
 * The default configuration, the official SDK's variables: `ANTHROPIC_BASE_URL` (see
 * {@link baseUrlFromEnv}; default `https://api.anthropic.com`) and the redacted `ANTHROPIC_API_KEY`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const defaultConfig: Config.Config.Wrap<Options> = {
  baseUrl: baseUrlFromEnv,
  apiKey: Config.redacted("ANTHROPIC_API_KEY")
}

/**
 * Like {@link layer}, with options read from `Config` (any field may be a `Config`), over the
 * direct `undici` transport (its pool closed with the layer) unless an `HttpTransport` is provided:
 * `Layer.provide(HttpTransport.layerHttpClient)` and an `HttpClient` send through that client.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options> = defaultConfig
): Layer.Layer<ProviderAdapter.ProviderAdapter, ConfigError.ConfigError> => layerFromConfig(config, "anthropic", build)
