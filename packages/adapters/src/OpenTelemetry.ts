/**
 * OpenTelemetry export of modelgate's spans and metrics (see `@modelgate/core/Telemetry` for what
 * they hold: versions, route, attempts, timing, usage, cost, outcome — never prompt or output).
 *
 * - {@link layerConfig}: OTLP/HTTP export configured from the standard `OTEL_*` variables, and a
 *   no-op (`Layer.empty`) when no endpoint is configured. Built on `@effect/opentelemetry`'s Effect-
 *   native OTLP exporters: no OpenTelemetry SDK at run time, only an `HttpClient`.
 * - {@link layerInMemory}: the OpenTelemetry SDK with an `InMemorySpanExporter` and a manual metric
 *   reader, for tests that assert on what would be exported.
 * - {@link layerArrayAttributes}: list attributes (`modelgate.route.eligible`, …) as OpenTelemetry
 *   array attributes when spans go through the OpenTelemetry SDK (`@effect/opentelemetry/NodeSdk`).
 * - {@link hmacTenantHash} and {@link layerTenantConfig}: tenant ids on spans, hashed with a key.
 *
 * @example
 * ```ts
 * import * as Otel from "@modelgate/adapters/opentelemetry"
 * import { NodeHttpClient } from "@effect/platform-node"
 * import { Layer } from "effect"
 *
 * // OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 OTEL_SERVICE_NAME=support-bot
 * const TelemetryLive = Otel.layerConfig().pipe(Layer.provide(NodeHttpClient.layerUndici))
 * const MainLive = Layer.mergeAll(GatewayLive, TelemetryLive)
 * ```
 *
 * @since 0.1.0
 */
import type { HttpClient } from "@effect/platform"
import { Headers } from "@effect/platform"
import * as OtlpLogger from "@effect/opentelemetry/OtlpLogger"
import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as Telemetry from "@modelgate/core/Telemetry"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics"
import type { ConfigError } from "effect"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Tracer } from "effect"
import { createHmac } from "node:crypto"

// ---------------------------------------------------------------------------------------------
// OTLP export
// ---------------------------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category Models
 */
export interface OtlpOptions {
  /** Base URL of the collector's OTLP/HTTP receiver, e.g. `http://localhost:4318`. */
  readonly endpoint: string
  readonly serviceName: string
  readonly serviceVersion?: string | undefined
  /** Extra resource attributes (`deployment.environment`, …). */
  readonly resourceAttributes?: Readonly<Record<string, string>> | undefined
  /** Headers sent to the collector (often a credential); kept redacted until the layer is built. */
  readonly headers?: Redacted.Redacted<Readonly<Record<string, string>>> | undefined
  /** Default `http/protobuf` (the OTLP default); `http/json` also works. */
  readonly protocol?: "http/protobuf" | "http/json" | undefined
  /** Export spans. Default true. */
  readonly traces?: boolean | undefined
  /** Export metrics. Default true. */
  readonly metrics?: boolean | undefined
  /**
   * Export Effect log lines too. Default false: the gateway's own logs hold no content, but the
   * application's may, so shipping every log line is the application's decision.
   */
  readonly logs?: boolean | undefined
  /** How often batches are sent. Default 5 s for spans and logs, 10 s for metrics. */
  readonly exportInterval?: Duration.DurationInput | undefined
}

