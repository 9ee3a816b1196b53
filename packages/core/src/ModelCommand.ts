/**
 * One request to the gateway: which workflow, for which tenant, with what input and what limits.
 * A command names a workflow and requirements only; it can never name a credential, URL or target.
 *
 * @since 0.1.0
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import { jsonPath } from "./internal/issues.js"
import { Millis, SchemaFeature } from "./ModelTarget.js"
import { WorkflowName } from "./Workflow.js"

/**
 * @since 0.1.0
 * @category Models
 */
export const TenantId = Schema.NonEmptyTrimmedString.pipe(
  Schema.maxLength(200),
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/),
  Schema.brand("TenantId")
)
/** @since 0.1.0 */
export type TenantId = typeof TenantId.Type

/** Bounded text so a hostile command cannot make the gateway hold unbounded memory. @internal */
const Text = Schema.String.pipe(Schema.maxLength(2_000_000))

/**
 * @since 0.1.0
 * @category Models
 */
export const TextPart = Schema.TaggedStruct("text", { text: Text })
/**
 * An image, by `data:` URL or https URL (needs a vision-capable target).
 *
 * @since 0.1.0
 * @category Models
 */
export const ImagePart = Schema.TaggedStruct("image", {
  url: Schema.String.pipe(Schema.maxLength(20_000_000), Schema.pattern(/^(data:image\/|https:\/\/)/)),
  mediaType: Schema.optional(Schema.String)
})
/** @since 0.1.0 */
export const ContentPart = Schema.Union(TextPart, ImagePart)
/** @since 0.1.0 */
export type ContentPart = typeof ContentPart.Type

/**
 * A tool call proposed by the model (in results) or made earlier (in assistant messages).
 *
 * @since 0.1.0
 * @category Models
 */
export class ToolCall extends Schema.Class<ToolCall>("@modelgate/core/ToolCall")({
  id: Schema.String.pipe(Schema.maxLength(500)),
  name: Schema.String.pipe(Schema.maxLength(200)),
  /** JSON text of the arguments, exactly as the model produced it. */
  arguments: Text
}) {}

/**
 * @since 0.1.0
 * @category Models
 */
export const Message = Schema.Union(
  Schema.TaggedStruct("system", { content: Text }),
  Schema.TaggedStruct("user", { content: Schema.Union(Text, Schema.Array(ContentPart).pipe(Schema.maxItems(1000))) }),
  Schema.TaggedStruct("assistant", {
    content: Schema.optional(Text),
    toolCalls: Schema.optional(Schema.Array(ToolCall).pipe(Schema.maxItems(128)))
  }),
  Schema.TaggedStruct("tool", {
    toolCallId: Schema.String.pipe(Schema.maxLength(500)),
    name: Schema.String,
    content: Text
  })
)
/** @since 0.1.0 */
export type Message = typeof Message.Type

/**
 * A tool the model may call. `sideEffecting` tools change the world: a command offering one is never
 * retried after an attempt that may have been processed (see `AmbiguousOutcome`).
 *
 * @since 0.1.0
 * @category Models
 */
export class ToolDefinition extends Schema.Class<ToolDefinition>("@modelgate/core/ToolDefinition")({
  name: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/)),
  description: Schema.String.pipe(Schema.maxLength(10_000)),
  /** JSON Schema of the arguments (an object schema). */
  parameters: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  sideEffecting: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {}

/**
 * @since 0.1.0
 * @category Models
 */
export const ToolChoice = Schema.Union(
  Schema.Literal("auto", "none", "required"),
  Schema.Struct({ tool: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/)) })
)
/** @since 0.1.0 */
export type ToolChoice = typeof ToolChoice.Type

/**
 * Requirements of this request on top of the workflow's.
 *
 * @since 0.1.0
 * @category Models
 */
export class RequestRequirements extends Schema.Class<RequestRequirements>("@modelgate/core/RequestRequirements")({
  /** JSON-Schema features the structured output of this request needs. */
  schemaFeatures: Schema.optional(Schema.Array(SchemaFeature)),
  streaming: Schema.optional(Schema.Boolean)
}) {}

const Positive = Schema.Number.pipe(Schema.positive(), Schema.finite())
const PositiveInt = Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(100_000_000))

/**
 * One request.
 *
 * @since 0.1.0
 * @category Models
 */
