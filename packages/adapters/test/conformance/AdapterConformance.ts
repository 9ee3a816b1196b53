/**
 * The adapter conformance suite: the wire scenarios every provider adapter must pass against the
 * mock provider server, written once and parametrised by a {@link Descriptor}. A provider's test
 * file calls {@link describeAdapter} with its descriptor (how to build the adapter, its auth header,
 * its classification rows, its error events, …) and adds its provider-specific cases (exact request
 * bodies, finish-reason vocabulary, provider-only retry hints).
 *
 * It lives next to the adapters and uses the mock server of `@modelgate/testing` (a dev dependency
 * of `@modelgate/adapters`; `@modelgate/testing` does not depend on the adapters). The tests that
 * need both the adapters and more — the gateway end to end, the vendor SDKs' fidelity to the mock —
 * are in `examples/test`.
 */
import type { HttpClient } from "@effect/platform"
import type { HttpTransport } from "@modelgate/adapters/HttpTransport"
import { assert, describe, layer } from "@effect/vitest"
import type { Vitest } from "@effect/vitest"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { OptionName } from "@modelgate/core/ModelOptions"
import { ownedFields, providerOptionsProblems, RequestOptions } from "@modelgate/core/ModelOptions"
import type { FinishReason } from "@modelgate/core/ModelResult"
import type { ProviderAdapter } from "@modelgate/core/ProviderAdapter"
import { Duration, Effect, Schema, Stream } from "effect"
import type { Redacted } from "effect"
import type { Behavior, ErrorSpec, Provider } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import {
  answerSchema,
  apiKey,
  assertKeyOnlyIn,
  assertUsage,
  collect,
  collectFailure,
  lastRequestFor,
  leaks,
  lookupTool,
  recordOf,
  representativeRequest,
  simpleRequest,
  testLayerWith,
  textOf,
  type TransportCase,
  transports
} from "../adapters-fixtures.js"

/** The test methods a provider file registers its own cases with (one mock server per file). */
export type Methods = Vitest.MethodsNonLive<MockProviderServer | HttpClient.HttpClient | HttpTransport, true>

/** The adapter's `generate` and `stream`, as the adapters' `make` return them. */
export type Adapter = Omit<ProviderAdapter, "provider">

/** The options every adapter's `make` takes. */
export interface AdapterOptions {
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string>
  readonly maxResponseBytes?: number | undefined
}

/** One row of a provider's classification table (providers.md §9): an HTTP error and its class. */
export interface ClassificationRow {
  readonly name: string
  readonly status: number
  /** Fields of the provider's error envelope. */
  readonly error?: ErrorSpec
  readonly headers?: Record<string, string>
  /** A raw body instead of the envelope (a proxy's HTML page, an old server's flat error). */
  readonly body?: string
  /** Content type of `body`. Default `application/json`. */
  readonly contentType?: string
  readonly kind: ProviderError["kind"]
  readonly processed: "no" | "maybe"
  /** The provider code the error carries. */
  readonly code?: string
  /** The retry hint; without it the error must carry none. */
  readonly retryAfterMs?: number
}

/** One classification row: the answer (`status`, plus in `extra` its envelope, headers or raw body, and the expected code or hint) and the class it must get. */
export const row = (
  name: string,
  status: number,
  kind: ProviderError["kind"],
  processed: ClassificationRow["processed"],
  extra: Omit<ClassificationRow, "name" | "status" | "kind" | "processed"> = {}
): ClassificationRow => ({ name, status, kind, processed, ...extra })

/** The sampling options every wire but Anthropic's carries (with thinking, Anthropic takes temperature 1 only). */
export const sampling = { temperature: 0.3, topP: 0.9, seed: 42 } as const

/**
 * Provider options every adapter must drop whatever it is given: the gateway owns the model, the
 * stream flag and the output cap; credentials, URLs and headers are configuration.
 */
export const hostileProviderOptions: Readonly<Record<string, unknown>> = {
  model: "evil-model",
  api_key: "sk-evil",
  baseURL: "https://evil.example/v1",
  headers: { authorization: "Bearer evil" },
  stream: false,
  max_tokens: 1
}

/** An error event after HTTP 200, in the provider's own vocabulary, and its class. */
export interface StreamErrorCase {
  readonly name: string
  readonly error: ErrorSpec
  /** Status inside the event (Gemini, vLLM). */
  readonly code?: number
  readonly kind: ProviderError["kind"]
  readonly providerCode?: string
  readonly retryAfterMs?: number
}

