/**
 * Renders mock behaviours into each provider's wire format: the per-provider modules (`chatWire`,
 * `anthropicWire`, `geminiWire`, `responsesWire`) over the shared pieces of `wire`, and the two
 * choices that span providers (the requested schema, the error frames after HTTP 200). Pure
 * functions; the server in `MockProviderServer.ts` adds timing and faults.
 *
 * @internal
 */
import type { ErrorSpec, Provider } from "./mockScript.js"
import { responsesErrorFrames, responsesRequestedSchema } from "./responsesWire.js"
import { errorObject, isObject, sse } from "./wire.js"

export { anthropicBody, anthropicSse } from "./anthropicWire.js"
export { openAiBody, openAiSse } from "./chatWire.js"
export { geminiBody, geminiSse } from "./geminiWire.js"
export type { SseAnswer } from "./wire.js"
export { defaultText, errorBody, exampleFor } from "./wire.js"

/**
 * The JSON Schema of a structured-output request, in any of the wire formats.
 *
 * @internal
 */
export const requestedSchema = (body: unknown): unknown => {
  if (!isObject(body)) return undefined
  const responseFormat = body.response_format
  if (isObject(responseFormat) && isObject(responseFormat.json_schema)) return responseFormat.json_schema.schema
  const outputConfig = body.output_config
  if (isObject(outputConfig) && isObject(outputConfig.format)) return outputConfig.format.schema
  const generationConfig = body.generationConfig
  if (isObject(generationConfig)) return generationConfig.responseJsonSchema ?? generationConfig.responseSchema
  return responsesRequestedSchema(body)
}

/**
 * Frames of an error after HTTP 200. OpenAI sends `data: {"error": …}`; vLLM-style servers add
 * `data: [DONE]`; Anthropic sends `event: error`; Gemini a bare JSON object (no `data:`).
 *
 * @internal
 */
export const streamErrorFrames = (provider: Provider, spec: ErrorSpec, code: number): Array<string> => {
  const error = errorObject(provider, code, spec)
  switch (provider) {
    case "openai":
      return [sse({ error })]
    case "openai-responses":
      return responsesErrorFrames(spec, code)
    case "openai-compatible":
      return [sse({ error }), sse("[DONE]")]
    case "anthropic":
      return [sse({ type: "error", error }, "error")]
    case "gemini":
      return [JSON.stringify({ error })]
  }
}
