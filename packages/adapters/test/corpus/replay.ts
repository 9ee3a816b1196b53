/**
 * The replay harness of the conformance corpus: each recording (`<family>/<name>.http`, a raw HTTP
 * response) is served by a loopback server, cut at awkward byte boundaries, to the real adapter of
 * its family; {@link expectOutcome} checks the outcome against the recording's hand-written
 * expectation (`<name>.expect.json`), and {@link expectThroughGateway} checks what a gateway call
 * over the same adapter returns.
 */
import { readdirSync, readFileSync } from "node:fs"
import * as Http from "node:http"
import { fileURLToPath } from "node:url"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import type { HttpClient } from "@effect/platform"
import { assert } from "@effect/vitest"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as EffectAi from "@modelgate/adapters/effect-ai"
import * as Gemini from "@modelgate/adapters/gemini"
import * as OpenAi from "@modelgate/adapters/openai"
import * as OpenAiCompatible from "@modelgate/adapters/openai-compatible"
import { Budgets, CallRecorder, Concurrency, Health, ModelGateway } from "@modelgate/core"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ModelCommand, ToolDefinition } from "@modelgate/core/ModelCommand"
import * as ProviderAdapter from "@modelgate/core/ProviderAdapter"
import type { ProviderRequest, ProviderResponse, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Chunk, Context, Duration, Effect, Either, Layer, Option, Schema, Stream } from "effect"
import type { Scope } from "effect"
import { AnswerSoFar } from "../../src/internal/answerCheck.js"
import { apiKey, lookupTool, simpleRequest } from "../adapters-fixtures.js"

// ---------------------------------------------------------------------------------------------
// The corpus on disk
// ---------------------------------------------------------------------------------------------

const Usage = Schema.Struct({
  inputTokens: Schema.Number,
  cachedInputTokens: Schema.Number,
  outputTokens: Schema.Number,
  reasoningTokens: Schema.Number
})

/** The hand-written expectation of one recording. */
export const Expectation = Schema.Struct({
  why: Schema.String,
  request: Schema.Struct({
    stream: Schema.Boolean,
    workflow: Schema.Literal("text", "structured", "tools"),
    tools: Schema.optional(Schema.Array(Schema.String))
  }),
  ok: Schema.optional(
    Schema.Struct({
      text: Schema.optional(Schema.String),
      toolCalls: Schema.Array(Schema.Struct({ name: Schema.String, arguments: Schema.Unknown })),
      finishReason: Schema.String,
      refusal: Schema.optional(Schema.Boolean),
      usage: Schema.optional(Usage)
    })
  ),
  error: Schema.optional(
    Schema.Struct({
      kind: Schema.String,
      gateway: Schema.String,
      reason: Schema.optional(Schema.String),
      retryAfterMs: Schema.optional(Schema.Number),
      httpStatus: Schema.optional(Schema.Number)
    })
  )
})
/** @see {@link Expectation} */
export type Expectation = typeof Expectation.Type

/** One recorded HTTP response and its expectation. */
export interface Recording {
  readonly family: string
  readonly name: string
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
  readonly expect: Expectation
}

const corpusDir = fileURLToPath(new URL(".", import.meta.url))
const decodeExpectation = Schema.decodeUnknownSync(Schema.parseJson(Expectation))

/** Parses a raw `.http` recording: status line, headers, blank line, body (bytes as recorded). */
export const parseHttp = (raw: Buffer): Pick<Recording, "status" | "headers" | "body"> => {
  const end = raw.indexOf("\n\n")
  const head = raw.subarray(0, end).toString("utf8").split("\n")
  const status = Number((head[0] ?? "").split(" ")[1])
  const headers: Record<string, string> = {}
  for (const line of head.slice(1)) {
    const colon = line.indexOf(":")
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status, headers, body: raw.subarray(end + 2) }
}