/** How a provider adapter is built and what it reports, for the shared cases. */
export interface Descriptor {
  /** Mock server route (and the provider name in requests). */
  readonly provider: Provider
  /** The adapter's `make`. */
  readonly make: (options: AdapterOptions) => Effect.Effect<Adapter, never, HttpClient.HttpClient>
  /** The one header that carries the key, and its value for the canary key. */
  readonly auth: { readonly header: string; readonly value: string }
  /** The model version reported for a success scripted with `model` and a system fingerprint. */
  readonly modelVersion: (model: string, fingerprint: string) => string
  /** The tool call id reported for a call the wire gives `wireId` (Gemini has no ids: positional). */
  readonly toolCallId: (wireId: string, index: number) => string
  /** How the provider refuses, as scripted, and the finish reason it maps to. */
  readonly refusal: { readonly behavior: Behavior; readonly finishReason: FinishReason }
  /** What a stream ends with when complete (for names): `[DONE]`, `message_stop`, a finishReason. */
  readonly terminator: string
  /** Content frames the mock sends before the first text delta (Anthropic's `content_block_start`). */
  readonly framesBeforeText: number
  /** The stream reports usage before content (Anthropic's `message_start`), so errors mid-stream carry it. */
  readonly usageBeforeContent: boolean
  readonly classification: ReadonlyArray<ClassificationRow>
  readonly streamErrors: ReadonlyArray<StreamErrorCase>
  /** Sampling and provider options: every option the adapter maps, and the wire fields they become. */
  readonly options: OptionsCase
}

/** Every neutral option an adapter maps, set at once, and what the recorded body must hold. */
export interface OptionsCase {
  /** Every option the wire format carries (a combination the provider accepts). */
  readonly request: RequestOptions
  /** Allowed provider options, plus fields the adapter must never send whatever it is given. */
  readonly providerOptions: Readonly<Record<string, unknown>>
  /** Fields the recorded body holds (compared as a subset), for a request with one tool. */
  readonly wire: (model: string) => Record<string, unknown>
  /** Fields of `providerOptions` that must not reach the wire (gateway-owned, not allowed, secrets). */
  readonly neverSent: ReadonlyArray<string>
  /** Options the wire format has no field for: refused before anything is sent. */
  readonly unmappable: ReadonlyArray<OptionName>
}

const alphabet = "abcdefghijklmnopqrstuvwxyz"

const decodeOptions = Schema.decodeUnknownSync(RequestOptions)

/** A valid value of each option, for the options an adapter refuses. */
const unmappableValues: RequestOptions = {
  temperature: 0.5,
  topP: 0.5,
  seed: 1,
  stop: ["END"],
  reasoningEffort: "low",
  reasoningBudget: 2048,
  parallelToolCalls: false,
  presencePenalty: 0.5,
  frequencyPenalty: 0.5,
  userId: "user-1"
}

/** The text a stream of `alphabet` in pieces of `size` delivers before its `afterChunks`-th frame. */
const textBefore = (descriptor: Descriptor, afterChunks: number, size: number) =>
  alphabet.slice(0, Math.max(0, afterChunks - descriptor.framesBeforeText) * size)

/** Retry hints every adapter reads from the standard headers, in the documented order. */
const headerHints: ReadonlyArray<{
  readonly name: string
  readonly headers: () => Record<string, string>
  readonly ms: number | { readonly above: number; readonly atMost: number }
}> = [
  {
    name: "retry-after-ms before retry-after",
    headers: () => ({ "retry-after-ms": "1500.5", "retry-after": "9" }),
    ms: 1501
  },
  // `retry-after-ms: 0` is a real hint (the Anthropic SDK treats it as absent).
  { name: "retry-after-ms: 0", headers: () => ({ "retry-after-ms": "0", "retry-after": "30" }), ms: 0 },
  { name: "retry-after in seconds", headers: () => ({ "retry-after": "2.5" }), ms: 2500 },
  {
    name: "retry-after as an HTTP date",
    headers: () => ({ "retry-after": new Date(Date.now() + 30_000).toUTCString() }),
    ms: { above: 25_000, atMost: 30_000 }
  },
  // Longer than 60 s is kept (openai-node would drop it).
  { name: "retry-after beyond 60 s", headers: () => ({ "retry-after": "120" }), ms: 120_000 }
]

