import { assert, describe, it } from "@effect/vitest"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import type { HttpClientRequest } from "@effect/platform"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as HttpTransport from "@modelgate/adapters/HttpTransport"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import * as Compatible from "@modelgate/adapters/openai-compatible"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { ProviderRequest } from "@modelgate/core/ProviderAdapter"
import { hiRequest } from "./adapters-fixtures.js"
import { Config, ConfigProvider, Effect, Exit, Layer, Redacted, Tracer } from "effect"

const canary = "sk-CANARY-123"

const request = (model: string): ProviderRequest => hiRequest(model)

/** An HttpClient that records requests and answers `body` with 200. */
const fakeClient = (body: unknown) => {
  const seen: Array<HttpClientRequest.HttpClientRequest> = []
  const layer = Layer.succeed(
    HttpClient.HttpClient,
    HttpClient.make((req) =>
      Effect.sync(() => {
        seen.push(req)
        return HttpClientResponse.fromWeb(
          req,
          new Response(JSON.stringify(body), {
            status: 200,
            headers: { "content-type": "application/json", "x-request-id": "req_1" }
          })
        )
      })
    )
  )
  return { seen, layer }
}

const chatCompletion = {
  id: "chatcmpl-1",
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }]
}

describe("layers", () => {
  it.effect("openai layerConfig reads the redacted OPENAI_API_KEY and registers under 'openai'", () =>
    Effect.gen(function* () {
      const fake = fakeClient(chatCompletion)
      const response = yield* Effect.flatMap(ProviderAdapter.tag("openai"), (a) => a.generate(request("m"))).pipe(
        Effect.provide(
          OpenAi.layerConfig().pipe(Layer.provide(HttpTransport.layerHttpClient), Layer.provide(fake.layer))
        ),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["OPENAI_API_KEY", canary]])))
      )
      assert.strictEqual(response.text, "ok")
      const sent = fake.seen[0]
      assert.strictEqual(sent?.url, "https://api.openai.com/v1/chat/completions")
      assert.strictEqual(sent?.headers.authorization, `Bearer ${canary}`)
    })
  )

  it.effect("layerConfig fails without the key", () =>
    Effect.gen(function* () {
      const fake = fakeClient(chatCompletion)
      const exit = yield* Effect.exit(
        Effect.flatMap(ProviderAdapter.tag("openai"), (a) => a.generate(request("m"))).pipe(
          Effect.provide(
            OpenAi.layerConfig().pipe(Layer.provide(HttpTransport.layerHttpClient), Layer.provide(fake.layer))
          ),
          Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.strictEqual(fake.seen.length, 0)
    })
  )

  it.effect("a custom id registers the adapter under that id; any field may be a Config", () =>
    Effect.gen(function* () {
      const fake = fakeClient(chatCompletion)
      const adapter = yield* ProviderAdapter.tag("vllm-eu").pipe(
        Effect.provide(
          Compatible.layerConfig({
            id: Config.succeed("vllm-eu"),
            baseUrl: Config.string("VLLM_URL"),
            apiKey: Config.redacted("VLLM_KEY")
          }).pipe(Layer.provide(HttpTransport.layerHttpClient), Layer.provide(fake.layer))
        ),
        Effect.withConfigProvider(
          ConfigProvider.fromMap(
            new Map([
              ["VLLM_URL", "http://gpu-1:8000/v1/"],
              ["VLLM_KEY", canary]
            ])
          )
        )
      )
      assert.strictEqual(adapter.provider, "vllm-eu")
      yield* adapter.generate(request("llama"))
      assert.strictEqual(fake.seen[0]?.url, "http://gpu-1:8000/v1/chat/completions")
      assert.strictEqual(fake.seen[0]?.headers.authorization, `Bearer ${canary}`)
    })
  )

  it.effect(
    "anthropic sends x-api-key and anthropic-version; gemini sends x-goog-api-key, never the key in the URL",
    () =>
      Effect.gen(function* () {
        const a = fakeClient({
          id: "msg",
          model: "m",
          content: [{ type: "text", text: "ok" }],
          stop_reason: "end_turn"
        })
        yield* Effect.flatMap(
          Anthropic.make({ baseUrl: "https://api.anthropic.com/v1", apiKey: Redacted.make(canary) }),
          (x) => x.generate(request("claude"))
        ).pipe(Effect.provide(a.layer))
        assert.strictEqual(a.seen[0]?.url, "https://api.anthropic.com/v1/messages")
        assert.strictEqual(a.seen[0]?.headers["x-api-key"], canary)
        assert.strictEqual(a.seen[0]?.headers["anthropic-version"], "2023-06-01")
        const g = fakeClient({ candidates: [{ content: { parts: [{ text: "ok" }] }, finishReason: "STOP" }] })
        yield* Effect.flatMap(
          Gemini.make({ baseUrl: "https://generativelanguage.googleapis.com/v1beta", apiKey: Redacted.make(canary) }),
          (x) => x.generate(request("gemini-x"))
        ).pipe(Effect.provide(g.layer))
        assert.strictEqual(
          g.seen[0]?.url,
          "https://generativelanguage.googleapis.com/v1beta/models/gemini-x:generateContent"
        )
        assert.strictEqual(g.seen[0]?.headers["x-goog-api-key"], canary)
        assert.isFalse(JSON.stringify(g.seen[0]?.urlParams ?? []).includes(canary))
      })
  )

  it.effect("the key never reaches the HTTP client span (x-goog-api-key is redacted too)", () =>
    Effect.gen(function* () {
      const native = yield* Effect.tracer
      const spans: Array<Tracer.Span> = []
      const capturing = Tracer.make({
        span: (...args: Parameters<Tracer.Tracer["span"]>) => {
          const span = native.span(...args)
          spans.push(span)
          return span
        },
        context: native.context
      })
      const g = fakeClient({ candidates: [{ content: { parts: [{ text: "ok" }] }, finishReason: "STOP" }] })
      const o = fakeClient(chatCompletion)
      yield* Effect.flatMap(Gemini.make({ baseUrl: "https://g.example/v1beta", apiKey: Redacted.make(canary) }), (x) =>
        x.generate(request("gemini-x"))
      ).pipe(Effect.provide(g.layer), Effect.withTracer(capturing))
      yield* Effect.flatMap(OpenAi.make({ baseUrl: "https://o.example/v1", apiKey: Redacted.make(canary) }), (x) =>
        x.generate(request("m"))
      ).pipe(Effect.provide(o.layer), Effect.withTracer(capturing))
      const attributes = spans.flatMap((span) => [...span.attributes.entries()])
      assert.isTrue(attributes.some(([key]) => key === "http.request.header.x-goog-api-key"))
      assert.isFalse(attributes.some(([, value]) => String(value).includes(canary)))
    })
  )
})
