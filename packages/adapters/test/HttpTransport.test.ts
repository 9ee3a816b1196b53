import { HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import * as OpenAi from "@modelgate/adapters/openai"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Config, Deferred, Effect, Fiber, Layer, Tracer } from "effect"
import { apiKey, canary, simpleRequest, transports } from "./adapters-fixtures.js"
import { serve } from "./loopback.js"

/** An `HttpClient` that must not be used: every request fails. */
const refusingClient = Layer.succeed(
  HttpClient.HttpClient,
  HttpClient.make((request) =>
    Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", description: "not this client" }))
  )
)

const exchangeOptions = { provider: "test", maxBytes: 1024, requestId: () => undefined }

interface CapturedSpan {
  readonly spanId: string
  readonly name: string
  readonly kind: Tracer.SpanKind
  readonly parent: string | undefined
  readonly attributes: Map<string, unknown>
}

/** A tracer that keeps what each span was given. */
const capturing = () => {
  const spans: Array<CapturedSpan> = []
  const native = Effect.runSync(Effect.tracer)
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = native.span(name, parent, context, links, startTime, kind, options)
      const attributes = new Map<string, unknown>()
      const attribute = span.attribute.bind(span)
      spans.push({
        spanId: span.spanId,
        name,
        kind,
        parent: parent._tag === "Some" ? parent.value.spanId : undefined,
        attributes
      })
      return Object.assign(span, {
        attribute: (key: string, value: unknown) => {
          attributes.set(key, value)
          attribute(key, value)
        }
      })
    },
    context: native.context
  })
  return { spans, tracer }
}

describe("HttpTransport: which transport", () => {
  it.scoped("layerConfig uses the direct undici transport: an HttpClient in context is not used", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const response = yield* Effect.flatMap(ProviderAdapter.tag("openai"), (a) =>
        a.generate(simpleRequest("openai", "m"))
      ).pipe(
        Effect.provide(
          OpenAi.layerConfig({ baseUrl: Config.succeed(mock.baseUrl("openai")), apiKey: Config.succeed(apiKey) }).pipe(
            Layer.provide(refusingClient)
          )
        )
      )
      assert.isString(response.text)
      assert.strictEqual((yield* mock.requests).length, 1)
    }).pipe(Effect.provide(MockProviderServer.layer()))
  )

  it.scoped("make uses a provided HttpTransport rather than the HttpClient in context", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const adapter = yield* OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey })
      const response = yield* adapter.generate(simpleRequest("openai", "m"))
      assert.isString(response.text)
    }).pipe(Effect.provide(Layer.mergeAll(MockProviderServer.layer(), HttpTransport.layerUndici(), refusingClient)))
  )

  it.scoped("without an HttpTransport, make uses the HttpClient in context", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const adapter = yield* OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey })
      const error = yield* Effect.flip(adapter.generate(simpleRequest("openai", "m")))
      assert.strictEqual(error.kind, "transport")
      assert.strictEqual((yield* mock.requests).length, 0)
    }).pipe(Effect.provide(Layer.mergeAll(MockProviderServer.layer(), refusingClient)))
  )

  it.effect("the direct transport's pool is closed with its scope", () =>
    Effect.gen(function* () {
      const transport = yield* Effect.scoped(HttpTransport.makeUndici())
      const error = yield* Effect.flip(
        transport.exchange(HttpClientRequest.post("http://127.0.0.1:9/closed"), exchangeOptions)
      )
      assert.strictEqual(error.kind, "transport")
      assert.strictEqual(error.providerCode, "UND_ERR_DESTROYED")
    })
  )
})