/** Enqueues `behaviors` as the next answers to `model` of `provider` on the file's mock server. */
export const scriptFor =
  (provider: Descriptor["provider"]) =>
  (model: string, ...behaviors: ReadonlyArray<Behavior>) =>
    Effect.flatMap(MockProviderServer, (mock) => mock.enqueue(behaviors, { provider, model }))

/** The adapter `make` builds against the file's mock server, with the canary key. */
export const adapterFor = (provider: Descriptor["provider"], make: Descriptor["make"]) =>
  Effect.flatMap(MockProviderServer, (mock) => make({ baseUrl: mock.baseUrl(provider), apiKey }))

/** Sends the representative request (a conversation, one tool, a schema) through `adapter`; what the mock server recorded. */
export const sentRepresentative = (
  provider: Descriptor["provider"],
  adapter: Effect.Effect<Omit<ProviderAdapter, "provider">, never, MockProviderServer | HttpClient.HttpClient>
) =>
  Effect.gen(function* () {
    const subject = yield* adapter
    yield* scriptFor(provider)("body-model", MockProviderServer.success({ json: { a: "b" } }))
    yield* subject.generate(representativeRequest(provider, "body-model"))
    return yield* lastRequestFor("body-model")
  })

const titleOf = (descriptor: Descriptor, transport: TransportCase) =>
  `${descriptor.provider} adapter against the mock server (${transport.name})`

/**
 * Registers the conformance cases of `descriptor` and then `specific` (the provider's own cases)
 * under one mock server for the file, once over each transport.
 */
export const describeAdapter = (descriptor: Descriptor, specific: (it: Methods) => void): void => {
  for (const transport of transports) describeOver(transport, descriptor, specific)
}