/**
 * OTLP/HTTP export of spans and metrics (and optionally logs) to `options.endpoint`
 * (`/v1/traces`, `/v1/metrics`, `/v1/logs`). Needs an `HttpClient`. The header names given in
 * `headers` are added to the redacted header names, so they never appear in a span or log.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerOtlp = (options: OtlpOptions): Layer.Layer<never, never, HttpClient.HttpClient> => {
  const base = options.endpoint.replace(/\/+$/, "")
  const resource = {
    serviceName: options.serviceName,
    serviceVersion: options.serviceVersion,
    attributes: { ...options.resourceAttributes }
  }
  const headers = options.headers === undefined ? undefined : Redacted.value(options.headers)
  const interval = options.exportInterval
  const layers: Array<Layer.Layer<never, never, HttpClient.HttpClient | OtlpSerialization.OtlpSerialization>> = []
  if (options.traces ?? true) {
    layers.push(
      OtlpTracer.layer({ url: `${base}/v1/traces`, resource, headers, exportInterval: interval ?? Duration.seconds(5) })
    )
  }
  if (options.metrics ?? true) {
    layers.push(
      OtlpMetrics.layer({
        url: `${base}/v1/metrics`,
        resource,
        headers,
        exportInterval: interval ?? Duration.seconds(10)
      })
    )
  }
  if (options.logs ?? false) {
    layers.push(
      OtlpLogger.layer({ url: `${base}/v1/logs`, resource, headers, exportInterval: interval ?? Duration.seconds(5) })
    )
  }
  const [first, ...rest] = layers
  if (first === undefined) return Layer.empty
  const secretNames = Object.keys(headers ?? {}).map((k) => k.toLowerCase())
  return Layer.mergeAll(first, ...rest).pipe(
    Layer.provide(options.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.locallyWith(Headers.currentRedactedNames, (names) => [...names, ...secretNames])
  )
}

/** `k1=v1,k2=v2` with URL-encoded values (the `OTEL_EXPORTER_OTLP_HEADERS` format). */
const parseKeyValues = (input: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const part of input.split(",")) {
    const i = part.indexOf("=")
    if (i <= 0) continue
    const key = part.slice(0, i).trim()
    const raw = part.slice(i + 1).trim()
    let value = raw
    try {
      value = decodeURIComponent(raw)
    } catch {
      // keep the raw value: a malformed escape is not worth failing startup over
    }
    if (key.length > 0) out[key] = value
  }
  return out
}

const isNone = (exporter: Option.Option<string>) => Option.exists(exporter, (e) => e.trim().toLowerCase() === "none")

/**
 * The OTLP options read from the standard variables, `None` when export is off:
 *
 * - `OTEL_EXPORTER_OTLP_ENDPOINT` (required to export; unset → `None`)
 * - `OTEL_SERVICE_NAME` (default `modelgate`), `OTEL_SERVICE_VERSION`
 * - `OTEL_RESOURCE_ATTRIBUTES` (`k=v,…`)
 * - `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,…`, read as a secret)
 * - `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` default, or `http/json`)
 * - `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` (`none` turns one off),
 *   `OTEL_LOGS_EXPORTER` (`otlp` turns log export on; off by default)
 * - `OTEL_SDK_DISABLED=true` turns everything off.
 *
 * @since 0.1.0
 * @category Config
 */
export const config: Config.Config<Option.Option<OtlpOptions>> = Config.all({
  endpoint: Config.option(Config.nonEmptyString("OTEL_EXPORTER_OTLP_ENDPOINT")),
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  serviceName: Config.nonEmptyString("OTEL_SERVICE_NAME").pipe(Config.withDefault("modelgate")),
  serviceVersion: Config.option(Config.nonEmptyString("OTEL_SERVICE_VERSION")),
  resourceAttributes: Config.option(Config.string("OTEL_RESOURCE_ATTRIBUTES")),
  headers: Config.option(Config.redacted("OTEL_EXPORTER_OTLP_HEADERS")),
  protocol: Config.literal(
    "http/protobuf",
    "http/json"
  )("OTEL_EXPORTER_OTLP_PROTOCOL").pipe(Config.withDefault("http/protobuf" as const)),
  traces: Config.option(Config.string("OTEL_TRACES_EXPORTER")),
  metrics: Config.option(Config.string("OTEL_METRICS_EXPORTER")),
  logs: Config.option(Config.string("OTEL_LOGS_EXPORTER"))
}).pipe(
  Config.map((c) =>
    c.disabled || Option.isNone(c.endpoint)
      ? Option.none()
      : Option.some<OtlpOptions>({
          endpoint: c.endpoint.value,
          serviceName: c.serviceName,
          serviceVersion: Option.getOrUndefined(c.serviceVersion),
          resourceAttributes: Option.match(c.resourceAttributes, { onNone: () => undefined, onSome: parseKeyValues }),
          headers: Option.match(c.headers, {
            onNone: () => undefined,
            onSome: (h) => Redacted.make(parseKeyValues(Redacted.value(h)))
          }),
          protocol: c.protocol,
          traces: !isNone(c.traces),
          metrics: !isNone(c.metrics),
          logs: Option.exists(c.logs, (l) => l.trim().toLowerCase() === "otlp")
        })
  )
)

