/**
 * The embeddings wire formats of the OpenAI (`POST /v1/embeddings`) and Gemini
 * (`:batchEmbedContents`) adapters against the mock server, in the conformance suite's style: one
 * descriptor per provider, the same cases for both. Failures are classified exactly as `generate`
 * classifies the same answer (one classification per provider).
 */
import type { HttpClient } from "@effect/platform"
import type { HttpTransport } from "@modelgate/adapters/HttpTransport"
import { assert, describe, layer } from "@effect/vitest"
import type { Vitest } from "@effect/vitest"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import {
  Capabilities,
  EmbeddingCapability,
  ModelTarget,
  Pricing,
  ProviderId,
  TargetRef
} from "@modelgate/core/ModelTarget"
import type { EmbedRequest, ProviderAdapter } from "@modelgate/core/ProviderAdapter"
import type { Behavior } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Duration, Effect } from "effect"
import type { Redacted } from "effect"
import type { TransportCase } from "./adapters-fixtures.js"
import type { ClassificationRow } from "./conformance/AdapterConformance.js"
import { row } from "./conformance/AdapterConformance.js"
import {
  apiKey,
  assertKeyOnlyIn,
  canary,
  lastRequestFor,
  leaks,
  recordOf,
  simpleRequest,
  testLayerWith,
  transports
} from "./adapters-fixtures.js"

type Methods = Vitest.MethodsNonLive<MockProviderServer | HttpClient.HttpClient | HttpTransport, true>
type Adapter = Omit<ProviderAdapter, "provider">

/** How one provider's embeddings look on the wire. */
interface Descriptor {
  readonly provider: "openai" | "gemini"
  readonly make: (options: {
    readonly baseUrl: string
    readonly apiKey: Redacted.Redacted<string>
    readonly maxResponseBytes?: number
  }) => Effect.Effect<Adapter, never, HttpClient.HttpClient>
  readonly auth: { readonly header: string; readonly value: string }
  /** Path of the request for `model`. */
  readonly path: (model: string) => string
  /** The exact body for `inputs` (and the dimensions asked for). */
  readonly body: (model: string, inputs: ReadonlyArray<string>, dimensions: number | undefined) => unknown
  /** Input tokens the adapter reports for a success whose script says `input` (Gemini reports none). */
  readonly usage: (input: number) => number | undefined
  /** The model version reported for a success on `model`. */
  readonly modelVersion: (model: string) => string | undefined
  /** A 200 answer with two vectors, out of order where the format allows it. */
  readonly outOfOrder: string
  /** A 200 answer whose embedding is not a list of numbers. */
  readonly malformed: string
  /** An error object after HTTP 200. */
  readonly errorAfter200: { readonly body: string; readonly kind: ProviderError["kind"] }
}

const embedTarget = (provider: string, model: string, dimensions = 3): ModelTarget =>
  new ModelTarget({
    ref: TargetRef.make(`model://${provider}/${model}`),
    provider: ProviderId.make(provider),
    model,
    capabilities: new Capabilities({
      contextWindow: 8191,
      maxOutputTokens: 1,
      embeddings: new EmbeddingCapability({ dimensions })
    }),
    regions: ["eu"],
    dataClasses: ["public"],
    pricing: new Pricing({ inputPerMillion: 1, outputPerMillion: 0, pricingVersion: "test-1" })
  })

const embedRequest = (provider: string, model: string, fields: Partial<EmbedRequest> = {}): EmbedRequest => ({
  target: embedTarget(provider, model),
  inputs: ["first text", "second text"],
  dimensions: undefined,
  timeout: Duration.seconds(10),
  ...fields
})

const embedOf = (adapter: Adapter) => {
  const embed = adapter.embed
  return embed === undefined ? Effect.dieMessage("the adapter does not embed") : Effect.succeed(embed)
}

