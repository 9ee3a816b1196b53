/**
 * Scripts for the mock provider server as plain JSON, for the `modelgate-mock` bin (`--script
 * file.json`) and any process that cannot build behaviours in code: the same behaviours as
 * `MockProviderServer.success` / `failure` / `drop` / `raw`, each tagged with `_tag`.
 *
 * ```json
 * {
 *   "default": { "_tag": "Success", "text": "Hello from the mock." },
 *   "queues": [
 *     { "provider": "openai", "behaviors": [{ "_tag": "Failure", "status": 429, "headers": { "retry-after": "1" } }] },
 *     { "model": "claude-haiku-4-5", "behaviors": [{ "_tag": "Drop" }] }
 *   ]
 * }
 * ```
 *
 * `default` answers every request no queue answers (default: a success); each queue is consumed one
 * behaviour per matching request, in order (`MockProviderServer.Service.enqueue`).
 *
 * @since 0.2.0
 */
import { Effect, Schema } from "effect"
import type { Behavior, Provider } from "./internal/mockScript.js"

const Millis = Schema.Number.pipe(Schema.nonNegative(), Schema.finite())
const Count = Schema.Int.pipe(Schema.nonNegative())
const Headers = Schema.Record({ key: Schema.String, value: Schema.String })

/**
 * The wire formats, as `match.provider` names them.
 *
 * @since 0.2.0
 * @category Schemas
 */
export const ProviderSchema = Schema.Literal("openai", "anthropic", "gemini", "openai-compatible", "openai-responses")

const ErrorSpec = Schema.Struct({
  type: Schema.optional(Schema.String),
  code: Schema.optional(Schema.Union(Schema.String, Schema.Number, Schema.Null)),
  message: Schema.optional(Schema.String),
  status: Schema.optional(Schema.String),
  details: Schema.optional(Schema.Unknown),
  extra: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})

const StreamEnd = Schema.Union(
  Schema.TaggedStruct("Complete", {}),
  Schema.TaggedStruct("Truncate", { afterChunks: Count }),
  Schema.TaggedStruct("Drop", { afterChunks: Count }),
  Schema.TaggedStruct("Error", { afterChunks: Count, error: ErrorSpec, code: Schema.optional(Schema.Int) }),
  Schema.TaggedStruct("InvalidJson", { afterChunks: Count })
)

const common = {
  headers: Schema.optional(Headers),
  requestId: Schema.optional(Schema.String),
  latencyMs: Schema.optional(Millis)
}

const Status = Schema.Int.pipe(Schema.between(100, 599))

/**
 * One behaviour in JSON (the `Behavior` of `MockProviderServer`).
 *
 * @since 0.2.0
 * @category Schemas
 */
export const BehaviorSchema = Schema.Union(
  Schema.TaggedStruct("Success", {
    ...common,
    text: Schema.optional(Schema.String),
    json: Schema.optional(Schema.Unknown),
    toolCalls: Schema.optional(
      Schema.Array(
        Schema.Struct({
          id: Schema.optional(Schema.String),
          name: Schema.String,
          arguments: Schema.optional(Schema.Unknown)
        })
      )
    ),
    refusal: Schema.optional(Schema.Union(Schema.String, Schema.Literal(true))),
    finishReason: Schema.optional(Schema.String),
    blockReason: Schema.optional(Schema.String),
    usage: Schema.optional(
      Schema.NullOr(
        Schema.Struct({
          input: Count,
          output: Count,
          cached: Schema.optional(Count),
          reasoning: Schema.optional(Count),
          cacheCreation: Schema.optional(Count)
        })
      )
    ),
    model: Schema.optional(Schema.String),
    systemFingerprint: Schema.optional(Schema.String),
    ttftMs: Schema.optional(Millis),
    chunkDelayMs: Schema.optional(Millis),
    chunkSize: Schema.optional(Schema.Int.pipe(Schema.positive())),
    streamEnd: Schema.optional(StreamEnd),
    invalidJson: Schema.optional(Schema.Boolean)
  }),
  Schema.TaggedStruct("Failure", {
    ...common,
    status: Status,
    error: Schema.optional(ErrorSpec),
    body: Schema.optional(Schema.String),
    contentType: Schema.optional(Schema.String)
  }),
  Schema.TaggedStruct("Drop", common),
  Schema.TaggedStruct("Raw", {
    ...common,
    status: Status,
    body: Schema.String,
    contentType: Schema.optionalWith(Schema.String, { default: () => "application/json" })
  })
)

