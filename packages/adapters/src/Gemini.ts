/**
 * Gemini Developer API adapter (`models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`, and `:batchEmbedContents` for `ModelGateway.embed`;
 * `x-goog-api-key`) over `@effect/platform`'s `HttpClient`,
 * without the vendor SDK and without retries.
 *
 * Structured output uses `responseMimeType: "application/json"` with `responseJsonSchema`
 * (standard JSON Schema); tools are declared with `parametersJsonSchema`.
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
import { geminiFamilies, opaqueRequestId } from "./internal/echo.js"
import { makeEmbed } from "./internal/embed.js"
import { codec } from "./internal/geminiGenerate.js"
import { codec as embeddingsCodec } from "./internal/geminiEmbeddings.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options extends Limits {
  /** Provider id the adapter is registered under. Default `"gemini"`. */
  readonly id?: string | undefined
  /** API root including the version, e.g. `https://generativelanguage.googleapis.com/v1beta`. */
  readonly baseUrl: string
  /** Sent as `x-goog-api-key` (never in the URL); stays redacted until the header is set. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
}

/**
 * The adapter's `generate`, `stream` and `embed`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make = (options: Options): Effect.Effect<Adapter, never, HttpClient.HttpClient> => makeOver(build)(options)

/** The adapter over `http`. */
const build: Build<Options> = (http, options) => {
  const settings = {
    ...echoRules(options, "gemini", opaqueRequestId, geminiFamilies),
    baseUrl: options.baseUrl,
    authorize: (request: HttpClientRequest.HttpClientRequest) =>
      options.apiKey === undefined
        ? request
        : HttpClientRequest.setHeader(request, "x-goog-api-key", Redacted.value(options.apiKey))
  }
  return {
    ...makeAdapter(http, codec(settings), options),
    // `POST {baseUrl}/models/{model}:batchEmbedContents`
    embed: makeEmbed(http, embeddingsCodec(settings), options)
  }
}

/**
 * Provides the adapter under `ProviderAdapter.tag(options.id ?? "gemini")`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> =>
  ProviderAdapter.layer(options.id ?? "gemini", make(options))

/**
 * The API root with its version, from the environment as `@google/genai` reads it:
 * `GOOGLE_GEMINI_BASE_URL` is the server root (`https://generativelanguage.googleapis.com`, a
 * proxy, `modelgate-mock`'s root), to which `/v1beta` is appended. Else `GEMINI_BASE_URL`, the
 * root with its version (how earlier modelgate releases read it), else Google's.
 *
 * @since 0.2.0
 * @category Layers
 */
export const baseUrlFromEnv: Config.Config<string> = Config.string("GOOGLE_GEMINI_BASE_URL").pipe(
  Config.map((root) => `${root.replace(/\/+$/, "")}/v1beta`),
  Config.orElse(() => Config.string("GEMINI_BASE_URL")),
  Config.withDefault("https://generativelanguage.googleapis.com/v1beta")
)

/**
 * The default configuration, the official SDK's variables: the base URL of {@link baseUrlFromEnv}
 * and the redacted `GOOGLE_API_KEY`, else `GEMINI_API_KEY` (the SDK's order when both are set).
 *
 * @since 0.1.0
 * @category Layers
 */
export const defaultConfig: Config.Config.Wrap<Options> = {
  baseUrl: baseUrlFromEnv,
  apiKey: Config.redacted("GOOGLE_API_KEY").pipe(Config.orElse(() => Config.redacted("GEMINI_API_KEY")))
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
): Layer.Layer<ProviderAdapter.ProviderAdapter, ConfigError.ConfigError> => layerFromConfig(config, "gemini", build)
