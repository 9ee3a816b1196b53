/**
 * How the adapters reach a provider over HTTP: the seam every adapter's exchange goes through,
 * with two implementations that give the same answers, size limits and classified errors.
 *
 * - {@link layerUndici}: direct `undici` requests on a pooled dispatcher owned by the layer (closed
 *   with it). A JSON exchange is one asynchronous step; a tracer, when one is installed, gets a
 *   client span like the platform client's. The adapters' `layerConfig` use it by default.
 * - {@link layerHttpClient}: the `@effect/platform` `HttpClient` you provide (a proxy, your own
 *   tracing or middleware). The adapters' `make` and `layer` use the `HttpClient` in context when
 *   no `HttpTransport` is provided.
 *
 * @example
 * ```ts
 * import * as HttpTransport from "@modelgate/adapters/HttpTransport"
 * import * as OpenAi from "@modelgate/adapters/openai"
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 *
 * // Default: the direct undici transport, one pool for this adapter.
 * const Direct = OpenAi.layerConfig()
 * // Through your own HttpClient instead:
 * const ViaClient = OpenAi.layerConfig().pipe(
 *   Layer.provide(HttpTransport.layerHttpClient),
 *   Layer.provide(NodeHttpClient.layerUndici)
 * )
 * ```
 *
 * @since 0.2.0
 */
import { HttpClient as PlatformHttpClient } from "@effect/platform"
import { Context, Effect, Layer, Option } from "effect"
import type { Scope } from "effect"
import { client } from "./internal/http.js"
import type { Transport } from "./internal/transport.js"
import { fromHttpClient as platformTransport } from "./internal/transport.js"
import type { UndiciOptions } from "./internal/undici.js"
import { fromDispatcher, makeAgent } from "./internal/undici.js"

export type {
  /**
   * What an adapter needs of the wire: one JSON exchange (`exchange`) and a response opened for a
   * stream (`open`).
   *
   * @since 0.2.0
   * @category Models
   */
  Transport,
  /**
   * Pool settings of the direct transport.
   *
   * @since 0.2.0
   * @category Models
   */
  UndiciOptions
}

/**
 * The transport the adapters use, when one is provided.
 *
 * @since 0.2.0
 * @category Tags
 */
export class HttpTransport extends Context.Tag("@modelgate/adapters/HttpTransport")<HttpTransport, Transport>() {}

/**
 * The transport over an `@effect/platform` `HttpClient` (sent without `traceparent`; its span is
 * the client's own).
 *
 * @since 0.2.0
 * @category Constructors
 */
export const fromHttpClient = (http: PlatformHttpClient.HttpClient): Transport =>
  platformTransport(PlatformHttpClient.withTracerPropagation(http, false))

/**
 * The direct `undici` transport, its pool owned by the scope.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeUndici = (options: UndiciOptions = {}): Effect.Effect<Transport, never, Scope.Scope> =>
  Effect.map(makeAgent(options), fromDispatcher)

/**
 * Provides the direct `undici` transport; its pool is closed with the layer.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerUndici = (options: UndiciOptions = {}): Layer.Layer<HttpTransport> =>
  Layer.scoped(HttpTransport, makeUndici(options))

/**
 * Provides the transport over the `HttpClient` in context.
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerHttpClient: Layer.Layer<HttpTransport, never, PlatformHttpClient.HttpClient> = Layer.effect(
  HttpTransport,
  Effect.map(client, platformTransport)
)

/**
 * The transport an adapter's `make` uses: the provided {@link HttpTransport}, else the
 * `HttpClient` in context.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const orHttpClient: Effect.Effect<Transport, never, PlatformHttpClient.HttpClient> = Effect.flatMap(
  Effect.serviceOption(HttpTransport),
  Option.match({ onSome: Effect.succeed, onNone: () => Effect.map(client, platformTransport) })
)

/**
 * The transport an adapter's `layerConfig` uses: the provided {@link HttpTransport}, else a direct
 * `undici` one owned by the scope.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const orUndici: Effect.Effect<Transport, never, Scope.Scope> = Effect.flatMap(
  Effect.serviceOption(HttpTransport),
  Option.match({ onSome: Effect.succeed, onNone: () => makeUndici() })
)