/**
 * OTLP export configured from `Config` ({@link config} by default); `Layer.empty` when no endpoint
 * is configured, so the same program runs with or without a collector.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerConfig = (
  options: Config.Config<Option.Option<OtlpOptions>> = config
): Layer.Layer<never, ConfigError.ConfigError, HttpClient.HttpClient> =>
  Layer.unwrapEffect(
    Effect.map(
      options,
      Option.match({
        onNone: () => Layer.empty,
        onSome: layerOtlp
      })
    )
  )

// ---------------------------------------------------------------------------------------------
// The OpenTelemetry SDK bridge
// ---------------------------------------------------------------------------------------------

/** What an OpenTelemetry SDK span takes: a primitive or a list of one primitive type. */
type ListValue = Array<string> | Array<number> | Array<boolean>

/** The part of an OpenTelemetry SDK span (`@opentelemetry/api`'s `Span`) the bridge fix needs. */
interface AttributeSink {
  setAttribute(key: string, value: ListValue): unknown
}

const isAttributeSink = (u: unknown): u is AttributeSink =>
  typeof u === "object" && u !== null && "setAttribute" in u && typeof u.setAttribute === "function"

/** A list OpenTelemetry takes as an array attribute: every item a string, or every item a number, or a boolean. */
const asList = (value: unknown): ListValue | undefined => {
  if (!Array.isArray(value)) return undefined
  if (value.every((v): v is string => typeof v === "string")) return value
  if (value.every((v): v is number => typeof v === "number")) return value
  if (value.every((v): v is boolean => typeof v === "boolean")) return value
  return undefined
}

/**
 * `tracer` with two fixes for spans of the OpenTelemetry SDK bridge (`@effect/opentelemetry`'s
 * tracer, which renders every non-primitive attribute as inspected text): a list of strings,
 * numbers or booleans is set on the SDK span as an array attribute, and an `undefined` value is
 * not set at all (instead of the text "undefined"). Spans of any other tracer are left as they are.
 */
const withArrayAttributes = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = tracer.span(name, parent, context, links, startTime, kind, options)
      const sdkSpan = "span" in span ? span.span : undefined
      if (!isAttributeSink(sdkSpan)) return span
      const setText = span.attribute.bind(span)
      span.attribute = (key, value) => {
        if (value === undefined) return
        setText(key, value)
        const list = asList(value)
        if (list !== undefined) sdkSpan.setAttribute(key, list)
      }
      return span
    },
    context: (f, fiber) => tracer.context(f, fiber)
  })

/**
 * Installs the tracer in place, with list attributes as OpenTelemetry array attributes and no
 * `undefined` attributes, when it is the OpenTelemetry SDK bridge: provide the SDK layer to it,
 * `Otel.layerArrayAttributes.pipe(Layer.provideMerge(NodeSdk.layer(...)))`. {@link layerInMemory}
 * includes it; the OTLP exporters of {@link layerOtlp} need nothing (they keep arrays).
 *
 * @since 0.2.0
 * @category Layers
 */
export const layerArrayAttributes: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.map(Effect.tracer, (tracer) => Layer.setTracer(withArrayAttributes(tracer)))
)

// ---------------------------------------------------------------------------------------------
// Tenant ids
// ---------------------------------------------------------------------------------------------

