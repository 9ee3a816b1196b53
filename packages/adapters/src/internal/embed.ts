/**
 * Wires an embeddings codec (request building, response decoding, the provider's error
 * classification shared with `generate`) into a `ProviderAdapter`'s `embed`.
 *
 * @internal
 */
import type { Headers, HttpClientRequest } from "@effect/platform"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { Usage } from "@modelgate/core/ModelResult"
import type { EmbedRequest, EmbedResponse } from "@modelgate/core/ProviderAdapter"
import { Effect, Either } from "effect"
import type { Codec, Limits } from "./adapter.js"
import { echoChecked, exchangeJson, limitOr } from "./adapter.js"
import type { EchoRules } from "./echo.js"
import * as Echo from "./echo.js"
import type { Meta } from "./classify.js"
import { invalidOutput } from "./classify.js"
import type { Transport } from "./transport.js"

/**
 * Default bound of an embeddings response body: 64 MiB (2 048 vectors of 1 536 floats as JSON is
 * about 60 MiB). An adapter's `maxResponseBytes`, when given, applies instead.
 *
 * @internal
 */
export const defaultMaxEmbeddingResponseBytes = 64 * 1024 * 1024

/** @internal */
export interface EmbedCodec {
  readonly provider: string
  readonly build: (request: EmbedRequest) => HttpClientRequest.HttpClientRequest
  readonly requestId: (headers: Headers.Headers) => string | undefined
  /** Decodes a 2xx JSON body (an error object in it is an error after 200). */
  readonly decode: (body: unknown, meta: Meta) => Either.Either<EmbedResponse, ProviderError>
  /** The provider's classification of a non-2xx answer (the one `generate` uses). */
  readonly classifyError: Codec["classifyError"]
  /** Most inputs of one HTTP request; more are sent in consecutive batches within the attempt. */
  readonly maxBatch?: number | undefined
  /** What the provider's echoes (model version, request ids) are checked against (`echo.ts`). */
  readonly echo: EchoRules
}

/**
 * A vector from the wire: an array of finite numbers, else `undefined`. A plain loop: a response
 * holds millions of numbers.
 *
 * @internal
 */
export const vectorOf = (value: unknown): ReadonlyArray<number> | undefined => {
  if (!Array.isArray(value)) return undefined
  for (const x of value) if (typeof x !== "number" || !Number.isFinite(x)) return undefined
  return value
}

/**
 * Vectors from a list of wire items, each read by `pick`; a shape problem is `invalid_output`.
 *
 * @internal
 */
export const vectorsOf = (
  provider: string,
  items: unknown,
  pick: (item: unknown) => unknown,
  meta: Meta
): Either.Either<Array<ReadonlyArray<number>>, ProviderError> => {
  if (!Array.isArray(items)) return Either.left(invalidOutput(provider, "response has no embeddings", meta))
  const out: Array<ReadonlyArray<number>> = []
  for (const item of items) {
    const v = vectorOf(pick(item))
    if (v === undefined) return Either.left(invalidOutput(provider, "an embedding is not a list of numbers", meta))
    out.push(v)
  }
  return Either.right(out)
}

/**
 * Builds `embed` for a codec: one HTTP request per attempt (or, past the codec's `maxBatch`, one per
 * batch, in order, within the attempt), no retries (the engine's).
 *
 * @internal
 */
export const makeEmbed = (
  http: Transport,
  raw: EmbedCodec,
  limits: Limits
): ((request: EmbedRequest) => Effect.Effect<EmbedResponse, ProviderError>) => {
  const rules = raw.echo
  const codec = echoChecked(raw, rules)
  const provider = codec.provider
  const maxResponseBytes = limitOr(limits.maxResponseBytes, defaultMaxEmbeddingResponseBytes)
  const one = (request: EmbedRequest): Effect.Effect<EmbedResponse, ProviderError> =>
    exchangeJson(http, codec, codec.build(request), maxResponseBytes, codec.decode).pipe(
      Effect.map((answer) => Echo.checkAnswer(rules, request.target.model, answer)),
      Effect.mapError((error) => Echo.checkError(rules, error))
    )
  const maxBatch = codec.maxBatch
  if (maxBatch === undefined) return one
  return (request) => {
    if (request.inputs.length <= maxBatch) return one(request)
    const batches: Array<ReadonlyArray<string>> = []
    for (let i = 0; i < request.inputs.length; i += maxBatch) batches.push(request.inputs.slice(i, i + maxBatch))
    // Each batch must answer its own inputs, or the vectors of the whole would be misaligned.
    const batch = (inputs: ReadonlyArray<string>) =>
      Effect.flatMap(one({ ...request, inputs }), (answer) =>
        answer.vectors.length === inputs.length
          ? Effect.succeed(answer)
          : Effect.fail(
              invalidOutput(
                provider,
                `${answer.vectors.length} vectors for a batch of ${inputs.length} inputs`,
                { httpStatus: answer.httpStatus, requestId: answer.requestId },
                answer.usage
              )
            )
      )
    return Effect.map(
      Effect.forEach(batches, (inputs, k) =>
        // A later batch's failure comes after earlier batches were processed (and billed).
        k === 0
          ? batch(inputs)
          : Effect.mapError(batch(inputs), (e) =>
              e.processed === "maybe"
                ? e
                : new ProviderError({
                    kind: e.kind,
                    processed: "maybe",
                    httpStatus: e.httpStatus,
                    retryAfter: e.retryAfter,
                    requestId: e.requestId,
                    providerCode: e.providerCode,
                    usage: e.usage,
                    detail: e.detail
                  })
            )
      ),
      (answers) => combine(answers)
    )
  }
}

/** Answers of consecutive batches as one: vectors in order, usage summed when every batch reports it. */
const combine = (answers: ReadonlyArray<EmbedResponse>): EmbedResponse => {
  const vectors: Array<ReadonlyArray<number>> = []
  let inputTokens = 0
  let reported = true
  for (const a of answers) {
    for (const v of a.vectors) vectors.push(v)
    if (a.usage === undefined) reported = false
    else inputTokens += a.usage.inputTokens
  }
  const first = answers[0]
  const last = answers[answers.length - 1]
  return {
    vectors,
    usage: reported ? new Usage({ inputTokens, outputTokens: 0 }, { disableValidation: true }) : undefined,
    modelVersion: first?.modelVersion,
    requestId: first?.requestId,
    httpStatus: first?.httpStatus,
    rateLimit: last?.rateLimit
  }
}