/** Failures scripted once for `generate` and once for `embed`: both must classify them alike. */
const failures: ReadonlyArray<ClassificationRow> = [
  row("429 with retry-after", 429, "rate_limited", "no", { headers: { "retry-after": "2" }, retryAfterMs: 2000 }),
  row("503", 503, "overloaded", "no"),
  row("500", 500, "server_error", "maybe"),
  row("400", 400, "invalid_request", "no"),
  row("401", 401, "authentication", "no"),
  row("404", 404, "model_not_found", "no")
]

/** The adapter's `embed`, made against the mock server (with the size limit given). */
type Embedder = (options?: {
  readonly maxResponseBytes?: number
}) => Effect.Effect<NonNullable<Adapter["embed"]>, never, MockProviderServer | HttpClient.HttpClient>

const describeEmbeddings = (descriptor: Descriptor, specific: (it: Methods, embedder: Embedder) => void): void => {
  for (const transport of transports) describeOver(transport, descriptor, specific)
}

const titleOf = (descriptor: Descriptor, transport: TransportCase) =>
  `${descriptor.provider} embeddings against the mock server (${transport.name})`

const describeOver = (
  transport: TransportCase,
  descriptor: Descriptor,
  specific: (it: Methods, embedder: Embedder) => void
): void =>
  layer(testLayerWith(transport), { excludeTestServices: true })(titleOf(descriptor, transport), (it) => {
    const { provider } = descriptor
    const adapter = (options: { readonly maxResponseBytes?: number } = {}) =>
      Effect.flatMap(MockProviderServer, (mock) =>
        descriptor.make({ baseUrl: mock.baseUrl(provider), apiKey, ...options })
      )
    const embedder: Embedder = (options) => Effect.flatMap(adapter(options), embedOf)
    const script = (model: string, ...behaviors: ReadonlyArray<Behavior>) =>
      Effect.flatMap(MockProviderServer, (mock) => mock.enqueue(behaviors, { provider, model }))

    describe("conformance", () => {
      it.effect(`sends the inputs in one request, the key only in ${descriptor.auth.header}`, () =>
        Effect.gen(function* () {
          const embed = yield* embedder()
          yield* embed(embedRequest(provider, "body-model"))
          const recorded = yield* lastRequestFor("body-model")
          assert.strictEqual(recorded.method, "POST")
          assert.strictEqual(recorded.url.split("?")[0], descriptor.path("body-model"))
          assert.deepStrictEqual(recorded.body, descriptor.body("body-model", ["first text", "second text"], undefined))
          assertKeyOnlyIn(recorded, descriptor.auth.header, descriptor.auth.value)
        })
      )

      it.effect("asks for the dimensions on the wire when the engine passes them", () =>
        Effect.gen(function* () {
          const embed = yield* embedder()
          const response = yield* embed(embedRequest(provider, "dims-model", { inputs: ["only one"], dimensions: 5 }))
          const recorded = yield* lastRequestFor("dims-model")
          assert.deepStrictEqual(recorded.body, descriptor.body("dims-model", ["only one"], 5))
          assert.deepStrictEqual(
            response.vectors.map((v) => v.length),
            [5]
          )
        })
      )

      it.effect("reads one vector per input in input order, usage, model version, request id and status", () =>
        Effect.gen(function* () {
          const embed = yield* embedder()
          yield* script(
            "ok-model",
            MockProviderServer.success({ usage: { input: 9, output: 0 }, requestId: "req_emb" })
          )
          const response = yield* embed(
            embedRequest(provider, "ok-model", { inputs: ["alpha", "beta", "alpha"], dimensions: 4 })
          )
          assert.strictEqual(response.vectors.length, 3)
          for (const v of response.vectors) assert.strictEqual(v.length, 4)
          // The mock's vector is a function of the text: equal texts, equal vectors; others differ.
          assert.deepStrictEqual(response.vectors[0], response.vectors[2])
          assert.notDeepEqual(response.vectors[0], response.vectors[1])
          assert.strictEqual(response.usage?.inputTokens, descriptor.usage(9))
          assert.strictEqual(response.usage?.outputTokens, descriptor.usage(9) === undefined ? undefined : 0)
          assert.strictEqual(response.modelVersion, descriptor.modelVersion("ok-model"))
          assert.strictEqual(response.requestId, "req_emb")
          assert.strictEqual(response.httpStatus, 200)
        })
      )

      it.effect("puts vectors in input order when the answer lists them out of order", () =>
        Effect.gen(function* () {
          const embed = yield* embedder()
          yield* script("order-model", MockProviderServer.raw(200, descriptor.outOfOrder))
          const response = yield* embed(embedRequest(provider, "order-model"))
          assert.deepStrictEqual(response.vectors, [
            [1, 1.5, 2],
            [3, 3.5, 4]
          ])
        })
      )

      for (const row of failures) {
        it.effect(`classifies ${row.name} exactly as generate does`, () =>
          Effect.gen(function* () {
            const subject = yield* adapter()
            const embed = yield* embedOf(subject)
            const behavior = MockProviderServer.failure(row.status, {
              ...(row.error === undefined ? {} : { error: row.error }),
              ...(row.headers === undefined ? {} : { headers: row.headers })
            })
            yield* script("fail-model", behavior, behavior)
            const fromGenerate = yield* Effect.flip(subject.generate(simpleRequest(provider, "fail-model")))
            const fromEmbed = yield* Effect.flip(embed(embedRequest(provider, "fail-model")))
            const view = (e: ProviderError) => ({
              kind: e.kind,
              processed: e.processed,
              httpStatus: e.httpStatus,
              retryAfterMs: e.retryAfter === undefined ? undefined : Duration.toMillis(e.retryAfter),
              providerCode: e.providerCode,
              detail: e.detail
            })
            assert.deepStrictEqual(view(fromEmbed), view(fromGenerate))
            assert.strictEqual(fromEmbed.kind, row.kind)
            assert.strictEqual(fromEmbed.processed, row.processed)
            assert.strictEqual(fromEmbed.httpStatus, row.status)
            if (row.retryAfterMs !== undefined) {
              assert.strictEqual(
                fromEmbed.retryAfter === undefined ? undefined : Duration.toMillis(fromEmbed.retryAfter),
                row.retryAfterMs
              )
            }
            assert.isFalse(leaks(fromEmbed))
          })
        )
      }

      it.effect("an error object after HTTP 200 is classified", () =>
        Effect.gen(function* () {
          const embed = yield* embedder()
          yield* script("late-error-model", MockProviderServer.raw(200, descriptor.errorAfter200.body))
          const error = yield* Effect.flip(embed(embedRequest(provider, "late-error-model")))
          assert.strictEqual(error.kind, descriptor.errorAfter200.kind)
          assert.strictEqual(error.processed, "maybe")
          assert.strictEqual(error.httpStatus, 200)
        })
      )

      it.effect("a body that is not JSON, or vectors that are not numbers, are invalid_output", () =>
        Effect.gen(function* () {
          const embed = yield* embedder()
          yield* script(
            "bad-model",
            MockProviderServer.raw(200, '{"data": ['),
            MockProviderServer.raw(200, descriptor.malformed)
          )
          const notJson = yield* Effect.flip(embed(embedRequest(provider, "bad-model")))
          const notNumbers = yield* Effect.flip(embed(embedRequest(provider, "bad-model")))
          assert.deepStrictEqual(
            [notJson.kind, notJson.processed, notJson.detail],
            ["invalid_output", "maybe", `${provider}: response body is not JSON`]
          )
          assert.deepStrictEqual(
            [notNumbers.kind, notNumbers.processed, notNumbers.detail],
            ["invalid_output", "maybe", `${provider}: an embedding is not a list of numbers`]
          )
        })
      )

      it.effect("a body over maxResponseBytes is refused", () =>
        Effect.gen(function* () {
          const embed = yield* embedder({ maxResponseBytes: 64 })
          const error = yield* Effect.flip(
            embed(embedRequest(provider, "big-model", { inputs: ["a", "b", "c"], dimensions: 32 }))
          )
          assert.deepStrictEqual(
            [error.kind, error.detail],
            ["invalid_output", `${provider}: response body exceeds 64 bytes`]
          )
        })
      )

      it.effect("a dropped connection is a transport failure that may have been processed", () =>
        Effect.gen(function* () {
          const embed = yield* embedder()
          yield* script("drop-model", MockProviderServer.drop())
          const error = yield* Effect.flip(embed(embedRequest(provider, "drop-model")))
          assert.strictEqual(error.kind, "transport")
          assert.strictEqual(error.processed, "maybe")
        })
      )
    })

    specific(it, embedder)
  })