/**
 * HMAC-SHA-256 of the tenant id with `key`, hex, first 32 characters: stable per tenant, and not
 * reversible by guessing tenant ids without the key.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const hmacTenantHash =
  (key: Redacted.Redacted<string>) =>
  (tenant: string): string =>
    createHmac("sha256", Redacted.value(key)).update(tenant, "utf8").digest("hex").slice(0, 32)

/**
 * Telemetry settings from `Config`: `MODELGATE_TELEMETRY_TENANT` = `omit` (default), `plain` or
 * `hashed`; `hashed` needs the secret `MODELGATE_TELEMETRY_TENANT_KEY`. Provide it to the gateway
 * layer (the settings are read when the gateway is built).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerTenantConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.gen(function* () {
    const mode = yield* Config.literal(
      "omit",
      "plain",
      "hashed"
    )("MODELGATE_TELEMETRY_TENANT").pipe(Config.withDefault("omit" as const))
    switch (mode) {
      case "omit":
        return Telemetry.layerSettings({ tenant: { _tag: "Omit" } })
      case "plain":
        return Telemetry.layerSettings({ tenant: Telemetry.tenantPlain })
      case "hashed": {
        const key = yield* Config.redacted("MODELGATE_TELEMETRY_TENANT_KEY")
        return Telemetry.layerSettings({ tenant: Telemetry.tenantHashed(hmacTenantHash(key)) })
      }
    }
  })
)

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

/**
 * What {@link layerInMemory} captured.
 *
 * @since 0.1.0
 * @category Models
 */
export interface InMemory {
  /** Spans finished so far, as the OpenTelemetry SDK would export them. */
  readonly spans: Effect.Effect<ReadonlyArray<ReadableSpan>>
  /** Collects the Effect metrics through the OpenTelemetry metric producer. */
  readonly metrics: Effect.Effect<ResourceMetrics>
  /** Forgets the spans captured so far. */
  readonly reset: Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class InMemoryTelemetry extends Context.Tag("@modelgate/adapters/opentelemetry/InMemoryTelemetry")<
  InMemoryTelemetry,
  InMemory
>() {}

/**
 * The OpenTelemetry SDK (`@effect/opentelemetry/NodeSdk`) with an `InMemorySpanExporter` behind a
 * `SimpleSpanProcessor` and a manual metric reader, for tests. Read spans while the layer is alive:
 * the SDK empties the exporter when the layer shuts down. List attributes arrive as array
 * attributes ({@link layerArrayAttributes}).
 *
 * Needs the optional peers `@opentelemetry/sdk-trace-base`, `@opentelemetry/sdk-trace-node`,
 * `@opentelemetry/sdk-metrics` and `@opentelemetry/resources` (loaded only when this layer is built).
 *
 * @example
 * ```ts
 * import * as Otel from "@modelgate/adapters/opentelemetry"
 * import { it } from "@effect/vitest"
 * import { Effect } from "effect"
 *
 * it.effect("no prompt in any span", () =>
 *   Effect.gen(function* () {
 *     yield* ModelGateway.generate(command)
 *     const spans = yield* Effect.flatMap(Otel.InMemoryTelemetry, (t) => t.spans)
 *     // assert on spans[i].name, spans[i].attributes, spans[i].events
 *   }).pipe(Effect.provide(GatewayTest), Effect.provide(Otel.layerInMemory()))
 * )
 * ```
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerInMemory = (options: { readonly serviceName?: string } = {}): Layer.Layer<InMemoryTelemetry> =>
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() =>
        Promise.all([
          import("@effect/opentelemetry/NodeSdk"),
          import("@opentelemetry/sdk-trace-base"),
          import("@opentelemetry/sdk-metrics")
        ])
      ),
      ([NodeSdk, TraceBase, SdkMetrics]) => {
        const exporter = new TraceBase.InMemorySpanExporter()
        class ManualReader extends SdkMetrics.MetricReader {
          protected override onForceFlush(): Promise<void> {
            return Promise.resolve()
          }
          protected override onShutdown(): Promise<void> {
            return Promise.resolve()
          }
        }
        const reader = new ManualReader()
        const service: InMemory = {
          spans: Effect.sync(() => exporter.getFinishedSpans()),
          metrics: Effect.map(
            Effect.promise(() => reader.collect()),
            (result) => result.resourceMetrics
          ),
          reset: Effect.sync(() => exporter.reset())
        }
        const sdk = NodeSdk.layer(() => ({
          resource: { serviceName: options.serviceName ?? "modelgate-test" },
          spanProcessor: new TraceBase.SimpleSpanProcessor(exporter),
          metricReader: reader
        }))
        return Layer.merge(
          layerArrayAttributes.pipe(Layer.provideMerge(sdk)),
          Layer.succeed(InMemoryTelemetry, service)
        )
      }
    )
  )
