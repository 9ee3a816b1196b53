/**
 * Conversions between `@effect/ai` prompts, tools and tool choices and modelgate's
 * `ModelCommand` messages, tool definitions and tool choice — both ways.
 *
 * @internal
 */
import { type Prompt, Tool } from "@effect/ai"
import type { LanguageModel } from "@effect/ai"
import type { Message, ModelCommand, ToolChoice, ToolDefinition } from "@modelgate/core/ModelCommand"
import { Context, Either, Encoding } from "effect"
import { audioMediaTypes } from "../audio.js"

/** A command message in its encoded (JSON) form. @internal */
export type MessageInput = (typeof ModelCommand.Encoded)["messages"][number]

/** A tool definition in its encoded form. @internal */
export type ToolInput = typeof ToolDefinition.Encoded

/** JSON text of a value; `undefined` (a tool without a result) becomes `null`. */
const json = (value: unknown): string => JSON.stringify(value === undefined ? null : value)

/**
 * The URL of an image part: an https URL or a `data:` URL (bytes and bare base64 strings are
 * encoded as one). `image/*` becomes `image/jpeg` in a `data:` URL, as the providers need a type.
 */
const imageUrl = (part: Prompt.FilePart): string => {
  const mediaType = part.mediaType === "image/*" ? "image/jpeg" : part.mediaType
  if (part.data instanceof URL) return part.data.href
  if (part.data instanceof Uint8Array) return `data:${mediaType};base64,${Encoding.encodeBase64(part.data)}`
  if (part.data.startsWith("data:") || part.data.startsWith("https://")) return part.data
  return `data:${mediaType};base64,${part.data}`
}

/**
 * The messages of an `@effect/ai` prompt as command messages: system, user (text and images),
 * assistant (text and the tool calls it made), tool (one message per result, the result as JSON).
 * Reasoning parts and provider-executed tool results are not sent back. A non-image file is
 * refused (`Left` with a content-free reason).
 *
 * @internal
 */
export const messagesFromPrompt = (prompt: Prompt.Prompt): Either.Either<Array<MessageInput>, string> => {
  const out: Array<MessageInput> = []
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        out.push({ _tag: "system", content: message.content })
        break
      case "user": {
        const parts: Array<{ _tag: "text"; text: string } | { _tag: "image"; url: string; mediaType?: string }> = []
        for (const part of message.content) {
          if (part.type === "text") parts.push({ _tag: "text", text: part.text })
          else if (part.mediaType.startsWith("image/"))
            parts.push({
              _tag: "image",
              url: imageUrl(part),
              ...(part.mediaType === "image/*" ? {} : { mediaType: part.mediaType })
            })
          else return Either.left(`unsupported file type ${part.mediaType.slice(0, 100)} in a user message`)
        }
        const [first] = parts
        out.push({
          _tag: "user",
          content: parts.length === 1 && first !== undefined && first._tag === "text" ? first.text : parts
        })
        break
      }
      case "assistant": {
        let text = ""
        const toolCalls: Array<{ id: string; name: string; arguments: string }> = []
        for (const part of message.content) {
          if (part.type === "text") text += part.text
          else if (part.type === "tool-call" && !part.providerExecuted)
            toolCalls.push({ id: part.id, name: part.name, arguments: json(part.params) })
          else if (part.type === "file") return Either.left("files in assistant messages are not supported")
        }
        if (text === "" && toolCalls.length === 0) break
        out.push({
          _tag: "assistant",
          ...(text === "" ? {} : { content: text }),
          ...(toolCalls.length === 0 ? {} : { toolCalls })
        })
        break
      }
      case "tool":
        for (const part of message.content) {
          out.push({ _tag: "tool", toolCallId: part.id, name: part.name, content: json(part.result) })
        }
        break
    }
  }
  return Either.right(out)
}

/**
 * A user-defined `@effect/ai` tool as a command tool definition: the JSON Schema of its parameters,
 * its description, and `sideEffecting` unless the tool is annotated `Tool.Readonly` (so the
 * gateway never retries a call that may have acted). Provider-defined tools (web search, code
 * interpreter) run at one provider and cannot be routed: `Left`.
 *
 * @internal
 */