const describeOver = (transport: TransportCase, descriptor: Descriptor, specific: (it: Methods) => void): void =>
  layer(testLayerWith(transport), { excludeTestServices: true })(titleOf(descriptor, transport), (it) => {
    const { provider } = descriptor
    const adapter = (options: { readonly maxResponseBytes?: number } = {}) =>
      Effect.flatMap(MockProviderServer, (mock) =>
        descriptor.make({ baseUrl: mock.baseUrl(provider), apiKey, ...options })
      )
    const script = scriptFor(provider)
    const request = (model: string, overrides: Parameters<typeof simpleRequest>[2] = {}) =>
      simpleRequest(provider, model, overrides)

    describe("conformance", () => {
      it.effect(`the key travels only in ${descriptor.auth.header}: no other header, the URL nor the body`, () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* subject.generate(request("auth-model"))
          const plain = yield* lastRequestFor("auth-model")
          yield* collect(subject, request("auth-model"))
          const streamed = yield* lastRequestFor("auth-model")
          assert.isTrue(streamed.stream)
          for (const recorded of [plain, streamed]) {
            assertKeyOnlyIn(recorded, descriptor.auth.header, descriptor.auth.value)
          }
        })
      )

      it.effect("reads text, usage with cached and reasoning tokens, model version and request id", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* script(
            "ok-model",
            MockProviderServer.success({
              text: "Hi there",
              usage: { input: 120, output: 40, cached: 64, reasoning: 16 },
              model: "ok-model-2026-05-01",
              systemFingerprint: "fp_abc",
              requestId: "req_123"
            })
          )
          const response = yield* subject.generate(request("ok-model"))
          assert.strictEqual(response.text, "Hi there")
          assert.strictEqual(response.finishReason, "stop")
          assert.isFalse(response.refusal)
          assert.deepStrictEqual(response.toolCalls, [])
          assert.strictEqual(response.requestId, "req_123")
          assert.strictEqual(response.httpStatus, 200)
          assert.strictEqual(response.modelVersion, descriptor.modelVersion("ok-model-2026-05-01", "fp_abc"))
          assertUsage(response.usage, {
            inputTokens: 120,
            cachedInputTokens: 64,
            outputTokens: 40,
            reasoningTokens: 16
          })
        })
      )

      it.effect("streams Started with the request id, the text deltas, and one Finish with usage", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* script(
            "stream-model",
            MockProviderServer.success({
              text: "The quick brown fox jumps over the lazy dog.",
              chunkSize: 7,
              usage: { input: 30, output: 11, cached: 10, reasoning: 3 },
              systemFingerprint: "fp_stream",
              requestId: "req_stream",
              ttftMs: 10,
              chunkDelayMs: 2
            })
          )
          const events = yield* collect(subject, request("stream-model"))
          assert.isTrue(events._tag === "Right")
          if (events._tag !== "Right") return
          assert.deepStrictEqual(events.right[0], { _tag: "Started", requestId: "req_stream", httpStatus: 200 })
          assert.strictEqual(textOf(events.right), "The quick brown fox jumps over the lazy dog.")
          assert.strictEqual(events.right.filter((e) => e._tag === "Finish").length, 1)
          const finish = events.right[events.right.length - 1]
          assert.isTrue(finish?._tag === "Finish")
          if (finish?._tag !== "Finish") return
          assert.strictEqual(finish.finishReason, "stop")
          assert.isFalse(finish.refusal)
          assert.strictEqual(finish.modelVersion, descriptor.modelVersion("stream-model", "fp_stream"))
          assertUsage(finish.usage, { inputTokens: 30, cachedInputTokens: 10, outputTokens: 11, reasoningTokens: 3 })
        })
      )

      it.effect("reads structured output as JSON text (generate and stream)", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          const json = { a: "b" }
          yield* script("json-model", MockProviderServer.success({ json }), MockProviderServer.success({ json }))
          const structured = request("json-model", {
            output: { name: "answer", jsonSchema: answerSchema, strict: true }
          })
          const response = yield* subject.generate(structured)
          assert.deepStrictEqual(JSON.parse(response.text ?? ""), json)
          const events = yield* collect(subject, structured)
          assert.isTrue(events._tag === "Right")
          if (events._tag !== "Right") return
          assert.deepStrictEqual(JSON.parse(textOf(events.right)), json)
        })
      )

      it.effect("reads tool calls (generate and stream)", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          const toolCalls = [{ id: "call_9", name: "lookup", arguments: { q: "order 7" } }]
          yield* script(
            "tool-model",
            MockProviderServer.success({ text: "", toolCalls }),
            MockProviderServer.success({ text: "", toolCalls, chunkSize: 5 })
          )
          const response = yield* subject.generate(request("tool-model"))
          assert.strictEqual(response.finishReason, "tool_calls")
          assert.deepStrictEqual(
            response.toolCalls.map((c) => ({ ...c })),
            [{ id: descriptor.toolCallId("call_9", 0), name: "lookup", arguments: '{"q":"order 7"}' }]
          )
          const events = yield* collect(subject, request("tool-model"))
          assert.isTrue(events._tag === "Right")
          if (events._tag !== "Right") return
          const deltas = events.right.flatMap((e) => (e._tag === "ToolCallDelta" ? [e] : []))
          assert.deepInclude(deltas[0], { index: 0, id: descriptor.toolCallId("call_9", 0), name: "lookup" })
          assert.strictEqual(deltas.map((d) => d.argumentsDelta).join(""), '{"q":"order 7"}')
          assert.deepInclude(events.right[events.right.length - 1], { _tag: "Finish", finishReason: "tool_calls" })
        })
      )

      it.effect(`reports a refusal as ${descriptor.refusal.finishReason} (generate and stream)`, () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* script("refusal-model", descriptor.refusal.behavior, descriptor.refusal.behavior)
          const response = yield* subject.generate(request("refusal-model"))
          assert.deepInclude(response, {
            refusal: true,
            finishReason: descriptor.refusal.finishReason,
            text: undefined
          })
          const events = yield* collect(subject, request("refusal-model"))
          assert.isTrue(events._tag === "Right")
          if (events._tag !== "Right") return
          assert.deepInclude(events.right[events.right.length - 1], {
            _tag: "Finish",
            finishReason: descriptor.refusal.finishReason,
            refusal: true
          })
          assert.strictEqual(textOf(events.right), "")
        })
      )

      describe(`classification table (providers.md §9, ${provider} rows)`, () => {
        for (const row of descriptor.classification) {
          it.effect(`${row.name} → ${row.kind}`, () =>
            Effect.gen(function* () {
              const subject = yield* adapter()
              const model = `table-${row.name.replace(/\W+/g, "-")}`
              const behavior = MockProviderServer.failure(row.status, {
                error: row.error,
                headers: row.headers,
                requestId: "req_err",
                body: row.body,
                contentType: row.contentType
              })
              yield* script(model, behavior, behavior)
              const error = yield* Effect.flip(subject.generate(request(model)))
              assert.deepInclude(error, {
                kind: row.kind,
                processed: row.processed,
                httpStatus: row.status,
                requestId: "req_err"
              })
              if (row.code !== undefined) assert.strictEqual(error.providerCode, row.code)
              assert.strictEqual(
                error.retryAfter === undefined ? undefined : Duration.toMillis(error.retryAfter),
                row.retryAfterMs
              )
              assert.isFalse(leaks(error))
              // Errors carry codes, never the provider's message.
              if (row.error?.message !== undefined) assert.isFalse(error.detail.includes(row.error.message))
              const streamed = yield* collectFailure(subject, request(model))
              assert.deepStrictEqual(streamed.events, [])
              assert.deepInclude(streamed.error, {
                kind: row.kind,
                processed: row.processed,
                httpStatus: row.status,
                requestId: "req_err"
              })
            })
          )
        }
      })

      it.effect(`retry hints from headers: ${headerHints.map((h) => h.name).join(", ")}`, () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          for (const hint of headerHints) {
            yield* script("retry-model", MockProviderServer.failure(429, { headers: hint.headers() }))
            const error = yield* Effect.flip(subject.generate(request("retry-model")))
            const ms = error.retryAfter === undefined ? undefined : Duration.toMillis(error.retryAfter)
            if (typeof hint.ms === "number") assert.strictEqual(ms, hint.ms, hint.name)
            else assert.isTrue(ms !== undefined && ms > hint.ms.above && ms <= hint.ms.atMost, `${hint.name}: ${ms}`)
          }
        })
      )

      for (const fault of descriptor.streamErrors) {
        it.effect(`an error event after 200 (${fault.name}) fails the stream as ${fault.kind}, maybe processed`, () =>
          Effect.gen(function* () {
            const subject = yield* adapter()
            const model = `midstream-${fault.name.replace(/\W+/g, "-")}`
            yield* script(
              model,
              MockProviderServer.success({
                text: alphabet,
                chunkSize: 5,
                streamEnd: { _tag: "Error", afterChunks: 2, error: fault.error, code: fault.code }
              })
            )
            const { events, error } = yield* collectFailure(subject, request(model))
            assert.strictEqual(events[0]?._tag, "Started")
            assert.strictEqual(textOf(events), textBefore(descriptor, 2, 5))
            assert.deepInclude(error, { kind: fault.kind, processed: "maybe", httpStatus: 200 })
            if (fault.providerCode !== undefined) assert.strictEqual(error.providerCode, fault.providerCode)
            if (fault.retryAfterMs !== undefined)
              assert.strictEqual(Duration.toMillis(error.retryAfter ?? Duration.zero), fault.retryAfterMs)
            if (descriptor.usageBeforeContent) assert.isDefined(error.usage)
            assert.isFalse(leaks(error))
          })
        )
      }

      it.effect(`a stream without ${descriptor.terminator} is stream_truncated; a dropped one is transport`, () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* script(
            "cut-model",
            MockProviderServer.success({
              text: alphabet,
              chunkSize: 5,
              streamEnd: { _tag: "Truncate", afterChunks: 5 }
            }),
            MockProviderServer.success({ text: alphabet, chunkSize: 5, streamEnd: { _tag: "Drop", afterChunks: 2 } })
          )
          const truncated = yield* collectFailure(subject, request("cut-model"))
          assert.strictEqual(textOf(truncated.events), textBefore(descriptor, 5, 5))
          assert.deepInclude(truncated.error, { kind: "stream_truncated", processed: "maybe", httpStatus: 200 })
          const dropped = yield* collectFailure(subject, request("cut-model"))
          assert.strictEqual(textOf(dropped.events), textBefore(descriptor, 2, 5))
          assert.deepInclude(dropped.error, { kind: "transport", processed: "maybe" })
        })
      )

      it.effect("a connection dropped before headers is transport maybe; connection refused is transport no", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* script("drop-model", MockProviderServer.drop())
          const dropped = yield* Effect.flip(subject.generate(request("drop-model")))
          assert.deepInclude(dropped, { kind: "transport", processed: "maybe" })
          const refused = yield* Effect.flatMap(descriptor.make({ baseUrl: "http://127.0.0.1:1/v1", apiKey }), (a) =>
            Effect.flip(a.generate(request("refused")))
          )
          assert.deepInclude(refused, { kind: "transport", processed: "no", providerCode: "ECONNREFUSED" })
          assert.isFalse(leaks(refused))
        })
      )

      it.effect("an empty answer and invalid JSON (body or stream frame) are invalid_output, maybe processed", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* script(
            "bad-output",
            MockProviderServer.success({ text: "" }),
            MockProviderServer.success({ invalidJson: true }),
            MockProviderServer.success({ streamEnd: { _tag: "InvalidJson", afterChunks: 1 } })
          )
          const empty = yield* Effect.flip(subject.generate(request("bad-output")))
          assert.deepInclude(empty, { kind: "invalid_output", processed: "maybe", httpStatus: 200 })
          const invalid = yield* Effect.flip(subject.generate(request("bad-output")))
          assert.deepInclude(invalid, { kind: "invalid_output", processed: "maybe", httpStatus: 200 })
          const { error } = yield* collectFailure(subject, request("bad-output"))
          assert.deepInclude(error, { kind: "invalid_output", processed: "maybe" })
        })
      )

      it.effect("bounds the response size (generate and stream)", () =>
        Effect.gen(function* () {
          const small = yield* adapter({ maxResponseBytes: 200 })
          const big = MockProviderServer.success({ text: "x".repeat(1000) })
          yield* script("big-model", big, big)
          const error = yield* Effect.flip(small.generate(request("big-model")))
          assert.deepInclude(error, { kind: "invalid_output", processed: "maybe" })
          const streamed = yield* collectFailure(small, request("big-model"))
          assert.deepInclude(streamed.error, { kind: "invalid_output", processed: "maybe" })
        })
      )

      it.effect("maps every sampling option and the allowed provider options onto the wire (generate and stream)", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          const { options } = descriptor
          const withOptions = request("options-model", {
            tools: [lookupTool],
            maxOutputTokens: 4096,
            options: options.request,
            providerOptions: options.providerOptions
          })
          yield* subject.generate(withOptions)
          const plain = yield* lastRequestFor("options-model")
          yield* collect(subject, withOptions)
          const streamed = yield* lastRequestFor("options-model")
          assert.isTrue(streamed.stream)
          for (const recorded of [plain, streamed]) {
            const body = recordOf(recorded.body)
            assert.deepInclude(body, options.wire("options-model"))
            for (const field of options.neverSent) assert.notProperty(body, field)
            assert.isFalse(recorded.rawBody.includes("evil.example"))
          }
          // The model a provider option names never replaces the target's.
          assert.strictEqual(plain.model, "options-model")
          // The allowlist the gateway checks workflows and commands against: allowed fields, valid values.
          const allowlist = subject.providerOptions ?? {}
          const allowed = Object.fromEntries(
            Object.entries(options.providerOptions).filter(([field]) => Object.hasOwn(allowlist, field))
          )
          assert.isAbove(Object.keys(allowed).length, 0)
          assert.deepStrictEqual(providerOptionsProblems(provider, allowed, allowlist), [])
          for (const field of Object.keys(allowlist)) assert.isFalse(ownedFields.has(field), field)
          for (const field of options.neverSent.filter((f) => Object.hasOwn(options.providerOptions, f))) {
            assert.lengthOf(
              providerOptionsProblems(provider, { [field]: options.providerOptions[field] }, allowlist),
              1
            )
          }
        })
      )

      it.effect(
        `options without a wire field are refused before sending: ${descriptor.options.unmappable.join(", ")}`,
        () =>
          Effect.gen(function* () {
            const subject = yield* adapter()
            const mock = yield* MockProviderServer
            for (const name of descriptor.options.unmappable) {
              const options = decodeOptions({ [name]: unmappableValues[name] })
              const before = (yield* mock.requests).length
              const error = yield* Effect.flip(subject.generate(request("unmappable-model", { options })))
              assert.deepInclude(error, { kind: "invalid_request", processed: "no" })
              assert.include(error.detail, name)
              const streamed = yield* collectFailure(subject, request("unmappable-model", { options }))
              assert.deepInclude(streamed.error, { kind: "invalid_request", processed: "no" })
              assert.strictEqual((yield* mock.requests).length, before)
            }
          })
      )

      it.effect("interrupting a stream aborts the request", () =>
        Effect.gen(function* () {
          const subject = yield* adapter()
          yield* script(
            "slow-model",
            MockProviderServer.success({ text: "a".repeat(64), chunkSize: 8, chunkDelayMs: 5_000 })
          )
          const start = Date.now()
          const events = yield* subject.stream(request("slow-model")).pipe(Stream.take(1), Stream.runCollect)
          assert.deepStrictEqual(
            [...events].map((e) => e._tag),
            ["Started"]
          )
          assert.isBelow(Date.now() - start, 2_000)
        })
      )
    })

    specific(it)
  })