export class ModelCommand extends Schema.Class<ModelCommand>("@modelgate/core/ModelCommand")({
  workflow: WorkflowName,
  tenant: TenantId,
  messages: Schema.NonEmptyArray(Message).pipe(Schema.maxItems(10_000)),
  tools: Schema.optional(Schema.Array(ToolDefinition).pipe(Schema.maxItems(128))),
  toolChoice: Schema.optional(ToolChoice),
  /** End-to-end deadline; at most the workflow's. */
  timeout: Schema.optional(Millis),
  /** Cost cap for this call in currency units; at most the workflow's. */
  maxCost: Schema.optional(Positive),
  maxOutputTokens: Schema.optional(PositiveInt),
  maxInputTokens: Schema.optional(PositiveInt),
  /** Data class of this request; defaults to the workflow's. */
  dataClass: Schema.optional(Schema.NonEmptyTrimmedString),
  /** Regions allowed for this request; must be within the workflow's. */
  regions: Schema.optional(Schema.NonEmptyArray(Schema.NonEmptyTrimmedString)),
  requires: Schema.optional(RequestRequirements),
  /** Agent run id and step, for tool idempotency keys. */
  runId: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  step: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
}) {
  /** True when a tool offered to the model changes the world. */
  get allowsStateChangingTools(): boolean {
    return this.tools?.some((t) => t.sideEffecting) ?? false
  }
  /** True when a message carries an image. */
  get hasImages(): boolean {
    return this.messages.some(
      (m) => m._tag === "user" && typeof m.content !== "string" && m.content.some((p) => p._tag === "image")
    )
  }
}

/** Deepest nesting accepted in untrusted input (tool parameter schemas included). */
export const maxInputDepth = 64

/** Most values (objects, arrays and primitives) accepted in one untrusted command. */
export const maxInputValues = 1_000_000

/**
 * Checks the raw shape of untrusted input before any decoding: only plain objects and arrays,
 * nested at most {@link maxInputDepth} levels, at most {@link maxInputValues} values. Iterative,
 * so hostile nesting cannot overflow the stack. Returns the first problem, or `undefined`.
 */
const checkShape = (input: unknown): string | undefined => {
  const stack: Array<{ readonly value: unknown; readonly path: string; readonly depth: number }> = [
    { value: input, path: "$", depth: 0 }
  ]
  let count = 0
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!
    if (++count > maxInputValues) return `$: more than ${maxInputValues} values`
    if (typeof value !== "object" || value === null) continue
    if (depth >= maxInputDepth) return `${path}: nested deeper than ${maxInputDepth} levels`
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) stack.push({ value: value[i], path: `${path}.${i}`, depth: depth + 1 })
      continue
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) return `${path}: not a plain object`
    if (proto === null) return `${path}: object without prototype`
    for (const [key, child] of Object.entries(value)) {
      stack.push({ value: child, path: `${path}.${key}`, depth: depth + 1 })
    }
  }
  return undefined
}

const decodeChecked = Schema.decodeUnknownEither(ModelCommand, { errors: "all", onExcessProperty: "error" })

/** A ParseError that names paths and kinds of problems only, never the offending values. */
const rejected = (message: string) =>
  new ParseResult.ParseError({ issue: new ParseResult.Type(ModelCommand.ast, undefined, message) })

/**
 * Decodes a command from untrusted input. Unknown fields are an error, so a caller cannot smuggle a
 * `baseUrl`, `apiKey` or `target` into a request. Hostile shapes (deep nesting, huge inputs, exotic
 * objects) are refused before decoding, and the error names paths and kinds of problems only —
 * never the values, which may be prompt text.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decodeUnknown = (input: unknown): Effect.Effect<ModelCommand, ParseResult.ParseError> =>
  Effect.suspend(() => {
    const shape = checkShape(input)
    if (shape !== undefined) return Effect.fail(rejected(`invalid command: ${shape}`))
    const decoded = decodeChecked(input)
    if (Either.isRight(decoded)) return Effect.succeed(decoded.right)
    const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
      .slice(0, 20)
      .map((i) => {
        const path = jsonPath(i.path)
        return `${path} ${i._tag === "Unexpected" ? "is unexpected" : i._tag === "Missing" ? "is missing" : "is invalid"}`
      })
    return Effect.fail(rejected(`invalid command: ${issues.join("; ")}`))
  })
