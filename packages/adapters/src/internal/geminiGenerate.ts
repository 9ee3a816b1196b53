/**
 * The Gemini Developer API wire format: `POST {baseUrl}/models/{model}:generateContent` and
 * `:streamGenerateContent?alt=sse`.
 *
 * @internal
 */
import { HttpClientRequest } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { ContentPart } from "@modelgate/core/ModelCommand"
import { ToolCall } from "@modelgate/core/ModelCommand"
import type { FinishReason, Usage } from "@modelgate/core/ModelResult"
import type { OptionName, ProviderOptionsAllowlist } from "@modelgate/core/ModelOptions"
import type { ProviderRequest, ProviderResponse, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Either, Schema } from "effect"
import type { Codec, CodecSettings } from "./adapter.js"
import { type AudioFormat, audioMediaTypes } from "./audio.js"
import type { Meta } from "./classify.js"
import { field, firstHeader, invalidOutput, isRecord, providerError } from "./classify.js"
import { modelVersionOf, requestIdOf } from "./bounded.js"
import { parseJson } from "./http.js"
import type { StreamMachine } from "./sse.js"
import { findBareError } from "./sse.js"
import { streamTruncated } from "./wireError.js"
import { addProviderOptions, firstSet, optionRefused, unmappable } from "./options.js"
import { makeUsage, sum, WireCount } from "./usage.js"
import { classifyError, classifyErrorAfter200 } from "./geminiGenerateErrors.js"
import { guard } from "./wireGuard.js"

/** @internal */
export interface Settings extends CodecSettings {
  /** API root including the version, e.g. `https://generativelanguage.googleapis.com/v1beta`. */
  readonly baseUrl: string
}

// ---------------------------------------------------------------------------------------------
// Request
// ---------------------------------------------------------------------------------------------

type Part = Record<string, unknown>

/** Gemini's media type of each audio format: the registered ones, but `audio/mp3` for mp3. */
const audioMimeTypes: Readonly<Record<AudioFormat, string>> = { ...audioMediaTypes, mp3: "audio/mp3" }

/** One part of a user message: text, an image (inline or by URL), audio or a file (`inlineData`). */
const userPart = (part: ContentPart): Part => {
  switch (part._tag) {
    case "text":
      return { text: part.text }
    case "audio":
      return { inlineData: { mimeType: audioMimeTypes[part.format], data: part.data } }
    case "file":
      return { inlineData: { mimeType: part.mediaType, data: part.data } }
    case "image": {
      const data = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(part.url)
      if (data !== null) return { inlineData: { mimeType: part.mediaType ?? data[1], data: data[2] } }
      return { fileData: { fileUri: part.url, mimeType: part.mediaType ?? "image/jpeg" } }
    }
  }
}

/** A tool result as the object `functionResponse.response` requires. @internal */
const toolResponse = (content: string): Record<string, unknown> => {
  const parsed = parseJson(content)
  if (Either.isRight(parsed) && isRecord(parsed.right)) return parsed.right
  return { result: Either.isRight(parsed) ? parsed.right : content }
}

/**
 * The model path segment: `models/x` and `x` both name model `x`.
 *
 * @internal
 */
