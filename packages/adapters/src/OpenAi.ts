/**
 * OpenAI Chat Completions adapter (`POST {baseUrl}/chat/completions`, and `POST {baseUrl}/embeddings`
 * for `ModelGateway.embed`) over an `HttpTransport` (direct `undici` by default with `layerConfig`,
 * or any `@effect/platform` `HttpClient`), without the vendor SDK and without retries (the engine
 * owns them).
 *
 * @example
 * ```ts
 * import * as OpenAi from "@modelgate/adapters/openai"
 * import { Config } from "effect"
 *
 * // The direct undici transport, its pool closed with the layer.
 * const OpenAiLive = OpenAi.layerConfig({
 *   baseUrl: Config.succeed("https://api.openai.com/v1"),
 *   apiKey: Config.redacted("OPENAI_API_KEY")
 * })
 * ```
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { HttpClientRequest } from "@effect/platform"
import type { ConfigError, Effect, Layer } from "effect"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { Config, Redacted } from "effect"
import type { Limits } from "./internal/adapter.js"
import { makeAdapter } from "./internal/adapter.js"
import type { Adapter, Build } from "./internal/constructors.js"
import { echoRules, layerFromConfig, makeOver } from "./internal/constructors.js"
import { codec } from "./internal/chatCompletions.js"
import { openAiFamilies, openAiRequestId } from "./internal/echo.js"
import { makeEmbed } from "./internal/embed.js"
import { codec as embeddingsCodec } from "./internal/openAiEmbeddings.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options extends Limits {
  /** Provider id the adapter is registered under. Default `"openai"`. */
  readonly id?: string | undefined
  /** API root including the version, e.g. `https://api.openai.com/v1`. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer …`; stays redacted until the header is set. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Role of system messages. Default `"system"` (accepted by every chat model). */
  readonly systemRole?: "system" | "developer" | undefined
  /** `OpenAI-Organization` header. */
  readonly organization?: string | undefined
  /** `OpenAI-Project` header. */
  readonly project?: string | undefined
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
  const authorize = (request: HttpClientRequest.HttpClientRequest) => {
    let out = request
    if (options.apiKey !== undefined) out = HttpClientRequest.bearerToken(out, Redacted.value(options.apiKey))
    if (options.organization !== undefined)
      out = HttpClientRequest.setHeader(out, "openai-organization", options.organization)
    if (options.project !== undefined) out = HttpClientRequest.setHeader(out, "openai-project", options.project)
    return out
  }
  const root = options.baseUrl.replace(/\/+$/, "")
  const rules = echoRules(options, "openai", openAiRequestId, openAiFamilies)
  return {
    ...makeAdapter(
      http,
      codec({
        ...rules,
        url: `${root}/chat/completions`,
        maxTokensField: "max_completion_tokens",
        systemRole: options.systemRole ?? "system",
        streamUsage: true,
        authorize
      }),
      options
    ),
    // `POST {baseUrl}/embeddings`
    embed: makeEmbed(http, embeddingsCodec({ ...rules, url: `${root}/embeddings`, authorize }), options)
  }
}

/**
 * Provides the adapter under `ProviderAdapter.tag(options.id ?? "openai")`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> =>
  ProviderAdapter.layer(options.id ?? "openai", make(options))

/**
 * The default configuration, the official SDK's variables: `OPENAI_BASE_URL`, the API root with
 * its version as the SDK reads it (default `https://api.openai.com/v1`; `modelgate-mock` prints
 * its own), and the redacted `OPENAI_API_KEY`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const defaultConfig: Config.Config.Wrap<Options> = {
  baseUrl: Config.string("OPENAI_BASE_URL").pipe(Config.withDefault("https://api.openai.com/v1")),
  apiKey: Config.redacted("OPENAI_API_KEY")
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
): Layer.Layer<ProviderAdapter.ProviderAdapter, ConfigError.ConfigError> => layerFromConfig(config, "openai", build)