/** Every recording of the corpus, by family directory. */
export const loadCorpus = (): ReadonlyArray<Recording> =>
  readdirSync(corpusDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((dir) =>
      readdirSync(`${corpusDir}${dir.name}`)
        .filter((file) => file.endsWith(".http"))
        .sort()
        .map((file) => {
          const name = file.slice(0, -".http".length)
          const base = `${corpusDir}${dir.name}/${name}`
          return {
            family: dir.name,
            name,
            ...parseHttp(readFileSync(`${base}.http`)),
            expect: decodeExpectation(readFileSync(`${base}.expect.json`, "utf8"))
          }
        })
    )

// ---------------------------------------------------------------------------------------------
// Byte boundaries
// ---------------------------------------------------------------------------------------------

/** How a body is cut into writes. */
export type Split = "whole" | "frames" | "utf8" | "bytes"

/**
 * The write boundaries of a body: `frames` cuts inside every event separator (`\n|\n`,
 * `\r|\n`) and after every `data`; `utf8` inside every multi-byte character and every 13 bytes;
 * `bytes` after every byte.
 */
export const pieces = (body: Buffer, split: Split): ReadonlyArray<Buffer> => {
  if (split === "whole" || body.length === 0) return [body]
  const cuts: Array<number> = []
  for (let i = 1; i < body.length; i++) {
    const byte = body[i] ?? 0
    const previous = body[i - 1] ?? 0
    if (split === "bytes") cuts.push(i)
    else if (split === "frames") {
      if ((previous === 0x0a || previous === 0x0d) && (byte === 0x0a || byte === 0x0d)) cuts.push(i)
      else if (body.subarray(i - 4, i).toString("latin1") === "data") cuts.push(i)
    } else if ((byte & 0xc0) === 0x80 || i % 13 === 0) cuts.push(i)
  }
  const out: Array<Buffer> = []
  let from = 0
  for (const cut of cuts) {
    out.push(body.subarray(from, cut))
    from = cut
  }
  out.push(body.subarray(from))
  return out
}

// ---------------------------------------------------------------------------------------------
// The loopback server
// ---------------------------------------------------------------------------------------------

/** The loopback server replaying the corpus: `GET|POST /<family>/<name>/<split>/…`. */
export class ReplayServer extends Context.Tag("corpus/ReplayServer")<
  ReplayServer,
  { readonly baseUrl: (recording: Recording, split: Split) => string }
>() {
  static readonly layer = (corpus: ReadonlyArray<Recording>) =>
    Layer.scoped(
      ReplayServer,
      Effect.gen(function* () {
        const byPath = new Map(corpus.map((r) => [`${r.family}/${r.name}`, r]))
        const server = yield* Effect.acquireRelease(
          Effect.async<Http.Server>((resume) => {
            const s = Http.createServer((req, res) => {
              const [family = "", name = "", split = "whole"] = (req.url ?? "").split("/").slice(1)
              const recording = byPath.get(`${family}/${name}`)
              req.resume()
              req.on("end", () => {
                if (recording === undefined) {
                  res.writeHead(599).end()
                  return
                }
                res.socket?.setNoDelay(true)
                res.writeHead(recording.status, { ...recording.headers })
                const parts = pieces(
                  recording.body,
                  split === "frames" || split === "utf8" || split === "bytes" ? split : "whole"
                )
                const writeFrom = (i: number): void => {
                  if (i >= parts.length) {
                    res.end()
                    return
                  }
                  res.write(parts[i])
                  setImmediate(() => writeFrom(i + 1))
                }
                writeFrom(0)
              })
            })
            s.listen(0, "127.0.0.1", () => resume(Effect.succeed(s)))
          }),
          (s) =>
            Effect.async<void>((resume) => {
              s.close(() => resume(Effect.void))
            })
        )
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        return {
          baseUrl: (recording: Recording, split: Split) =>
            `http://127.0.0.1:${port}/${recording.family}/${recording.name}/${split}`
        }
      })
    )
}

// ---------------------------------------------------------------------------------------------
// Adapters and requests
// ---------------------------------------------------------------------------------------------

/** The adapter a family's recordings are replayed through. */
export const adapterFor = (
  family: string,
  baseUrl: string
): Effect.Effect<Omit<ProviderAdapter.ProviderAdapter, "provider">, never, HttpClient.HttpClient | Scope.Scope> => {
  switch (family) {
    case "openai-chat":
      return OpenAi.make({ baseUrl, apiKey })
    case "anthropic":
      return Anthropic.make({ baseUrl, apiKey })
    case "gemini":
      return Gemini.make({ baseUrl, apiKey })
    case "openai-responses":
      return EffectAi.makeProviderAdapter(family, {
        model: (model) => OpenAiLanguageModel.layer({ model }),
        requestContext: (request) =>
          Context.make(OpenAiLanguageModel.Config, { max_output_tokens: request.maxOutputTokens })
      }).pipe(
        Effect.provide(
          OpenAiClient.layer({ apiUrl: baseUrl, apiKey }).pipe(Layer.provide(EffectAi.responsesWireCompat))
        )
      )
    default:
      return OpenAiCompatible.make({ id: family, baseUrl, apiKey })
  }
}

const toolNamed = (name: string) =>
  name === lookupTool.name
    ? lookupTool
    : new ToolDefinition({ name, description: `tool ${name}`, parameters: { type: "object" }, sideEffecting: false })

/** The neutral request of a recording's workflow. */
export const requestFor = (recording: Recording): ProviderRequest => {
  const { workflow, tools = [] } = recording.expect.request
  return simpleRequest(recording.family, "corpus-model", {
    tools: tools.map(toolNamed),
    toolChoice: tools.length > 0 ? "auto" : undefined,
    output: workflow === "structured" ? { name: "answer", jsonSchema: { type: "object" }, strict: false } : undefined
  })
}

// ---------------------------------------------------------------------------------------------
// Outcomes
// ---------------------------------------------------------------------------------------------

/** What a user gets from one adapter call. */
export type Outcome =
  | {
      readonly _tag: "ok"
      readonly text: string
      readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>
      readonly finishReason: string
      readonly refusal: boolean
      readonly usage: ProviderResponse["usage"]
    }
  | { readonly _tag: "error"; readonly error: ProviderError }

const fromResponse = (response: ProviderResponse): Outcome => ({
  _tag: "ok",
  text: response.text ?? "",
  toolCalls: response.toolCalls.map((call) => ({ name: call.name, arguments: call.arguments })),
  finishReason: response.finishReason,
  refusal: response.refusal,
  usage: response.usage
})

/** Folds stream events the way a client does: text concatenated, tool calls by index. */
export const fromEvents = (events: ReadonlyArray<ProviderStreamEvent>): Outcome | undefined => {
  const soFar = new AnswerSoFar()
  for (const event of events) {
    soFar.add(event)
    if (event._tag === "Finish") {
      return {
        _tag: "ok",
        text: soFar.text,
        toolCalls: [...soFar.calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call),
        finishReason: event.finishReason,
        refusal: event.refusal,
        usage: event.usage
      }
    }
  }
  return undefined
}

/** Replays one recording through the adapter; a hang (10 s) is a defect. */
export const replay = (
  recording: Recording,
  split: Split
): Effect.Effect<Outcome, never, ReplayServer | HttpClient.HttpClient> =>
  Effect.scoped(
    Effect.gen(function* () {
      const server = yield* ReplayServer
      const adapter = yield* adapterFor(recording.family, server.baseUrl(recording, split))
      const request = requestFor(recording)
      const run: Effect.Effect<Outcome, ProviderError> = recording.expect.request.stream
        ? Effect.flatMap(Stream.runCollect(adapter.stream(request)), (chunk) => {
            const outcome = fromEvents(Chunk.toReadonlyArray(chunk))
            return outcome === undefined ? Effect.dieMessage("stream ended without Finish") : Effect.succeed(outcome)
          })
        : Effect.map(adapter.generate(request), fromResponse)
      return yield* run.pipe(
        Effect.catchAll((error) => Effect.succeed<Outcome>({ _tag: "error", error })),
        // One-byte writes of the largest recordings take seconds: the bound is for a hang, not speed.
        Effect.timeoutFail({ duration: Duration.seconds(split === "bytes" ? 120 : 10), onTimeout: () => "hang" }),
        Effect.orDie
      )
    })
  )

const parsedOrRaw = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Asserts an adapter outcome against the recording's expectation. */
export const expectOutcome = (recording: Recording, outcome: Outcome): void => {
  const { ok, error } = recording.expect
  const label = `${recording.family}/${recording.name}`
  if (ok !== undefined) {
    if (outcome._tag === "error")
      assert.fail(`${label}: expected success, got ${outcome.error.kind}: ${outcome.error.detail}`)
    assert.strictEqual(outcome.text, ok.text ?? "", `${label}: text`)
    assert.deepStrictEqual(
      outcome.toolCalls.map((call) => ({ name: call.name, arguments: parsedOrRaw(call.arguments) })),
      ok.toolCalls.map((call) => ({ name: call.name, arguments: call.arguments })),
      `${label}: tool calls`
    )
    assert.strictEqual(outcome.finishReason, ok.finishReason, `${label}: finish reason`)
    if (ok.refusal !== undefined) assert.strictEqual(outcome.refusal, ok.refusal, `${label}: refusal`)
    if (ok.usage !== undefined) {
      assert.isDefined(outcome.usage, `${label}: usage`)
      assert.deepStrictEqual({ ...outcome.usage }, { ...ok.usage }, `${label}: usage`)
    }
  }
  if (error !== undefined) {
    if (outcome._tag === "ok") assert.fail(`${label}: expected ${error.kind}, got a success (${outcome.finishReason})`)
    assert.strictEqual(outcome.error.kind, error.kind, `${label}: error kind (${outcome.error.detail})`)
    const retryAfter = outcome.error.retryAfter === undefined ? undefined : Duration.toMillis(outcome.error.retryAfter)
    assert.strictEqual(retryAfter, error.retryAfterMs, `${label}: retry-after`)
    if (error.httpStatus !== undefined)
      assert.strictEqual(outcome.error.httpStatus, error.httpStatus, `${label}: status`)
  }
}

// ---------------------------------------------------------------------------------------------
// Through the gateway
// ---------------------------------------------------------------------------------------------

const AnyObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const gatewayConfig = (recording: Recording) => {
  const ref = `model://${recording.family}/corpus-model@eu`
  const { workflow } = recording.expect.request
  return {
    targets: [
      {
        ref,
        provider: recording.family,
        model: "corpus-model",
        regions: ["eu"],
        dataClasses: ["internal"],
        pricing: { inputPerMillion: 1, outputPerMillion: 2, pricingVersion: "p1" },
        capabilities: {
          contextWindow: 1_000_000,
          maxOutputTokens: 4096,
          tools: true,
          structuredOutput: { mode: "json_schema" }
        },
        limits: { maxAttempts: 1, perAttemptTimeout: 10_000 }
      }
    ],
    workflows: [
      {
        name: "corpus",
        policyVersion: "1",
        prompt: { id: "corpus", version: "1" },
        ...(workflow === "structured" ? { output: { schema: "AnyObject", schemaVersion: "1" } } : {}),
        route: [ref],
        timeout: 20_000,
        regions: ["eu"],
        dataClass: "internal",
        requires: { tools: workflow === "tools" }
      }
    ]
  }
}

/** What the gateway returns for the recording: its final result, or its failure. */
export const throughGateway = (
  recording: Recording
): Effect.Effect<
  Either.Either<
    { readonly finishReason: string; readonly text: string; readonly tools: ReadonlyArray<string> },
    { readonly _tag: string; readonly reason?: unknown; readonly source?: unknown }
  >,
  never,
  ReplayServer | HttpClient.HttpClient
> =>
  Effect.gen(function* () {
    const server = yield* ReplayServer
    const adapter = ProviderAdapter.layer(
      recording.family,
      adapterFor(recording.family, server.baseUrl(recording, "whole"))
    )
    const gateway = ModelGateway.layerJson(gatewayConfig(recording), { schemas: { AnyObject } }).pipe(
      Layer.provide(
        Layer.mergeAll(adapter, Budgets.layerOff, Concurrency.layerOff, Health.layerOff, CallRecorder.layerMemory)
      )
    )
    const tools = recording.expect.request.tools ?? []
    const command = Schema.decodeSync(ModelCommand)({
      workflow: "corpus",
      tenant: "acme",
      messages: [{ _tag: "user", content: "Replay." }],
      ...(tools.length > 0 ? { tools: tools.map((name) => Schema.encodeSync(ToolDefinition)(toolNamed(name))) } : {})
    })
    const call = recording.expect.request.stream
      ? Effect.flatMap(Stream.runLast(ModelGateway.stream(command)), (last) =>
          Option.isSome(last) && last.value._tag === "Final"
            ? Effect.succeed(last.value.result)
            : Effect.dieMessage("gateway stream ended without Final")
        )
      : ModelGateway.generate(command)
    const result = yield* call.pipe(
      Effect.map((r) => ({
        finishReason: r.finishReason,
        text: r.content.text ?? "",
        tools: r.content.toolCalls.map((c) => c.name)
      })),
      Effect.either,
      Effect.provide(gateway),
      Effect.timeoutFail({ duration: Duration.seconds(20), onTimeout: () => "hang" }),
      Effect.orDie
    )
    return Either.mapLeft(result, (e) => ({
      _tag: e._tag,
      ...("reason" in e ? { reason: e.reason } : {}),
      ...("source" in e ? { source: e.source } : {})
    }))
  })

/** Asserts the gateway's answer: success with the expected finish reason, or the expected failure class and reason. */
export const expectThroughGateway = (
  recording: Recording,
  result: Effect.Effect.Success<ReturnType<typeof throughGateway>>
): void => {
  const label = `${recording.family}/${recording.name} (gateway)`
  const { ok, error } = recording.expect
  // The gateway ends a refused answer as `Refusal` (README error table): the model's, or the filter's.
  if (ok !== undefined && (ok.finishReason === "refusal" || ok.finishReason === "content_filter")) {
    if (Either.isRight(result)) assert.fail(`${label}: expected Refusal, got a success`)
    else {
      assert.strictEqual(result.left._tag, "Refusal", label)
      assert.strictEqual(result.left.source, ok.finishReason === "refusal" ? "model" : "safety_filter", label)
    }
  } else if (ok !== undefined) {
    if (Either.isLeft(result)) assert.fail(`${label}: expected success, got ${JSON.stringify(result.left)}`)
    else {
      assert.strictEqual(result.right.finishReason, ok.finishReason, label)
      if (ok.toolCalls.length === 0) assert.strictEqual(result.right.text, ok.text ?? "", label)
      assert.deepStrictEqual(
        result.right.tools,
        ok.toolCalls.map((c) => c.name),
        label
      )
    }
  }
  if (error !== undefined) {
    if (Either.isRight(result)) assert.fail(`${label}: expected ${error.gateway}, got a success`)
    else {
      assert.strictEqual(result.left._tag, error.gateway, label)
      if (error.reason !== undefined) {
        assert.strictEqual(result.left.reason ?? result.left.source, error.reason, `${label}: reason`)
      }
    }
  }
}