export const modelPath = (model: string): string => encodeURIComponent(model.replace(/^models\//, ""))

/**
 * The JSON body for a neutral request.
 *
 * @internal
 */
export const requestBody = (
  request: ProviderRequest,
  provider: string
): Either.Either<Record<string, unknown>, ProviderError> => {
  const system: Array<Part> = []
  const contents: Array<{ role: "user" | "model"; parts: Array<Part> }> = []
  const push = (role: "user" | "model", parts: Array<Part>) => {
    if (parts.length === 0) return
    const last = contents[contents.length - 1]
    if (last !== undefined && last.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  for (const m of request.messages) {
    switch (m._tag) {
      case "system":
        system.push({ text: m.content })
        break
      case "user":
        push("user", typeof m.content === "string" ? [{ text: m.content }] : m.content.map(userPart))
        break
      case "assistant": {
        const parts: Array<Part> = m.content ? [{ text: m.content }] : []
        for (const call of m.toolCalls ?? []) {
          const args = parseJson(call.arguments === "" ? "{}" : call.arguments)
          if (Either.isLeft(args) || !isRecord(args.right)) {
            return Either.left(
              providerError({
                kind: "invalid_request",
                processed: "no",
                detail: `${provider}: an assistant tool call in the conversation has arguments that are not a JSON object`
              })
            )
          }
          parts.push({ functionCall: { name: call.name, args: args.right } })
        }
        push("model", parts)
        break
      }
      case "tool":
        push("user", [{ functionResponse: { name: m.name, response: toolResponse(m.content) } }])
        break
    }
  }
  const generationConfig: Record<string, unknown> = { maxOutputTokens: request.maxOutputTokens }
  if (request.output !== undefined) {
    generationConfig.responseMimeType = "application/json"
    generationConfig.responseJsonSchema = request.output.jsonSchema
  }
  const o = request.options
  if (o !== undefined) {
    const refused = firstSet(o, unmappableOptions)
    if (refused !== undefined) return Either.left(unmappable(provider, refused, "generateContent"))
    if (o.temperature !== undefined) generationConfig.temperature = o.temperature
    if (o.topP !== undefined) generationConfig.topP = o.topP
    if (o.seed !== undefined) generationConfig.seed = o.seed
    if (o.stop !== undefined) generationConfig.stopSequences = o.stop
    if (o.presencePenalty !== undefined) generationConfig.presencePenalty = o.presencePenalty
    if (o.frequencyPenalty !== undefined) generationConfig.frequencyPenalty = o.frequencyPenalty
    if (o.reasoningEffort !== undefined && o.reasoningBudget !== undefined) {
      return Either.left(optionRefused(provider, "reasoningEffort and reasoningBudget cannot be combined"))
    }
    if (o.reasoningBudget !== undefined) generationConfig.thinkingConfig = { thinkingBudget: o.reasoningBudget }
    if (o.reasoningEffort !== undefined) {
      generationConfig.thinkingConfig = { thinkingLevel: o.reasoningEffort.toUpperCase() }
    }
  }
  const body: Record<string, unknown> = {
    ...(system.length > 0 ? { systemInstruction: { parts: system } } : {}),
    contents,
    generationConfig
  }
  addProviderOptions(request.providerOptions, geminiProviderOptions, (field) =>
    field === "safetySettings" ? body : generationConfig
  )
  if (request.tools.length > 0) {
    body.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          parametersJsonSchema: tool.parameters
        }))
      }
    ]
  }
  if (request.toolChoice !== undefined) {
    body.toolConfig = {
      functionCallingConfig:
        typeof request.toolChoice !== "string"
          ? { mode: "ANY", allowedFunctionNames: [request.toolChoice.tool] }
          : { mode: request.toolChoice === "required" ? "ANY" : request.toolChoice === "none" ? "NONE" : "AUTO" }
    }
  }
  return Either.right(body)
}

/** Options generateContent has no field for. */
const unmappableOptions: ReadonlyArray<OptionName> = ["parallelToolCalls", "userId"]

const HarmCategory = Schema.Literal(
  "HARM_CATEGORY_HARASSMENT",
  "HARM_CATEGORY_HATE_SPEECH",
  "HARM_CATEGORY_SEXUALLY_EXPLICIT",
  "HARM_CATEGORY_DANGEROUS_CONTENT",
  "HARM_CATEGORY_CIVIC_INTEGRITY"
)

const HarmBlockThreshold = Schema.Literal(
  "HARM_BLOCK_THRESHOLD_UNSPECIFIED",
  "BLOCK_LOW_AND_ABOVE",
  "BLOCK_MEDIUM_AND_ABOVE",
  "BLOCK_ONLY_HIGH",
  "BLOCK_NONE",
  "OFF"
)

