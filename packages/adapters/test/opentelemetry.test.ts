import { assert, describe, it } from "@effect/vitest"
import { HttpClient, type HttpClientRequest, HttpClientResponse } from "@effect/platform"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as Gemini from "@modelgate/adapters/gemini"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import * as OpenAi from "@modelgate/adapters/openai"
import * as Otel from "@modelgate/adapters/opentelemetry"
import * as Budgets from "@modelgate/core/Budgets"
import * as CallRecorder from "@modelgate/core/CallRecorder"
import * as Concurrency from "@modelgate/core/Concurrency"
import * as Health from "@modelgate/core/Health"
import * as ModelCommand from "@modelgate/core/ModelCommand"
import * as ModelGateway from "@modelgate/core/ModelGateway"
import { CallRecord } from "@modelgate/core/ModelResult"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import type { ResourceMetrics } from "@opentelemetry/sdk-metrics"
import { Cause, ConfigProvider, Context, Effect, Exit, Layer, Logger, LogLevel, Option, Schema, Stream } from "effect"
import { createHmac } from "node:crypto"
import { inspect } from "node:util"

const KEY = "sk-canarykey-9d8e7f6a"
const CONTENT = "zqxcanary"

// ---------------------------------------------------------------------------------------------
// A fake provider endpoint: an HttpClient that records requests and answers in each wire format.
// ---------------------------------------------------------------------------------------------

type Mode = "ok" | "unauthorized" | "bad_request"

const bodyText = (request: HttpClientRequest.HttpClientRequest): string => {
  const body = request.body
  switch (body._tag) {
    case "Uint8Array":
      return new TextDecoder().decode(body.body)
    case "Raw":
      return String(body.body)
    default:
      return ""
  }
}

const providerAnswer = (
  url: string,
  mode: Mode
): { status: number; body: unknown; headers: Record<string, string> } => {
  const headers = { "content-type": "application/json", "x-request-id": "req_fake_1", "request-id": "req_fake_1" }
  const unauthorized = mode === "unauthorized"
  return { status: mode === "ok" ? 200 : unauthorized ? 401 : 400, headers, body: answerBody(url, mode) }
}

/** The body a provider answers `url` with: its error body in an error mode, a success otherwise. */
const answerBody = (url: string, mode: Mode): unknown => {
  const unauthorized = mode === "unauthorized"
  // Hostile providers echo what they got: the key in an auth error, the prompt in a 400.
  const message = unauthorized
    ? `Incorrect API key provided: ${KEY}`
    : `Invalid value at messages[0]: '${CONTENT}-prompt'`
  if (url.includes("/chat/completions")) {
    return mode !== "ok"
      ? { error: { message, type: "invalid_request_error", code: unauthorized ? "invalid_api_key" : null } }
      : {
          id: "chatcmpl-1",
          model: "gpt-x-2026-01-01",
          choices: [{ finish_reason: "stop", message: { content: `${CONTENT}-output` } }],
          usage: { prompt_tokens: 11, completion_tokens: 5 }
        }
  }
  if (url.includes("/messages")) {
    return mode !== "ok"
      ? { type: "error", error: { type: unauthorized ? "authentication_error" : "invalid_request_error", message } }
      : {
          id: "msg_1",
          model: "claude-x-2026",
          content: [{ type: "text", text: `${CONTENT}-output` }],
          stop_reason: "end_turn",
          usage: { input_tokens: 11, output_tokens: 5 }
        }
  }
  return mode !== "ok"
    ? {
        error: {
          code: unauthorized ? 401 : 400,
          message,
          status: unauthorized ? "UNAUTHENTICATED" : "INVALID_ARGUMENT"
        }
      }
    : {
        candidates: [{ finishReason: "STOP", content: { parts: [{ text: `${CONTENT}-output` }] } }],
        usageMetadata: { promptTokenCount: 11, candidatesTokenCount: 5 },
        modelVersion: "gemini-x-001",
        responseId: "resp_1"
      }
}

