/**
 * The embeddings wire formats of the mock provider server: OpenAI `POST /v1/embeddings` and Gemini
 * `:embedContent` / `:batchEmbedContents`. A scripted success answers one deterministic vector per
 * input (a hash of its text), of the length the request asks for (`dimensions`,
 * `outputDimensionality`), else {@link defaultDimensions}. Errors, latency, headers, drops and raw
 * bodies are scripted as for every other route.
 *
 * @internal
 */
import type { Provider, Success } from "./mockScript.js"
import { isObject, modelOf } from "./wire.js"

/** Vector length when the request names none. @internal */
export const defaultDimensions = 8

const field = (value: unknown, key: string): unknown => (isObject(value) ? value[key] : undefined)

/**
 * The mock's vector for `text`: `dimensions` numbers in [-0.5, 0.5), 4 decimals, from an FNV-1a
 * hash of the text, so the same text always gets the same vector.
 *
 * @internal
 */
export const vectorFor = (text: string, dimensions: number): Array<number> => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  const out: Array<number> = []
  for (let k = 0; k < dimensions; k++) {
    h ^= h >>> 13
    h = Math.imul(h, 0x5bd1e995)
    h ^= h >>> 15
    out.push(Math.round(((h >>> 0) / 4_294_967_296 - 0.5) * 10_000) / 10_000)
  }
  return out
}

const dimensionsOf = (value: unknown): number =>
  typeof value === "number" && Number.isInteger(value) && value > 0 && value <= 65_536 ? value : defaultDimensions

const textOfContent = (content: unknown): string => {
  const parts = field(content, "parts")
  return Array.isArray(parts) ? parts.map((p) => String(field(p, "text") ?? "")).join("") : ""
}

/**
 * Which embeddings endpoint a request path is, if any.
 *
 * @internal
 */
export const embeddingsEndpoint = (
  provider: Provider,
  url: string
): "openai" | "gemini-single" | "gemini-batch" | undefined => {
  const path = url.split("?")[0] ?? ""
  if (provider === "openai" && path.endsWith("/embeddings")) return "openai"
  if (provider === "gemini" && path.endsWith(":batchEmbedContents")) return "gemini-batch"
  if (provider === "gemini" && path.endsWith(":embedContent")) return "gemini-single"
  return undefined
}

/**
 * The JSON body of a scripted success on an embeddings endpoint, or `undefined` when the request
 * is not an embeddings request. OpenAI reports `usage.prompt_tokens` (the script's `usage.input`,
 * default 12; `usage: null` for none); Gemini reports no usage, as the real API.
 *
 * @internal
 */
export const embeddingBody = (
  provider: Provider,
  request: { readonly url: string; readonly body: unknown; readonly model: string | undefined },
  success: Success
): string | undefined => {
  const endpoint = embeddingsEndpoint(provider, request.url)
  switch (endpoint) {
    case undefined:
      return undefined
    case "openai": {
      const input = field(request.body, "input")
      const texts = Array.isArray(input)
        ? input.map((x) => (typeof x === "string" ? x : JSON.stringify(x)))
        : [String(input ?? "")]
      const dimensions = dimensionsOf(field(request.body, "dimensions"))
      const usage = success.usage === null ? undefined : (success.usage?.input ?? 12)
      return JSON.stringify({
        object: "list",
        data: texts.map((text, index) => ({ object: "embedding", index, embedding: vectorFor(text, dimensions) })),
        model: modelOf("openai", success, request.model),
        ...(usage === undefined ? {} : { usage: { prompt_tokens: usage, total_tokens: usage } })
      })
    }
    case "gemini-single":
      return JSON.stringify({
        embedding: {
          values: vectorFor(
            textOfContent(field(request.body, "content")),
            dimensionsOf(field(request.body, "outputDimensionality"))
          )
        }
      })
    case "gemini-batch": {
      const requests = field(request.body, "requests")
      const list = Array.isArray(requests) ? requests : []
      return JSON.stringify({
        embeddings: list.map((r) => ({
          values: vectorFor(textOfContent(field(r, "content")), dimensionsOf(field(r, "outputDimensionality")))
        }))
      })
    }
  }
}