describeEmbeddings(
  {
    provider: "openai",
    make: (options) => OpenAi.make(options),
    auth: { header: "authorization", value: `Bearer ${canary}` },
    path: () => "/v1/embeddings",
    body: (model, inputs, dimensions) => ({
      model,
      input: inputs,
      encoding_format: "float",
      ...(dimensions === undefined ? {} : { dimensions })
    }),
    usage: (input) => input,
    modelVersion: (model) => model,
    outOfOrder: JSON.stringify({
      object: "list",
      data: [
        { object: "embedding", index: 1, embedding: [3, 3.5, 4] },
        { object: "embedding", index: 0, embedding: [1, 1.5, 2] }
      ],
      model: "m",
      usage: { prompt_tokens: 4, total_tokens: 4 }
    }),
    malformed: JSON.stringify({
      data: [
        { index: 0, embedding: ["x"] },
        { index: 1, embedding: [1] }
      ]
    }),
    errorAfter200: { body: JSON.stringify({ error: { type: "server_error", message: "boom" } }), kind: "server_error" }
  },
  (it, embedder) => {
    it.effect("has no task field: a task leaves the body as it is", () =>
      Effect.gen(function* () {
        const embed = yield* embedder()
        yield* embed(embedRequest("openai", "task-model", { task: "query" }))
        const recorded = yield* lastRequestFor("task-model")
        assert.deepStrictEqual(recorded.body, {
          model: "task-model",
          input: ["first text", "second text"],
          encoding_format: "float"
        })
      })
    )

    it.effect("reports the rate-limit headroom of the answer", () =>
      Effect.gen(function* () {
        const embed = yield* embedder()
        yield* Effect.flatMap(MockProviderServer, (mock) =>
          mock.enqueue(
            MockProviderServer.success({
              headers: { "x-ratelimit-remaining-requests": "41", "x-ratelimit-limit-requests": "50" }
            }),
            { provider: "openai", model: "headroom-model" }
          )
        )
        const response = yield* embed(embedRequest("openai", "headroom-model"))
        assert.strictEqual(response.rateLimit?.remainingRequests, 41)
        assert.strictEqual(response.rateLimit?.limitRequests, 50)
      })
    )
  }
)

