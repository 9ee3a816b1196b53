/**
 * OpenAI embeddings wire format (`POST {baseUrl}/embeddings`): `{ model, input: [...],
 * encoding_format: "float", dimensions? }` → `{ data: [{ index, embedding }], model, usage: {
 * prompt_tokens } }`. Errors are classified as for Chat Completions.
 *
 * @internal
 */
import type { CodecSettings } from "./adapter.js"
import { HttpClientRequest } from "@effect/platform"
import type { EmbedRequest } from "@modelgate/core/ProviderAdapter"
import { Either } from "effect"
import { modelVersionOf, requestIdOf } from "./bounded.js"
import { classifyError, classifyErrorAfter200, errorObject } from "./chatCompletionsErrors.js"
import { field, firstHeader, isRecord } from "./classify.js"
import type { EmbedCodec } from "./embed.js"
import { vectorsOf } from "./embed.js"
import { makeUsage } from "./usage.js"

/** The request body. @internal */
export const requestBody = (request: EmbedRequest): Record<string, unknown> => ({
  model: request.target.model,
  input: request.inputs,
  encoding_format: "float",
  ...(request.dimensions === undefined ? {} : { dimensions: request.dimensions })
})

/** @internal */
export interface Settings extends CodecSettings {
  /** The full endpoint URL (`…/v1/embeddings`). */
  readonly url: string
}

/** @internal */
export const codec = (settings: Settings): EmbedCodec => ({
  provider: settings.provider,
  echo: settings.echo,
  build: (request) =>
    HttpClientRequest.post(settings.url).pipe(
      settings.authorize,
      HttpClientRequest.accept("application/json"),
      HttpClientRequest.bodyUnsafeJson(requestBody(request))
    ),
  requestId: (headers) => requestIdOf(firstHeader(headers, ["x-request-id", "request-id"])),
  classifyError: classifyError(settings.provider),
  decode: (body, meta) => {
    const error = errorObject(body)
    if (error !== undefined) return Either.left(classifyErrorAfter200(settings.provider, error, meta))
    const data = field(body, "data")
    // Items carry their input's index; answered in order, put in order when not.
    const items = Array.isArray(data)
      ? data.every((d, i) => field(d, "index") === undefined || field(d, "index") === i)
        ? data
        : [...data].sort((a, b) => Number(field(a, "index")) - Number(field(b, "index")))
      : data
    return Either.map(
      vectorsOf(settings.provider, items, (item) => field(item, "embedding"), meta),
      (vectors) => {
        const usage = field(body, "usage")
        const prompt = field(usage, "prompt_tokens")
        const model = field(body, "model")
        return {
          vectors,
          usage: isRecord(usage)
            ? makeUsage({ inputTokens: typeof prompt === "number" ? prompt : undefined, outputTokens: 0 })
            : undefined,
          modelVersion: modelVersionOf(typeof model === "string" ? model : undefined),
          requestId: meta.requestId,
          httpStatus: meta.httpStatus
        }
      }
    )
  }
})