/**
 * The fields Gemini's `providerOptions` may set: `topK`, `responseLogprobs`, `logprobs` and
 * `mediaResolution` (sent in `generationConfig`), and `safetySettings` (top level).
 *
 * @internal
 */
export const geminiProviderOptions: ProviderOptionsAllowlist = {
  topK: Schema.Int.pipe(Schema.between(1, 1000)),
  responseLogprobs: Schema.Boolean,
  logprobs: Schema.Int.pipe(Schema.between(0, 20)),
  mediaResolution: Schema.Literal("MEDIA_RESOLUTION_LOW", "MEDIA_RESOLUTION_MEDIUM", "MEDIA_RESOLUTION_HIGH"),
  safetySettings: Schema.Array(Schema.Struct({ category: HarmCategory, threshold: HarmBlockThreshold })).pipe(
    Schema.maxItems(8)
  )
}

// ---------------------------------------------------------------------------------------------
// Wire schemas
// ---------------------------------------------------------------------------------------------

const PartWire = Schema.Struct({
  text: Schema.optional(Schema.NullOr(Schema.String)),
  thought: Schema.optional(Schema.NullOr(Schema.Boolean)),
  functionCall: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        id: Schema.optional(Schema.NullOr(Schema.String)),
        name: Schema.optional(Schema.NullOr(Schema.String)),
        args: Schema.optional(Schema.Unknown)
      })
    )
  )
})

/** A response or stream chunk as read (exported for the guard's tests). @internal */
export const ResponseWire = Schema.Struct({
  candidates: Schema.optional(
    Schema.NullOr(
      Schema.Array(
        Schema.Struct({
          finishReason: Schema.optional(Schema.NullOr(Schema.String)),
          content: Schema.optional(
            Schema.NullOr(Schema.Struct({ parts: Schema.optional(Schema.NullOr(Schema.Array(PartWire))) }))
          )
        })
      )
    )
  ),
  promptFeedback: Schema.optional(
    Schema.NullOr(Schema.Struct({ blockReason: Schema.optional(Schema.NullOr(Schema.String)) }))
  ),
  usageMetadata: Schema.optional(
    Schema.NullOr(
      Schema.Struct({
        promptTokenCount: WireCount,
        candidatesTokenCount: WireCount,
        thoughtsTokenCount: WireCount,
        cachedContentTokenCount: WireCount,
        toolUsePromptTokenCount: WireCount,
        /** Prompt tokens per modality (`TEXT`, `IMAGE`, `AUDIO`, `VIDEO`, `DOCUMENT`). */
        promptTokensDetails: Schema.optional(
          Schema.NullOr(
            Schema.Array(
              Schema.Struct({ modality: Schema.optional(Schema.NullOr(Schema.String)), tokenCount: WireCount })
            )
          )
        )
      })
    )
  ),
  modelVersion: Schema.optional(Schema.NullOr(Schema.String)),
  responseId: Schema.optional(Schema.NullOr(Schema.String))
})

type ResponseWire = typeof ResponseWire.Type

const isWire = guard(ResponseWire)

const toUsage = (usage: ResponseWire["usageMetadata"]): Usage | undefined =>
  usage == null
    ? undefined
    : makeUsage({
        inputTokens: sum(usage.promptTokenCount, usage.toolUsePromptTokenCount),
        cachedInputTokens: usage.cachedContentTokenCount,
        // candidatesTokenCount excludes thinking; our outputTokens include it.
        outputTokens: sum(usage.candidatesTokenCount, usage.thoughtsTokenCount),
        reasoningTokens: usage.thoughtsTokenCount,
        audioInputTokens: usage.promptTokensDetails?.find((d) => d.modality === "AUDIO")?.tokenCount
      })

const contentFilterReasons: ReadonlySet<string> = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII"
])
const invalidOutputReasons: ReadonlySet<string> = new Set([
  "MALFORMED_FUNCTION_CALL",
  "UNEXPECTED_TOOL_CALL",
  "TOO_MANY_TOOL_CALLS",
  "OTHER",
  "FINISH_REASON_UNSPECIFIED",
  "NO_IMAGE"
])