describeEmbeddings(
  {
    provider: "gemini",
    make: (options) => Gemini.make(options),
    auth: { header: "x-goog-api-key", value: canary },
    path: (model) => `/v1beta/models/${model}:batchEmbedContents`,
    body: (model, inputs, dimensions) => ({
      requests: inputs.map((text) => ({
        model: `models/${model}`,
        content: { parts: [{ text }] },
        ...(dimensions === undefined ? {} : { outputDimensionality: dimensions })
      }))
    }),
    usage: () => undefined,
    modelVersion: () => undefined,
    // Gemini answers in request order, without indices.
    outOfOrder: JSON.stringify({ embeddings: [{ values: [1, 1.5, 2] }, { values: [3, 3.5, 4] }] }),
    malformed: JSON.stringify({ embeddings: [{ values: "x" }, { values: [1] }] }),
    errorAfter200: {
      body: JSON.stringify({ error: { code: 503, status: "UNAVAILABLE", message: "busy" } }),
      kind: "overloaded"
    }
  },
  (it, embedder) => {
    it.effect("strips a models/ prefix and escapes the model in the path", () =>
      Effect.gen(function* () {
        const embed = yield* embedder()
        yield* embed(embedRequest("gemini", "models/text-embedding-004"))
        const recorded = yield* lastRequestFor("text-embedding-004")
        assert.strictEqual(recorded.url, "/v1beta/models/text-embedding-004:batchEmbedContents")
        const first = recordOf(recordOf(recorded.body).requests)
        assert.strictEqual(recordOf(first[0]).model, "models/text-embedding-004")
      })
    )

    it.effect("sends the task as taskType on every request of the batch", () =>
      Effect.gen(function* () {
        const embed = yield* embedder()
        yield* embed(embedRequest("gemini", "task-model", { task: "query" }))
        yield* embed(embedRequest("gemini", "task-model", { inputs: ["doc"], task: "document" }))
        const requests = (yield* Effect.flatMap(MockProviderServer, (mock) => mock.requests)).filter(
          (r) => r.model === "task-model"
        )
        assert.deepStrictEqual(
          requests.map((r) => {
            const list = recordOf(r.body).requests
            return Array.isArray(list) ? list.map((x) => recordOf(x).taskType) : []
          }),
          [["RETRIEVAL_QUERY", "RETRIEVAL_QUERY"], ["RETRIEVAL_DOCUMENT"]]
        )
      })
    )

    it.effect("more than 100 inputs go in consecutive batches of at most 100, vectors in input order", () =>
      Effect.gen(function* () {
        const mock = yield* MockProviderServer
        const embed = yield* embedder()
        const inputs = Array.from({ length: 150 }, (_, i) => `text number ${i}`)
        const before = (yield* mock.requests).length
        const response = yield* embed(embedRequest("gemini", "batch-model", { inputs, dimensions: 3 }))
        const sent = (yield* mock.requests).slice(before)
        assert.deepStrictEqual(
          sent.map((r) => {
            const requests = recordOf(r.body).requests
            return Array.isArray(requests) ? requests.length : -1
          }),
          [100, 50]
        )
        assert.strictEqual(response.vectors.length, 150)
        const alone = yield* embed(
          embedRequest("gemini", "batch-model", { inputs: ["text number 120"], dimensions: 3 })
        )
        assert.deepStrictEqual(response.vectors[120], alone.vectors[0])
      })
    )

    it.effect("a failure in a later batch may have been processed (earlier batches were)", () =>
      Effect.gen(function* () {
        const mock = yield* MockProviderServer
        const embed = yield* embedder()
        yield* mock.enqueue([MockProviderServer.success(), MockProviderServer.failure(400)], {
          provider: "gemini",
          model: "batch-fail-model"
        })
        const inputs = Array.from({ length: 101 }, (_, i) => `t${i}`)
        const error = yield* Effect.flip(embed(embedRequest("gemini", "batch-fail-model", { inputs })))
        assert.deepStrictEqual([error.kind, error.processed, error.httpStatus], ["invalid_request", "maybe", 400])
      })
    )

    it.effect("the mock also serves the single :embedContent method", () =>
      Effect.gen(function* () {
        const mock = yield* MockProviderServer
        const response = yield* Effect.promise(() =>
          fetch(`${mock.baseUrl("gemini")}/models/text-embedding-004:embedContent`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ content: { parts: [{ text: "hello" }] }, outputDimensionality: 6 })
          }).then((r) => r.json())
        )
        const values = recordOf(recordOf(response).embedding).values
        assert.isTrue(Array.isArray(values) && values.length === 6)
      })
    )
  }
)
