/**
 * Gemini embeddings wire format (`POST {baseUrl}/models/{model}:batchEmbedContents`):
 * `{ requests: [{ model: "models/{model}", content: { parts: [{ text }] }, outputDimensionality? }] }`
 * → `{ embeddings: [{ values }] }`, in batches of at most 100 inputs. The Gemini Developer API
 * reports no usage for embeddings (the engine bills its estimate). Errors are classified as for
 * `generateContent`.
 *
 * @internal
 */
import type { CodecSettings } from "./adapter.js"
import { HttpClientRequest } from "@effect/platform"
import type { EmbedRequest } from "@modelgate/core/ProviderAdapter"
import { Either } from "effect"
import { requestIdOf } from "./bounded.js"
import { field, firstHeader, isRecord } from "./classify.js"
import type { EmbedCodec } from "./embed.js"
import { vectorsOf } from "./embed.js"
import { modelPath } from "./geminiGenerate.js"
import { classifyError, classifyErrorAfter200 } from "./geminiGenerateErrors.js"

/** Gemini's `taskType` of each neutral task. @internal */
export const taskTypes = {
  query: "RETRIEVAL_QUERY",
  document: "RETRIEVAL_DOCUMENT",
  similarity: "SEMANTIC_SIMILARITY",
  classification: "CLASSIFICATION",
  clustering: "CLUSTERING"
} as const

/** The request body. @internal */
export const requestBody = (request: EmbedRequest): Record<string, unknown> => {
  const model = `models/${request.target.model.replace(/^models\//, "")}`
  const taskType = request.task === undefined ? undefined : taskTypes[request.task]
  return {
    requests: request.inputs.map((text) => ({
      model,
      content: { parts: [{ text }] },
      ...(taskType === undefined ? {} : { taskType }),
      ...(request.dimensions === undefined ? {} : { outputDimensionality: request.dimensions })
    }))
  }
}

/** Most requests of one `batchEmbedContents` call (the API's limit). @internal */
export const maxBatch = 100

/** @internal */
export interface Settings extends CodecSettings {
  /** API root including the version (`…/v1beta`). */
  readonly baseUrl: string
}

/** @internal */
export const codec = (settings: Settings): EmbedCodec => {
  const root = settings.baseUrl.replace(/\/+$/, "")
  return {
    provider: settings.provider,
    echo: settings.echo,
    build: (request) =>
      HttpClientRequest.post(`${root}/models/${modelPath(request.target.model)}:batchEmbedContents`).pipe(
        settings.authorize,
        HttpClientRequest.accept("application/json"),
        HttpClientRequest.bodyUnsafeJson(requestBody(request))
      ),
    requestId: (headers) => requestIdOf(firstHeader(headers, ["x-request-id", "request-id"])),
    classifyError: classifyError(settings.provider),
    maxBatch,
    decode: (body, meta) => {
      const error = field(body, "error")
      if (isRecord(error)) return Either.left(classifyErrorAfter200(settings.provider, error, meta))
      return Either.map(
        vectorsOf(settings.provider, field(body, "embeddings"), (item) => field(item, "values"), meta),
        (vectors) => ({
          vectors,
          usage: undefined,
          modelVersion: undefined,
          requestId: meta.requestId,
          httpStatus: meta.httpStatus
        })
      )
    }
  }
}