describe.each(transports)("HttpTransport over the wire ($name)", (transport) => {
  const Wire = Layer.provideMerge(transport.layer, NodeHttpClient.layerUndici)

  it.scoped("interrupting an exchange aborts its request: the server sees the connection close", () =>
    Effect.gen(function* () {
      const arrived = yield* Deferred.make<void>()
      const closed = yield* Deferred.make<void>()
      const server = yield* serve((request, response) => {
        Deferred.unsafeDone(arrived, Effect.void)
        response.on("close", () => Deferred.unsafeDone(closed, Effect.void))
        request.resume()
      })
      const http = yield* HttpTransport.HttpTransport
      const fiber = yield* Effect.fork(
        http.exchange(HttpClientRequest.post(`${server.url}/never`), { ...exchangeOptions, provider: "slow" })
      )
      yield* Deferred.await(arrived)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(closed)
      assert.isTrue(yield* Deferred.isDone(closed))
    }).pipe(Effect.provide(Wire))
  )

  it.scoped("a chunked body over the limit is invalid_output; a non-2xx body is read for classification", () =>
    Effect.gen(function* () {
      const server = yield* serve((request, response) => {
        request.resume()
        if (request.url === "/big") {
          response.writeHead(200, { "content-type": "application/json" })
          response.write("x".repeat(700))
          response.end("y".repeat(700))
        } else {
          response.writeHead(429, { "content-type": "application/json", "x-request-id": "req_9" })
          response.end(JSON.stringify({ error: { message: "slow down" } }))
        }
      })
      const http = yield* HttpTransport.HttpTransport
      const big = yield* Effect.flip(http.exchange(HttpClientRequest.post(`${server.url}/big`), exchangeOptions))
      assert.strictEqual(big.kind, "invalid_output")
      assert.strictEqual(big.httpStatus, 200)
      const limited = yield* http.exchange(HttpClientRequest.post(`${server.url}/limited`), exchangeOptions)
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(limited.headers["x-request-id"], "req_9")
      assert.deepStrictEqual(JSON.parse(limited.body ?? ""), { error: { message: "slow down" } })
    }).pipe(Effect.provide(Wire))
  )
})

describe("HttpTransport: the client span", () => {
  /** The spans of one `generate` through OpenAI's adapter over `transport`, under a parent span. */
  const spansOver = (transport: (typeof transports)[number]) =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const adapter = yield* OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey })
      const { spans, tracer } = capturing()
      yield* Effect.withSpan(adapter.generate(simpleRequest("openai", "m")), "parent").pipe(Effect.withTracer(tracer))
      const recorded = yield* mock.requests
      return { spans, traceparent: recorded[0]?.headers.traceparent }
    }).pipe(
      Effect.provide(
        Layer.provideMerge(transport.layer, Layer.merge(MockProviderServer.layer(), NodeHttpClient.layerUndici))
      )
    )

  it.scoped("the direct transport's span has the platform client's name, kind, parent, attributes and redaction", () =>
    Effect.gen(function* () {
      const [platform, direct] = [transports[0]!, transports[1]!]
      const expected = yield* spansOver(platform)
      const actual = yield* spansOver(direct)
      const http = (spans: ReadonlyArray<CapturedSpan>) => spans.filter((s) => s.name.startsWith("http.client"))
      assert.strictEqual(http(expected.spans).length, 1)
      assert.strictEqual(http(actual.spans).length, 1)
      const [want, got] = [http(expected.spans)[0]!, http(actual.spans)[0]!]
      assert.strictEqual(got.name, want.name)
      assert.strictEqual(got.name, "http.client POST")
      assert.strictEqual(got.kind, "client")
      assert.strictEqual(got.parent, actual.spans.find((s) => s.name === "parent")?.spanId)
      assert.strictEqual(want.parent, expected.spans.find((s) => s.name === "parent")?.spanId)
      // Same attribute names; values equal but for the port (one mock server per run).
      assert.deepStrictEqual([...got.attributes.keys()].sort(), [...want.attributes.keys()].sort())
      for (const [key, value] of want.attributes) {
        if (key === "server.port" || key === "server.address" || key === "url.full") continue
        assert.deepStrictEqual(got.attributes.get(key), value, key)
      }
      assert.strictEqual(got.attributes.get("http.request.header.authorization"), "<redacted>")
      assert.strictEqual(got.attributes.get("http.response.status_code"), 200)
      assert.isFalse([...got.attributes.values()].some((value) => String(value).includes(canary)))
      // No trace context is sent to the vendor by either transport.
      assert.isUndefined(expected.traceparent)
      assert.isUndefined(actual.traceparent)
    })
  )

  it.scoped("no span when tracing is disabled for the call", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const adapter = yield* OpenAi.make({ baseUrl: mock.baseUrl("openai"), apiKey })
      const { spans, tracer } = capturing()
      yield* adapter
        .generate(simpleRequest("openai", "m"))
        .pipe(Effect.withTracerEnabled(false), Effect.withTracer(tracer))
      assert.deepStrictEqual(spans, [])
    }).pipe(Effect.provide(Layer.mergeAll(MockProviderServer.layer(), HttpTransport.layerUndici(), refusingClient)))
  )
})