const makeFakeHttp = (state: { mode: Mode; collectorStatus?: number }) => {
  const requests: Array<HttpClientRequest.HttpClientRequest> = []
  const client = HttpClient.make((request) =>
    Effect.sync(() => {
      requests.push(request)
      if (request.url.startsWith("http://collector.test")) {
        return HttpClientResponse.fromWeb(request, new Response("{}", { status: state.collectorStatus ?? 200 }))
      }
      const answer = providerAnswer(request.url, state.mode)
      return HttpClientResponse.fromWeb(
        request,
        new Response(JSON.stringify(answer.body), { status: answer.status, headers: answer.headers })
      )
    })
  )
  return { requests, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

// ---------------------------------------------------------------------------------------------
// The gateway
// ---------------------------------------------------------------------------------------------

const target = (ref: string, provider: string, model: string) => ({
  ref,
  provider,
  model,
  capabilities: { tools: true, contextWindow: 128_000, maxOutputTokens: 4096 },
  regions: ["eu"],
  dataClasses: ["internal"],
  pricing: { inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "prices-1" },
  limits: { maxAttempts: 2, perAttemptTimeout: 2000, minimumAttemptTime: 10 }
})

const flow = (name: string, route: string) => ({
  name,
  policyVersion: "policy-1",
  prompt: { id: `${name}.prompt`, version: "2" },
  route: [route],
  timeout: 5000,
  regions: ["eu"],
  dataClass: "internal"
})

const config = {
  targets: [
    target("model://openai/gpt-x@eu", "openai", "gpt-x"),
    target("model://anthropic/claude-x@eu", "anthropic", "claude-x"),
    target("model://gemini/gemini-x@eu", "gemini", "gemini-x"),
    target("model://instant/echo@eu", "instant", "echo")
  ],
  workflows: [
    flow("sec.openai", "model://openai/gpt-x@eu"),
    flow("sec.anthropic", "model://anthropic/claude-x@eu"),
    flow("sec.gemini", "model://gemini/gemini-x@eu"),
    flow("otlp.reply", "model://instant/echo@eu")
  ]
}

/** An adapter that answers at once (for the export tests). */
const instantAdapter = ProviderAdapter.layer(
  "instant",
  Effect.succeed({
    generate: () =>
      Effect.succeed({
        text: `${CONTENT}-output`,
        toolCalls: [],
        finishReason: "stop" as const,
        refusal: false,
        usage: undefined,
        modelVersion: "echo-1",
        requestId: "req_instant",
        httpStatus: 200
      }),
    stream: () => Stream.dieMessage("not used")
  })
)

const providerConfig = ConfigProvider.fromMap(
  new Map([
    ["OPENAI_API_KEY", KEY],
    ["OPENAI_BASE_URL", "http://provider.test/openai/v1"],
    ["ANTHROPIC_API_KEY", KEY],
    ["ANTHROPIC_BASE_URL", "http://provider.test/anthropic/v1"],
    ["GEMINI_API_KEY", KEY],
    ["GEMINI_BASE_URL", "http://provider.test/gemini/v1beta"]
  ])
)

const command = (workflow: string, tenant = "acme-7") =>
  Schema.decodeSync(ModelCommand.ModelCommand)({
    workflow,
    tenant,
    messages: [
      { _tag: "system", content: `${CONTENT}-system` },
      { _tag: "user", content: `${CONTENT}-prompt` }
    ],
    tools: [
      {
        name: "lookup",
        description: `${CONTENT}-tooldesc`,
        parameters: { type: "object", properties: { q: { type: "string" } } }
      }
    ]
  })

/** The three HTTP adapters over `http`, configured from `providerConfig`, and the instant adapter. */
const adaptersOver = (http: Layer.Layer<HttpClient.HttpClient>) =>
  Layer.mergeAll(OpenAi.layerConfig(), Anthropic.layerConfig(), Gemini.layerConfig(), instantAdapter).pipe(
    Layer.provide(HttpTransport.layerHttpClient),
    Layer.provide(http),
    Layer.provide(Layer.setConfigProvider(providerConfig))
  )

const gatewayLayer = (http: Layer.Layer<HttpClient.HttpClient>, recorder: Layer.Layer<CallRecorder.CallRecorder>) =>
  ModelGateway.layerJson(config).pipe(
    Layer.provideMerge(adaptersOver(http)),
    Layer.provide(Layer.mergeAll(Budgets.layerOff, Concurrency.layerOff, Health.layerOff, recorder))
  )

// ---------------------------------------------------------------------------------------------
// Dumps of what was exported
// ---------------------------------------------------------------------------------------------

const dumpSpan = (s: ReadableSpan) =>
  JSON.stringify({
    name: s.name,
    attributes: s.attributes,
    events: s.events.map((e) => ({ name: e.name, attributes: e.attributes })),
    status: s.status,
    links: s.links.map((l) => l.attributes),
    resource: s.resource.attributes
  })

const dumpMetrics = (m: ResourceMetrics) =>
  JSON.stringify(
    m.scopeMetrics.flatMap((scope) =>
      scope.metrics.map((metric) => ({
        name: metric.descriptor.name,
        points: metric.dataPoints.map((p) => ({ attributes: p.attributes, value: p.value }))
      }))
    )
  )

const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make((o) => {
    lines.push(
      JSON.stringify({
        message: o.message,
        annotations: [...o.annotations],
        cause: Cause.pretty(o.cause, { renderErrorCause: true })
      })
    )
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

const encodeRecord = Schema.encodeSync(CallRecord)

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

describe("OpenTelemetry export of gateway calls (InMemorySpanExporter through the SDK)", () => {
  it.effect("a canary key and canary content reach only the provider's own auth header, through every adapter", () =>
    Effect.gen(function* () {
      const state: { mode: Mode } = { mode: "ok" }
      const http = makeFakeHttp(state)
      const logs = captureLogs()
      const memory = yield* CallRecorder.makeMemory
      const logRecorder = Context.get(yield* Layer.build(CallRecorder.layerLog), CallRecorder.CallRecorder)
      const recorder = Layer.succeed(CallRecorder.CallRecorder, {
        record: (r) => Effect.zipRight(memory.record(r), logRecorder.record(r))
      })
      const exported: Array<string> = []
      const outcomes: Array<string> = []
      yield* Effect.gen(function* () {
        const otel = yield* Otel.InMemoryTelemetry
        const gateway = yield* ModelGateway.ModelGateway
        for (const mode of ["ok", "unauthorized", "bad_request"] as const) {
          for (const workflow of ["sec.openai", "sec.anthropic", "sec.gemini"]) {
            state.mode = mode
            const exit = yield* Effect.exit(gateway.generate(command(workflow)))
            if (Exit.isSuccess(exit)) {
              outcomes.push(`${workflow}:${mode}:ok`)
              assert.strictEqual(exit.value.content.text, `${CONTENT}-output`)
              exported.push(JSON.stringify(exit.value.evidence), inspect(exit.value.evidence, { depth: 20 }))
            } else {
              const error = Option.getOrUndefined(Cause.failureOption(exit.cause))
              outcomes.push(`${workflow}:${mode}:${error?._tag}`)
              exported.push(Cause.pretty(exit.cause, { renderErrorCause: true }), inspect(exit.cause, { depth: 20 }))
              if (error !== undefined) exported.push(error.message, String(error), JSON.stringify(error))
            }
          }
        }
        const spans = yield* otel.spans
        assert.isTrue(spans.some((s) => s.name === "modelgate.generate"))
        assert.isTrue(spans.some((s) => s.name === "modelgate.attempt"))
        // the platform's HTTP client span is there too, nested under the attempt
        const httpSpans = spans.filter((s) => s.name.startsWith("http.client"))
        assert.isAbove(httpSpans.length, 0)
        const attempt = spans.find((s) => s.name === "modelgate.attempt")!
        assert.strictEqual(httpSpans[0]!.parentSpanContext?.spanId, attempt.spanContext().spanId)
        for (const s of spans) exported.push(dumpSpan(s))
        exported.push(dumpMetrics(yield* otel.metrics))
        const adapter = yield* ProviderAdapter.tag("openai")
        exported.push(inspect(adapter, { depth: 20 }), JSON.stringify(adapter), String(adapter))
      }).pipe(
        Effect.provide(gatewayLayer(http.layer, recorder)),
        Effect.provide(Otel.layerInMemory()),
        Effect.provide(logs.layer),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      assert.deepStrictEqual(outcomes, [
        "sec.openai:ok:ok",
        "sec.anthropic:ok:ok",
        "sec.gemini:ok:ok",
        "sec.openai:unauthorized:ProviderRejected",
        "sec.anthropic:unauthorized:ProviderRejected",
        "sec.gemini:unauthorized:ProviderRejected",
        "sec.openai:bad_request:InvalidRequest",
        "sec.anthropic:bad_request:InvalidRequest",
        "sec.gemini:bad_request:InvalidRequest"
      ])
      const records = yield* memory.records
      assert.strictEqual(records.length, 9)
      for (const r of records) exported.push(JSON.stringify(encodeRecord(r)), inspect(r, { depth: 20 }))
      exported.push(...logs.lines)
      assert.isTrue(logs.lines.some((l) => l.includes("modelgate call")))
      const text = exported.join("\n")
      assert.notInclude(text, "canarykey")
      assert.notInclude(text, CONTENT)

      // on the wire: the key only in the provider's own auth header
      assert.strictEqual(http.requests.length, 9)
      const authHeader: Record<string, string> = {
        openai: "authorization",
        anthropic: "x-api-key",
        gemini: "x-goog-api-key"
      }
      for (const request of http.requests) {
        const provider = request.url.split("/")[3]!
        const name = authHeader[provider]!
        assert.strictEqual(
          request.headers[name],
          name === "authorization" ? `Bearer ${KEY}` : KEY,
          `${provider} auth header`
        )
        const others = Object.entries(request.headers).filter(([k]) => k !== name)
        assert.notInclude(JSON.stringify(others), "canarykey")
        assert.notInclude(request.url, "canarykey")
        assert.notInclude(bodyText(request), "canarykey")
        // the prompt does go to the provider: that is the point of the call
        assert.include(bodyText(request), `${CONTENT}-prompt`)
        assert.isUndefined(request.headers.traceparent, "no trace propagation to vendors")
      }
    }).pipe(Effect.scoped)
  )

  it.effect("span attributes as exported: GenAI conventions plus modelgate's, with provider and versions", () =>
    Effect.gen(function* () {
      const state: { mode: Mode } = { mode: "ok" }
      const http = makeFakeHttp(state)
      yield* Effect.gen(function* () {
        const otel = yield* Otel.InMemoryTelemetry
        yield* ModelGateway.generate(command("sec.openai"))
        const spans = yield* otel.spans
        const call = spans.find((s) => s.name === "modelgate.generate")!
        const attempt = spans.find((s) => s.name === "modelgate.attempt")!
        assert.strictEqual(attempt.parentSpanContext?.spanId, call.spanContext().spanId)
        assert.deepInclude(call.attributes, {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "openai",
          "gen_ai.request.model": "gpt-x",
          "gen_ai.response.model": "gpt-x-2026-01-01",
          "gen_ai.usage.input_tokens": 11,
          "gen_ai.usage.output_tokens": 5,
          "modelgate.workflow": "sec.openai",
          "modelgate.policy_version": "policy-1",
          "modelgate.prompt.id": "sec.openai.prompt",
          "modelgate.prompt.version": "2",
          "modelgate.pricing.version": "prices-1",
          "modelgate.target": "model://openai/gpt-x@eu",
          "modelgate.outcome": "success",
          "modelgate.fallback_used": false,
          "modelgate.retry_count": 0
        })
        // lists are OpenTelemetry array attributes (layerArrayAttributes), not JSON text
        assert.deepStrictEqual(call.attributes["gen_ai.response.finish_reasons"], ["stop"])
        assert.deepStrictEqual(call.attributes["modelgate.route.eligible"], ["model://openai/gpt-x@eu"])
        // nothing was estimated (no budget, no limit): the estimate is absent, never "undefined"
        assert.notProperty(call.attributes, "modelgate.cost.estimated_usd")
        for (const s of spans) {
          for (const [k, v] of Object.entries(s.attributes)) {
            assert.notStrictEqual(v, "undefined", `${s.name} ${k}`)
            assert.isFalse(typeof v === "string" && v.startsWith("["), `${s.name} ${k} is a list as text`)
          }
        }
        assert.strictEqual(call.status.code, 1, "SpanStatusCode.OK")
        assert.strictEqual(attempt.status.code, 1, "SpanStatusCode.OK")
        assert.deepInclude(attempt.attributes, {
          "modelgate.attempt.outcome": "success",
          "http.response.status_code": 200,
          "modelgate.attempt.provider_request_id": "req_fake_1"
        })
        assert.strictEqual(attempt.kind, 2, "SpanKind.CLIENT")
        const metrics = dumpMetrics(yield* otel.metrics)
        assert.include(metrics, "modelgate.calls")
        assert.include(metrics, "modelgate.tokens")
      }).pipe(Effect.provide(gatewayLayer(http.layer, CallRecorder.layerMemory)), Effect.provide(Otel.layerInMemory()))
    })
  )

  it.effect("a failed attempt: its span and the call's have status ERROR, with the error tag and no content", () =>
    Effect.gen(function* () {
      const http = makeFakeHttp({ mode: "unauthorized" })
      yield* Effect.gen(function* () {
        const otel = yield* Otel.InMemoryTelemetry
        const exit = yield* Effect.exit(ModelGateway.generate(command("sec.anthropic")))
        assert.isTrue(Exit.isFailure(exit))
        const spans = yield* otel.spans
        const call = spans.find((s) => s.name === "modelgate.generate")!
        const attempt = spans.find((s) => s.name === "modelgate.attempt")!
        assert.strictEqual(attempt.attributes["modelgate.attempt.outcome"], "rejected")
        assert.deepStrictEqual(attempt.status, { code: 2, message: "attempt rejected" }, "SpanStatusCode.ERROR")
        assert.deepStrictEqual(
          attempt.events.map((e) => [e.name, e.attributes?.["exception.type"], e.attributes?.["exception.message"]]),
          [["exception", "ProviderRejected", "attempt rejected"]]
        )
        assert.strictEqual(call.status.code, 2, "SpanStatusCode.ERROR")
        // the attempt span still ends when the attempt did, and the HTTP span nests under it
        const httpSpan = spans.find((s) => s.name.startsWith("http.client"))!
        assert.strictEqual(httpSpan.parentSpanContext?.spanId, attempt.spanContext().spanId)
        assert.isTrue(attempt.ended)
        const text = spans.map(dumpSpan).join("\n")
        assert.notInclude(text, CONTENT)
        assert.notInclude(text, "canarykey")
        assert.notInclude(text, '"undefined"')
      }).pipe(Effect.provide(gatewayLayer(http.layer, CallRecorder.layerMemory)), Effect.provide(Otel.layerInMemory()))
    })
  )

  it.effect("layerArrayAttributes leaves other tracers as they are", () =>
    Effect.gen(function* () {
      const native = yield* Effect.tracer
      const seen: Array<[string, unknown]> = []
      const span = yield* Effect.provide(
        Effect.useSpan("app.span", (s) =>
          Effect.sync(() => {
            s.attribute("list", ["a", "b"])
            for (const entry of s.attributes) seen.push(entry)
            return s
          })
        ),
        Otel.layerArrayAttributes
      )
      assert.deepStrictEqual(seen, [["list", ["a", "b"]]])
      assert.strictEqual(span._tag, "Span")
      assert.strictEqual(yield* Effect.tracer, native)
    })
  )

  it.effect("hashed tenant ids: HMAC-SHA-256 with a secret key from Config; neither tenant nor key is exported", () =>
    Effect.gen(function* () {
      const http = makeFakeHttp({ mode: "ok" })
      const tenantKey = "tenant-hmac-canarysecret"
      const settings = Otel.layerTenantConfig.pipe(
        Layer.provide(
          Layer.setConfigProvider(
            ConfigProvider.fromMap(
              new Map([
                ["MODELGATE_TELEMETRY_TENANT", "hashed"],
                ["MODELGATE_TELEMETRY_TENANT_KEY", tenantKey]
              ])
            )
          )
        )
      )
      yield* Effect.gen(function* () {
        const otel = yield* Otel.InMemoryTelemetry
        yield* ModelGateway.generate(command("sec.openai", "tenant-zz-1234"))
        const call = (yield* otel.spans).find((s) => s.name === "modelgate.generate")!
        const expected = createHmac("sha256", tenantKey).update("tenant-zz-1234").digest("hex").slice(0, 32)
        assert.strictEqual(call.attributes["modelgate.tenant.hash"], expected)
        assert.isUndefined(call.attributes["modelgate.tenant"])
        const all = (yield* otel.spans).map(dumpSpan).join("\n") + dumpMetrics(yield* otel.metrics)
        assert.notInclude(all, "tenant-zz-1234")
        assert.notInclude(all, "canarysecret")
      }).pipe(
        Effect.provide(
          ModelGateway.layerJson(config).pipe(
            Layer.provide(settings),
            Layer.provide(adaptersOver(http.layer)),
            ModelGateway.withDefaults()
          )
        ),
        Effect.provide(Otel.layerInMemory())
      )
    })
  )

  it.effect("hashed tenants without a key: a ConfigError at startup", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Layer.build(
          Otel.layerTenantConfig.pipe(
            Layer.provide(
              Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["MODELGATE_TELEMETRY_TENANT", "hashed"]])))
            )
          )
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.include(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "", "MODELGATE_TELEMETRY_TENANT_KEY")
    }).pipe(Effect.scoped)
  )
})

