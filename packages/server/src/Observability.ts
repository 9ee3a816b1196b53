/**
 * What the server exports about its calls besides the answers: OTLP/HTTP export of core's spans and
 * metrics, configured from the standard `OTEL_*` environment variables
 * (`@modelgate/adapters/opentelemetry`'s `layerConfig`), and — on the router — `GET /metrics` in
 * the Prometheus text format (`ServerConfig.MetricsSettings`). Both read what core already
 * records per call; neither adds work to a request.
 *
 * @since 0.1.0
 */
import { NodeHttpClient } from "@effect/platform-node"
import * as Otel from "@modelgate/adapters/opentelemetry"
import { type ConfigError, Layer } from "effect"
import { ServerConfigError } from "./ServerConfig.js"

/** The variables a configuration error is about (never their values). */
const variablesOf = (error: ConfigError.ConfigError): ReadonlyArray<string> => {
  switch (error._op) {
    case "And":
    case "Or":
      return [...variablesOf(error.left), ...variablesOf(error.right)]
    default:
      return [error.path.join("_")]
  }
}

/**
 * OTLP/HTTP export of spans and metrics when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the other
 * standard variables as `@modelgate/adapters/opentelemetry`'s `config` reads them), over undici;
 * `Layer.empty` otherwise (and with `OTEL_SDK_DISABLED=true`): no tracer installed, no exporter
 * fiber, nothing per request. The exporters send their last batch when the layer's scope closes.
 * An invalid variable fails startup with a `ServerConfigError` naming it.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerOtlp: Layer.Layer<never, ServerConfigError> = Otel.layerConfig().pipe(
  Layer.provide(NodeHttpClient.layerUndici),
  Layer.mapError(
    (error) =>
      new ServerConfigError({ problems: variablesOf(error).map((name) => `environment variable ${name} is invalid`) })
  )
)