export const toolFromEffectAi = (tool: Tool.Any): Either.Either<ToolInput, string> => {
  if (Tool.isProviderDefined(tool)) return Either.left(`provider-defined tool ${tool.name} cannot be routed`)
  const ast = tool.parametersSchema.ast
  return Either.right({
    name: tool.name,
    description: tool.description ?? Tool.getDescriptionFromSchemaAst(ast) ?? "",
    parameters: { ...Tool.getJsonSchemaFromSchemaAst(ast) },
    sideEffecting: !Context.get(tool.annotations, Tool.Readonly)
  })
}

/**
 * An `@effect/ai` tool choice as a command's. `oneOf` keeps its mode (the language model has already
 * narrowed the tools to the allowed ones).
 *
 * @internal
 */
export const toolChoiceFromEffectAi = (choice: LanguageModel.ToolChoice<string>): typeof ToolChoice.Encoded => {
  if (typeof choice === "string") return choice
  if ("tool" in choice) return { tool: choice.tool }
  return choice.mode ?? "auto"
}

// ---------------------------------------------------------------------------------------------
// The other way: a provider request as an @effect/ai prompt
// ---------------------------------------------------------------------------------------------

const parseOr = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const dataUrl = /^data:([^;,]+);base64,(.*)$/s

/** An image URL as an `@effect/ai` file part's data: bytes for a `data:` URL, else a URL. */
const imageData = (url: string): Either.Either<Uint8Array | URL, string> => {
  const match = dataUrl.exec(url)
  if (match !== null) {
    const decoded = Encoding.decodeBase64(match[2] ?? "")
    return Either.isRight(decoded) ? Either.right(decoded.right) : Either.left("an image data URL is not base64")
  }
  return URL.canParse(url) ? Either.right(new URL(url)) : Either.left("an image URL does not parse")
}

/**
 * Command messages as an `@effect/ai` prompt (encoded messages, decoded by `Prompt` itself).
 * Tool-call arguments and tool results are parsed JSON when they are JSON, else text.
 *
 * @internal
 */
export const promptFromMessages = (
  messages: ReadonlyArray<Message>
): Either.Either<Array<Prompt.MessageEncoded>, string> => {
  const out: Array<Prompt.MessageEncoded> = []
  for (const message of messages) {
    switch (message._tag) {
      case "system":
        out.push({ role: "system", content: message.content })
        break
      case "user": {
        if (typeof message.content === "string") {
          out.push({ role: "user", content: message.content })
          break
        }
        const content: Array<Prompt.UserMessagePartEncoded> = []
        for (const part of message.content) {
          if (part._tag === "text") {
            content.push({ type: "text", text: part.text })
            continue
          }
          // Audio and files as file parts of bytes; the provider package maps them (the Responses
          // API sends a PDF as `input_file`).
          if (part._tag === "audio" || part._tag === "file") {
            const bytes = Encoding.decodeBase64(part.data)
            if (Either.isLeft(bytes)) return Either.left(`${part._tag} data is not base64`)
            content.push({
              type: "file",
              mediaType: part._tag === "audio" ? audioMediaTypes[part.format] : part.mediaType,
              data: bytes.right,
              ...(part._tag === "file" && part.filename !== undefined ? { fileName: part.filename } : {})
            })
            continue
          }
          const data = imageData(part.url)
          if (Either.isLeft(data)) return Either.left(data.left)
          const mediaType = part.mediaType ?? dataUrl.exec(part.url)?.[1] ?? "image/*"
          content.push({ type: "file", mediaType, data: data.right })
        }
        out.push({ role: "user", content })
        break
      }
      case "assistant": {
        const content: Array<Prompt.AssistantMessagePartEncoded> = []
        if (message.content !== undefined && message.content !== "")
          content.push({ type: "text", text: message.content })
        for (const call of message.toolCalls ?? []) {
          content.push({ type: "tool-call", id: call.id, name: call.name, params: parseOr(call.arguments) })
        }
        out.push({ role: "assistant", content })
        break
      }
      case "tool":
        out.push({
          role: "tool",
          content: [
            {
              type: "tool-result",
              id: message.toolCallId,
              name: message.name,
              isFailure: false,
              result: parseOr(message.content),
              providerExecuted: false
            }
          ]
        })
        break
    }
  }
  return Either.right(out)
}
