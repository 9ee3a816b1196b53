/**
 * One request to the gateway: which workflow, for which tenant, with what input and what limits.
 * A command names a workflow and requirements only; it can never name a credential, URL or target.
 *
 * Input limits (checked by {@link decodeUnknown} before anything else runs, and by the class
 * constructor for commands built in code). A rejection names the field and the limit, never the
 * value:
 *
 * | field | limit |
 * |---|---|
 * | `workflow` | 1–200 characters, `[A-Za-z0-9][A-Za-z0-9._-]*` |
 * | `tenant` | 1–200 characters, `[A-Za-z0-9][A-Za-z0-9._:-]*` |
 * | `runId` | at most 200 characters |
 * | `regions` | 1–32 entries, each 1–64 characters (trimmed) |
 * | `dataClass` | 1–64 characters (trimmed) |
 * | `timeout` | finite, at most 24 h |
 * | `messages` | 1–10 000 messages |
 * | text (message content, tool arguments and results) | at most 2 000 000 characters each |
 * | parts of one user message | at most 1 000 |
 * | image URL | at most 20 000 000 characters (`data:image/…` or `https://`); `mediaType` at most 100 |
 * | audio and file `data` | base64, at most 20 000 000 characters; `filename` at most 255 characters |
 * | `tools` | at most 128; name `[A-Za-z0-9_-]{1,64}`, description at most 10 000 characters |
 * | tool calls of one assistant message | at most 128; id at most 500, name at most 200 characters |
 * | `name` of a tool message | at most 64 characters |
 * | `requires.schemaFeatures` | at most 32 entries |
 * | `options` | each within its range (`ModelOptions.RequestOptions`); `stop` 1–4 sequences of at most 100 characters |
 * | `providerOptions` | at most 8 providers × 32 fields, each allowed by the provider's adapter |
 * | `segment` | 1–100 characters, `[A-Za-z0-9][A-Za-z0-9._:-]*` |
 * | `sessionKey` | 1–200 characters |
 * | `cache` | `bypass` or `refresh` |
 * | the raw input | plain objects and arrays only, nested at most 64 levels, at most 1 000 000 values, no `__proto__` key |
 *
 * @since 0.1.0
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import * as Issues from "./internal/issues.js"
import { RequestOptions } from "./ModelOptions.js"
import { ProviderOptions } from "./internal/optionSchemas.js"
import { AudioFormat, Label, Labels, MediaType, Segment } from "./ModelTarget.js"
import { Millis } from "./internal/fieldSchemas.js"
import { TenantId } from "./Tenancy.js"

import { RequestId } from "./internal/requestId.js"
import * as Literals from "./internal/literals.js"

/**
 * A tenant id (defined in `Tenancy`, below every module that names one).
 *
 * @since 0.1.0
 * @category Models
 */
export { TenantId } from "./Tenancy.js"

/** Bounded text so a hostile command cannot make the gateway hold unbounded memory. @internal */
const Text = Schema.String.pipe(Schema.maxLength(2_000_000))

/** Text. */
const TextPart = Schema.TaggedStruct("text", { text: Text })

/** An image, by `data:` URL or https URL (needs a vision-capable target). */
const ImagePart = Schema.TaggedStruct("image", {
  url: Schema.String.pipe(Schema.maxLength(20_000_000), Schema.pattern(/^(data:image\/|https:\/\/)/)),
  mediaType: Schema.optional(Schema.String.pipe(Schema.maxLength(100)))
})

/** Base64 content (no `data:` prefix), bounded like an image URL. */
const Base64 = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(20_000_000),
  Schema.pattern(/^[A-Za-z0-9+/]+={0,2}$/, { message: () => "expected base64 text" })
)

/**
 * Audio input: base64 `data` in `format` (needs a target whose `capabilities.audioInput` lists the
 * format; billed as audio input tokens where the provider reports them).
 */
const AudioPart = Schema.TaggedStruct("audio", { data: Base64, format: AudioFormat })

/**
 * A file (a PDF, …): base64 `data` of `mediaType`, with an optional `filename` (needs a target
 * whose `capabilities.fileInput` lists the media type).
 */
const FilePart = Schema.TaggedStruct("file", {
  data: Base64,
  mediaType: MediaType,
  filename: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255)))
})

/**
 * A part of a user message: `text`, `image` (`ImagePart`), `audio` (`{ _tag: "audio", data,
 * format }`: base64 and one of `wav`, `mp3`, `flac`, `aac`, `ogg`, `webm`, `m4a`, `aiff`) or
 * `file` (`{ _tag: "file", data, mediaType, filename? }`: base64, e.g. `application/pdf`).
 *
 * @since 0.1.0
 */
export const ContentPart = Schema.Union(TextPart, ImagePart, AudioPart, FilePart)
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
    name: Schema.String.pipe(Schema.maxLength(64)),
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
  schemaFeatures: Schema.optional(Schema.Array(Literals.SchemaFeature).pipe(Schema.maxItems(32))),
  streaming: Schema.optional(Schema.Boolean)
}) {}

const Positive = Schema.Number.pipe(Schema.positive(), Schema.finite())
const PositiveInt = Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(100_000_000))

/**
 * Errors of every decode of {@link ModelCommand} (`Schema.decodeSync(ModelCommand)` too) name
 * paths and kinds of problems, never the values, which may be prompt text or a pasted key.
 */
const valueFree = {
  message: (issue: ParseResult.ParseIssue) => ({
    message: `invalid command: ${Issues.issueLines(new ParseResult.ParseError({ issue })).join("; ")}`,
    override: true
  })
}