/**
 * A queue of behaviours for the requests that match it (omitted fields match anything).
 *
 * @since 0.2.0
 * @category Schemas
 */
export const QueueSchema = Schema.Struct({
  provider: Schema.optional(ProviderSchema),
  model: Schema.optional(Schema.String),
  behaviors: Schema.Array(BehaviorSchema)
})

/**
 * A script file: the default behaviour and the queues.
 *
 * @since 0.2.0
 * @category Schemas
 */
export const ScriptSchema = Schema.Struct({
  default: Schema.optional(BehaviorSchema),
  queues: Schema.optionalWith(Schema.Array(QueueSchema), { default: () => [] })
})

/**
 * A decoded script.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Script {
  readonly default?: Behavior | undefined
  readonly queues: ReadonlyArray<{
    readonly provider?: Provider | undefined
    readonly model?: string | undefined
    readonly behaviors: ReadonlyArray<Behavior>
  }>
}

/**
 * Decodes a script from parsed JSON; a failure lists every bad field with its path. Unknown fields
 * are refused (a misspelled `lateny` would otherwise be ignored silently).
 *
 * @since 0.2.0
 * @category Constructors
 */
export const decode = (json: unknown): Effect.Effect<Script, string> =>
  Effect.mapError(
    Schema.decodeUnknown(ScriptSchema, { errors: "all", onExcessProperty: "error" })(json),
    (error) => `invalid mock script:\n${error.message}`
  )

/**
 * Faults given as flags (`modelgate-mock --fail 503 --times 2 --retry-after 1`).
 *
 * @since 0.2.0
 * @category Models
 */
export interface Flags {
  /** Text of every success. */
  readonly text?: string | undefined
  /** Answer with this HTTP status and the provider's error envelope. */
  readonly fail?: number | undefined
  /** Close the connection before answering. */
  readonly drop?: boolean | undefined
  /** Only the first `times` requests get the fault, the rest succeed. Default: every request. */
  readonly times?: number | undefined
  /** `retry-after` header (seconds) of a failure. */
  readonly retryAfter?: number | undefined
  /** Delay before every answer, in milliseconds. */
  readonly latencyMs?: number | undefined
}

/**
 * The script flags describe, on top of `base` (a script file's, or none): the fault becomes the
 * default, or with `times` a queue of that many faults for any request (a file's queue naming a
 * provider or model is consulted before it, as `enqueue` orders them); `text` and `latencyMs` shape
 * the default success.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const withFlags = (base: Script, flags: Flags): Script => {
  const latency = flags.latencyMs === undefined ? {} : { latencyMs: flags.latencyMs }
  const baseDefault = base.default ?? { _tag: "Success" as const }
  const success: Behavior =
    baseDefault._tag === "Success" && (flags.text !== undefined || flags.latencyMs !== undefined)
      ? { ...baseDefault, ...(flags.text === undefined ? {} : { text: flags.text }), ...latency }
      : baseDefault
  const fault: Behavior | undefined =
    flags.drop === true
      ? { _tag: "Drop", ...latency }
      : flags.fail !== undefined
        ? {
            _tag: "Failure",
            status: flags.fail,
            ...(flags.retryAfter === undefined ? {} : { headers: { "retry-after": String(flags.retryAfter) } }),
            ...latency
          }
        : undefined
  if (fault === undefined) return { ...base, default: success }
  if (flags.times === undefined) return { ...base, default: fault }
  return {
    default: success,
    queues: [{ behaviors: Array.from({ length: flags.times }, () => fault) }, ...base.queues]
  }
}
