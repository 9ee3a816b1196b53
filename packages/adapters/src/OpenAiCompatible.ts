/**
 * Adapter for local and self-hosted servers speaking OpenAI Chat Completions: vLLM, Ollama
 * (`/v1/chat/completions`) and llama.cpp's `llama-server`.
 *
 * Quirks handled (providers.md §8):
 * - the output cap is sent as `max_tokens` by default, because Ollama silently ignores
 *   `max_completion_tokens` (vLLM and llama.cpp accept both); see {@link Options.maxTokensField};
 * - `tools` is never sent empty (a 400 on vLLM) and `stream_options` only with `stream: true`;
 * - structured output uses `response_format: {type: "json_schema", …}` (never the removed
 *   `guided_*` fields, which vLLM ≥ 0.12 silently ignores);
 * - errors with an integer `code` (vLLM, llama.cpp), the old flat `{"object":"error"}` form,
 *   llama.cpp's `exceed_context_size_error`, Ollama's 404 "try pulling it first" and 503 "server busy";
 * - errors in the stream as `data: {"error": …}` (also when `data: [DONE]` follows), and a final
 *   `data: [DONE]` without its trailing blank line;
 * - the request id is the `chatcmpl-…` body id when no header carries one;
 * - sampling options map as for OpenAI, except `userId`, sent as `user`; `providerOptions` may also
 *   set the servers' extra sampling fields `top_k`, `min_p` and `repetition_penalty` (Ollama
 *   silently ignores `parallel_tool_calls`).
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { HttpClientRequest } from "@effect/platform"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { Config, ConfigError, Effect, Layer } from "effect"
import { Redacted } from "effect"
import type { Limits } from "./internal/adapter.js"
import { makeAdapter } from "./internal/adapter.js"
import type { Adapter, Build } from "./internal/constructors.js"
import { echoRules, layerFromConfig, makeOver } from "./internal/constructors.js"
import { codec, compatibleProviderOptions } from "./internal/chatCompletions.js"
import { compatibleRequestId } from "./internal/echo.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Options extends Limits {
  /** Provider id the adapter is registered under. Default `"openai-compatible"`. */
  readonly id?: string | undefined
  /** API root including the version, e.g. `http://127.0.0.1:11434/v1`. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer …` when set (vLLM `--api-key`, llama.cpp `--api-key`). */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** Field of the output cap. Default `"max_tokens"` (the only one Ollama reads). */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens" | undefined
  /** Ask for a usage chunk at the end of streams. Default `true`. */
  readonly streamUsage?: boolean | undefined
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
      ...echoRules(options, "openai-compatible", compatibleRequestId, []),
      url: `${options.baseUrl.replace(/\/+$/, "")}/chat/completions`,
      maxTokensField: options.maxTokensField ?? "max_tokens",
      systemRole: "system",
      streamUsage: options.streamUsage ?? true,
      userField: "user",
      providerOptions: compatibleProviderOptions,
      authorize: (request) =>
        options.apiKey === undefined ? request : HttpClientRequest.bearerToken(request, Redacted.value(options.apiKey))
    }),
    options
  )

/**
 * Provides the adapter under `ProviderAdapter.tag(options.id ?? "openai-compatible")`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer = (options: Options): Layer.Layer<ProviderAdapter.ProviderAdapter, never, HttpClient.HttpClient> =>
  ProviderAdapter.layer(options.id ?? "openai-compatible", make(options))

/**
 * Like {@link layer}, with options read from `Config` (any field may be a `Config`), over the
 * direct `undici` transport (its pool closed with the layer) unless an `HttpTransport` is provided:
 * `Layer.provide(HttpTransport.layerHttpClient)` and an `HttpClient` send through that client.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Options>
): Layer.Layer<ProviderAdapter.ProviderAdapter, ConfigError.ConfigError> =>
  layerFromConfig(config, "openai-compatible", build)