describe("OTLP export configured from Config", () => {
  /** The gateway with defaults over the adapters, exporting over `http` with the OTLP `env`. */
  const otlpGateway = (http: Layer.Layer<HttpClient.HttpClient>, env: ReadonlyArray<readonly [string, string]>) =>
    ModelGateway.layerJson(config).pipe(
      Layer.provide(adaptersOver(http)),
      ModelGateway.withDefaults(),
      Layer.merge(otlpLayer(env, http))
    )
  const otlpLayer = (env: ReadonlyArray<readonly [string, string]>, http: Layer.Layer<HttpClient.HttpClient>) =>
    Otel.layerConfig().pipe(
      Layer.provide(http),
      Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(env))))
    )

  it.effect("no endpoint, or OTEL_SDK_DISABLED: a no-op layer (the tracer stays Effect's own)", () =>
    Effect.gen(function* () {
      const native = yield* Effect.tracer
      const http = makeFakeHttp({ mode: "ok" })
      const unconfigured = yield* Effect.provide(Effect.tracer, otlpLayer([], http.layer))
      assert.strictEqual(unconfigured, native)
      const disabled = yield* Effect.provide(
        Effect.tracer,
        otlpLayer(
          [
            ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.test:4318"],
            ["OTEL_SDK_DISABLED", "true"]
          ],
          http.layer
        )
      )
      assert.strictEqual(disabled, native)
      assert.strictEqual(http.requests.length, 0, "nothing was sent")
      const configured = yield* Effect.provide(
        Effect.tracer,
        otlpLayer([["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.test:4318"]], http.layer)
      )
      assert.notStrictEqual(configured, native)
    })
  )

  it.effect("exports spans and metrics as OTLP/JSON to the endpoint, with the collector's header, no content", () =>
    Effect.gen(function* () {
      // the collector refuses the traces: the exporter logs the failed request at Debug
      const http = makeFakeHttp({ mode: "ok", collectorStatus: 400 })
      const logs = captureLogs()
      const layer = otlpGateway(http.layer, [
        ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.test:4318/"],
        ["OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"],
        ["OTEL_SERVICE_NAME", "support-bot"],
        ["OTEL_EXPORTER_OTLP_HEADERS", "x-honeycomb-team=hc-canarysecret"]
      ])
      // the layer's scope closes after the call: the exporters flush
      yield* ModelGateway.generate(command("otlp.reply")).pipe(
        Effect.provide(layer),
        Effect.provide(logs.layer),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      const traces = http.requests.filter((r) => r.url === "http://collector.test:4318/v1/traces")
      const metrics = http.requests.filter((r) => r.url === "http://collector.test:4318/v1/metrics")
      assert.strictEqual(traces.length, 1)
      assert.strictEqual(metrics.length, 1)
      const tracesBody = bodyText(traces[0]!)
      const metricsBody = bodyText(metrics[0]!)
      assert.include(tracesBody, "modelgate.generate")
      assert.include(tracesBody, "modelgate.attempt")
      assert.include(tracesBody, "support-bot")
      assert.include(tracesBody, "modelgate.workflow")
      assert.include(metricsBody, "modelgate.calls")
      assert.strictEqual(traces[0]!.headers["x-honeycomb-team"], "hc-canarysecret")
      for (const body of [tracesBody, metricsBody]) {
        assert.notInclude(body, CONTENT)
        assert.notInclude(body, "canarysecret")
        assert.notInclude(body, "canarykey")
      }
      // the failed export is logged (at Debug, with its cause) without the collector's header
      assert.isTrue(logs.lines.some((l) => l.includes("Disabling OtlpTracer")))
      assert.notInclude(logs.lines.join("\n"), "canarysecret")
    })
  )

  it.effect('OTLP/JSON: a failed attempt\'s span has status ERROR, lists are arrays, no attribute is "undefined"', () =>
    Effect.gen(function* () {
      const http = makeFakeHttp({ mode: "unauthorized" })
      const layer = otlpGateway(http.layer, [
        ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.test:4318"],
        ["OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"],
        ["OTEL_METRICS_EXPORTER", "none"]
      ])
      const exit = yield* Effect.exit(
        ModelGateway.generate(command("sec.openai")).pipe(
          Effect.provide(layer),
          Effect.provide(Logger.remove(Logger.defaultLogger))
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      const traces = http.requests.filter((r) => r.url === "http://collector.test:4318/v1/traces")
      assert.strictEqual(traces.length, 1)
      interface OtlpValue {
        readonly stringValue?: string
        readonly arrayValue?: { readonly values: ReadonlyArray<OtlpValue> }
      }
      interface OtlpSpan {
        readonly name: string
        readonly status: { readonly code: number }
        readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: OtlpValue }>
      }
      const body: {
        readonly resourceSpans: ReadonlyArray<{
          readonly scopeSpans: ReadonlyArray<{ readonly spans: ReadonlyArray<OtlpSpan> }>
        }>
      } = JSON.parse(bodyText(traces[0]!))
      const spans = body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))
      const attempt = spans.find((s) => s.name === "modelgate.attempt")!
      const call = spans.find((s) => s.name === "modelgate.generate")!
      assert.strictEqual(attempt.status.code, 2, "STATUS_CODE_ERROR")
      assert.strictEqual(call.status.code, 2, "STATUS_CODE_ERROR")
      const eligible = call.attributes.find((a) => a.key === "modelgate.route.eligible")?.value
      assert.deepStrictEqual(eligible, { arrayValue: { values: [{ stringValue: "model://openai/gpt-x@eu" }] } })
      assert.isUndefined(call.attributes.find((a) => a.key === "modelgate.cost.estimated_usd"))
      for (const s of spans)
        for (const a of s.attributes) assert.notStrictEqual(a.value.stringValue, "undefined", `${s.name} ${a.key}`)
    })
  )

  it.effect("OTEL_TRACES_EXPORTER=none: metrics only", () =>
    Effect.gen(function* () {
      const http = makeFakeHttp({ mode: "ok" })
      const layer = ModelGateway.layerJson(config).pipe(
        Layer.provide(instantAdapter),
        Layer.provide(
          Layer.mergeAll(OpenAi.layerConfig(), Anthropic.layerConfig(), Gemini.layerConfig()).pipe(
            Layer.provide(HttpTransport.layerHttpClient),
            Layer.provide(http.layer),
            Layer.provide(Layer.setConfigProvider(providerConfig))
          )
        ),
        ModelGateway.withDefaults(),
        Layer.merge(
          otlpLayer(
            [
              ["OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.test:4318"],
              ["OTEL_TRACES_EXPORTER", "none"]
            ],
            http.layer
          )
        )
      )
      yield* ModelGateway.generate(command("otlp.reply")).pipe(
        Effect.provide(layer),
        Effect.provide(Logger.remove(Logger.defaultLogger))
      )
      const urls = http.requests.map((r) => r.url).filter((u) => u.startsWith("http://collector.test"))
      assert.deepStrictEqual(urls, ["http://collector.test:4318/v1/metrics"])
      assert.strictEqual(
        http.requests.find((r) => r.url.endsWith("/v1/metrics"))?.headers["content-type"],
        "application/x-protobuf"
      )
    })
  )
})