/**
 * One request.
 *
 * @since 0.1.0
 * @category Models
 */
export class ModelCommand extends Schema.Class<ModelCommand>("@modelgate/core/ModelCommand")(
  {
    workflow: Literals.WorkflowName,
    tenant: TenantId,
    messages: Schema.NonEmptyArray(Message).pipe(Schema.maxItems(10_000)),
    tools: Schema.optional(Schema.Array(ToolDefinition).pipe(Schema.maxItems(128))),
    toolChoice: Schema.optional(ToolChoice),
    /** End-to-end deadline; at most the workflow's. */
    timeout: Schema.optional(Millis),
    /** Cost cap for this call in currency units; at most the workflow's. */
    maxCost: Schema.optional(Positive),
    /** Output-token cap; capped further to what is left of a target's context window after the input. */
    maxOutputTokens: Schema.optional(PositiveInt),
    maxInputTokens: Schema.optional(PositiveInt),
    /**
     * Smallest context window (input plus output tokens) a target must have to serve this call: a
     * hard filter (`CONTEXT_TOO_SMALL`), the spec's `min_context_tokens`.
     */
    minContextTokens: Schema.optional(PositiveInt),
    /** Data class of this request (at most 64 characters); defaults to the workflow's. */
    dataClass: Schema.optional(Label),
    /** Regions allowed for this request (at most 32, each at most 64 characters); within the workflow's. */
    regions: Schema.optional(Labels),
    requires: Schema.optional(RequestRequirements),
    /** Agent run id and step, for tool idempotency keys. */
    runId: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
    step: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
    /**
     * Sampling options (`ModelOptions.RequestOptions`: `temperature`, `topP`, `seed`, `stop`,
     * `reasoningEffort`, `reasoningBudget`, `parallelToolCalls`, `presencePenalty`,
     * `frequencyPenalty`, `userId`), within the workflow's bounds. Only targets that accept every
     * option set here are eligible.
     */
    options: Schema.optional(RequestOptions),
    /**
     * Wire fields per provider id the neutral options do not model, within each adapter's
     * allowlist (never a URL, key, header or a field the gateway owns); not the workflow's own.
     */
    providerOptions: Schema.optional(ProviderOptions),
    /** Risk of this call; only raises the workflow's (`HIGH` needs verified quality on the segment). */
    risk: Schema.optional(Literals.Risk),
    /** Task segment of this call (at most 100 characters); defaults to the workflow's. */
    segment: Schema.optional(Segment),
    /** Quality class scored selection should prefer for this call; defaults to the workflow's. */
    preferredTier: Schema.optional(Literals.QualityTier),
    /** Lowest quality class for this call; only raises the workflow's. */
    minQualityTier: Schema.optional(Literals.QualityTier),
    /**
     * Escalation signal (e.g. a follow-up after a weak answer): prefer an eligible target of a
     * stronger quality class than the one the router would pick, under the same hard filters.
     */
    escalate: Schema.optional(Schema.Boolean),
    /** Session of this call: scored selection keeps the session's last target (affinity, `STICKY`). */
    sessionKey: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
    /**
     * The response cache for this call (a workflow with `cache` only): `bypass` neither reads nor
     * stores; `refresh` skips the read and stores the new answer. Omitted: read, then store.
     */
    cache: Schema.optional(Schema.Literal("bypass", "refresh")),
    /**
     * The caller's request id, for correlation (1 to 128 characters of `A-Z a-z 0-9 . _ : -`):
     * carried into the route decision, the evidence (so the CallRecord), the call span
     * (`modelgate.request_id`) and the stream's `RouteSelected` decisions. Never content. Since 0.3.0.
     */
    requestId: Schema.optional(RequestId)
  },
  // On the class, its transformation and its fields: every decode path is value-free.
  [valueFree, valueFree, valueFree]
) {
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

/** Deepest nesting accepted in untrusted input (tool parameter schemas included). @internal */
export const maxInputDepth = Issues.maxInputDepth

/** Most values (objects, arrays and primitives) accepted in one untrusted command. @internal */
export const maxInputValues = Issues.maxInputValues

const decodeChecked = Schema.decodeUnknownEither(ModelCommand, { errors: "all", onExcessProperty: "error" })

/**
 * A ParseError that names paths and kinds of problems only, never the offending values. (On an AST
 * of its own: the class's message annotation would replace `message`.)
 */
const rejected = (message: string) =>
  new ParseResult.ParseError({ issue: new ParseResult.Type(Schema.Unknown.ast, undefined, message) })

/**
 * Decodes a command from untrusted input. Unknown fields are an error, so a caller cannot smuggle a
 * `baseUrl`, `apiKey` or `target` into a request. Hostile shapes (deep nesting, huge inputs, exotic
 * objects) are refused before decoding, and the error names paths, kinds of problems and the
 * limits broken (`$.regions is invalid (expected an array of at most 32 item(s))`) — never the
 * values, which may be prompt text.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decodeUnknown = (input: unknown): Effect.Effect<ModelCommand, ParseResult.ParseError> =>
  Effect.suspend(() => {
    const shape = Issues.checkShape(input)
    if (shape !== undefined) return Effect.fail(rejected(`invalid command: ${shape}`))
    const decoded = decodeChecked(input)
    if (Either.isRight(decoded)) return Effect.succeed(decoded.right)
    return Effect.fail(rejected(`invalid command: ${Issues.issueLines(decoded.left).join("; ")}`))
  })