/**
 * Maps `finishReason`, or gives the error a finish reason stands for.
 *
 * @internal
 */
export const finishReason = (
  provider: string,
  raw: string,
  hasFunctionCall: boolean,
  meta: Meta,
  usage: Usage | undefined
): Either.Either<FinishReason, ProviderError> => {
  if (raw === "STOP") return Either.right(hasFunctionCall ? "tool_calls" : "stop")
  if (raw === "MAX_TOKENS") return Either.right("length")
  if (contentFilterReasons.has(raw) || raw.startsWith("IMAGE_")) return Either.right("content_filter")
  if (raw === "LANGUAGE") {
    return Either.left(
      providerError({
        kind: "invalid_request",
        processed: "maybe",
        httpStatus: meta.httpStatus,
        requestId: meta.requestId,
        providerCode: raw,
        usage,
        detail: `${provider}: unsupported language (finishReason LANGUAGE)`
      })
    )
  }
  if (invalidOutputReasons.has(raw)) {
    return Either.left(invalidOutput(provider, `finishReason ${raw}`, meta, usage))
  }
  return Either.right("other")
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

interface Accumulated {
  text: string | undefined
  calls: Array<{ id: string; name: string; arguments: string }>
}

const partsOf = (wire: ResponseWire) => wire.candidates?.[0]?.content?.parts ?? []

const accumulate = (into: Accumulated, wire: ResponseWire): Array<ProviderStreamEvent> => {
  const events: Array<ProviderStreamEvent> = []
  for (const part of partsOf(wire)) {
    if (part.thought === true) continue
    if (part.text != null && part.text !== "") {
      into.text = (into.text ?? "") + part.text
      events.push({ _tag: "TextDelta", text: part.text })
    }
    if (part.functionCall != null) {
      const index = into.calls.length
      const call = {
        id: part.functionCall.id ?? `call_${index}`,
        name: part.functionCall.name ?? "",
        arguments: JSON.stringify(part.functionCall.args ?? {})
      }
      into.calls.push(call)
      events.push({ _tag: "ToolCallDelta", index, id: call.id, name: call.name, argumentsDelta: call.arguments })
    }
  }
  return events
}

/** The outcome once the whole answer is known. @internal */
const conclude = (
  provider: string,
  acc: Accumulated,
  raw: string | undefined,
  blockReason: string | undefined,
  meta: Meta,
  usage: Usage | undefined
): Either.Either<{ readonly finishReason: FinishReason; readonly refusal: boolean }, ProviderError> => {
  if (raw === undefined) {
    // A blocked prompt: HTTP 200, no candidates, `promptFeedback.blockReason`.
    if (blockReason !== undefined) return Either.right({ finishReason: "content_filter", refusal: true })
    return Either.left(invalidOutput(provider, "response has no candidates", meta, usage))
  }
  const reason = finishReason(provider, raw, acc.calls.length > 0, meta, usage)
  if (Either.isLeft(reason)) return Either.left(reason.left)
  if ((reason.right === "stop" || reason.right === "other") && !acc.text && acc.calls.length === 0) {
    return Either.left(invalidOutput(provider, "the answer has no content parts", meta, usage))
  }
  return Either.right({ finishReason: reason.right, refusal: reason.right === "content_filter" })
}

/** @internal */
export const decodeResponse =
  (provider: string) =>
  (body: unknown, meta: Meta): Either.Either<ProviderResponse, ProviderError> => {
    const error = field(body, "error")
    if (isRecord(error)) return Either.left(classifyErrorAfter200(provider, error, meta))
    if (!isWire(body)) return Either.left(invalidOutput(provider, "unexpected response shape", meta))
    const wire = body
    const usage = toUsage(wire.usageMetadata)
    const acc: Accumulated = { text: undefined, calls: [] }
    accumulate(acc, wire)
    const candidate = wire.candidates?.[0]
    const raw = candidate === undefined ? undefined : (candidate.finishReason ?? "FINISH_REASON_UNSPECIFIED")
    const outcome = conclude(provider, acc, raw, wire.promptFeedback?.blockReason ?? undefined, meta, usage)
    if (Either.isLeft(outcome)) return Either.left(outcome.left)
    return Either.right({
      text: acc.text,
      toolCalls: acc.calls.map((call) => new ToolCall(call, { disableValidation: true })),
      finishReason: outcome.right.finishReason,
      refusal: outcome.right.refusal,
      usage,
      modelVersion: modelVersionOf(wire.modelVersion),
      requestId: meta.requestId ?? requestIdOf(wire.responseId),
      httpStatus: meta.httpStatus
    })
  }

/**
 * The stream machine. Gemini sends no terminator: the answer is complete when the body ends after
 * a chunk with a `finishReason` (or a blocked prompt); otherwise the stream was truncated.
 *
 * @internal
 */
export const streamMachine =
  (provider: string) =>
  (meta: Meta): StreamMachine => {
    const acc: Accumulated = { text: undefined, calls: [] }
    let raw: string | undefined
    let blockReason: string | undefined
    let usage: Usage | undefined
    let model: string | undefined
    return {
      onEvent(event) {
        const json = parseJson(event.data)
        if (Either.isLeft(json)) return invalidOutput(provider, "stream chunk is not JSON", meta, usage)
        const error = field(json.right, "error")
        if (isRecord(error)) return classifyErrorAfter200(provider, error, meta, usage)
        const wire = json.right
        if (!isWire(wire)) return invalidOutput(provider, "unexpected stream chunk shape", meta, usage)
        if (wire.usageMetadata != null) usage = toUsage(wire.usageMetadata)
        if (wire.modelVersion != null) model = wire.modelVersion
        if (wire.promptFeedback?.blockReason != null) blockReason = wire.promptFeedback.blockReason
        const finish = wire.candidates?.[0]?.finishReason
        if (finish != null) raw = finish
        const events = accumulate(acc, wire)
        // `usageMetadata` may ride every chunk; the last one is the count.
        if (wire.usageMetadata != null && usage !== undefined) events.push({ _tag: "Usage", usage })
        return events
      },
      onEnd(tail) {
        const bare = findBareError(tail)
        if (bare !== undefined) return classifyErrorAfter200(provider, bare, meta, usage)
        if (raw === undefined && blockReason === undefined) {
          return streamTruncated(provider, meta, usage, "stream ended before a finishReason")
        }
        const outcome = conclude(provider, acc, raw, blockReason, meta, usage)
        if (Either.isLeft(outcome)) return outcome.left
        return [{ _tag: "Finish", ...outcome.right, usage, modelVersion: modelVersionOf(model) }]
      }
    }
  }

/** @internal */
export const codec = (settings: Settings): Codec => {
  const root = settings.baseUrl.replace(/\/+$/, "")
  return {
    provider: settings.provider,
    echo: settings.echo,
    providerOptions: geminiProviderOptions,
    build: (request, stream) =>
      Either.map(requestBody(request, settings.provider), (body) =>
        HttpClientRequest.post(
          `${root}/models/${modelPath(request.target.model)}:${stream ? "streamGenerateContent" : "generateContent"}`
        ).pipe(
          stream ? HttpClientRequest.setUrlParam("alt", "sse") : (r) => r,
          settings.authorize,
          HttpClientRequest.accept(stream ? "text/event-stream" : "application/json"),
          HttpClientRequest.bodyUnsafeJson(body)
        )
      ),
    requestId: (headers) => requestIdOf(firstHeader(headers, ["x-request-id", "request-id"])),
    decodeResponse: decodeResponse(settings.provider),
    classifyError: classifyError(settings.provider),
    streamMachine: streamMachine(settings.provider)
  }
}
