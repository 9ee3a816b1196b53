/**
 * Sampling and provider options: the provider-neutral set a command may ask for
 * ({@link RequestOptions}), the bounds a workflow puts on them ({@link WorkflowOptions}: defaults,
 * ranges, pinned values), and the escape hatch for wire fields the set does not model
 * ({@link ProviderOptions}, checked against each adapter's allowlist).
 *
 * How options resolve for one call:
 *
 * - a command's value must lie within the workflow's bounds, else the call is `InvalidRequest`
 *   (`invalid_command`, naming the option and the bound, never the value) before anything is
 *   reserved;
 * - an option the command does not set takes the workflow's default;
 * - options set by the command, and options the workflow pins, are **required**: a target that does
 *   not accept one (`capabilities.options`) is excluded (`OPTION_UNSUPPORTED`); a pinned option a
 *   route target cannot honour is a startup problem;
 * - a workflow default that is not pinned is sent only to targets that accept it.
 *
 * @since 0.2.0
 */
import { Schema } from "effect"
import * as Options from "./internal/optionFacts.js"

/**
 * The options of one call, resolved from the workflow's bounds and the command's overrides.
 *
 * @since 0.2.0
 * @category Models
 */
export interface ResolvedOptions {
  /** The command's values, else the workflow's defaults. */
  readonly values: RequestOptions
  /** Options every target must accept: set by the command, or pinned by the workflow. */
  readonly required: ReadonlyArray<OptionName>
  /** Wire fields per provider id: the workflow's and the command's (never the same field). */
  readonly providerOptions: ProviderOptions | undefined
}

// ---------------------------------------------------------------------------------------------
// The neutral set
// ---------------------------------------------------------------------------------------------

/**
 * The name of a neutral option, as targets list them in `capabilities.options`.
 *
 * @since 0.2.0
 * @category Models
 */
export const OptionName = Schema.Literal(...Options.names)
/** @since 0.2.0 */
export type OptionName = typeof OptionName.Type

/**
 * Sampling temperature, 0 to 2 (Anthropic accepts 0 to 1; its adapter refuses more).
 */
const Temperature = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(0, 2, { description: "a number between 0 and 2" })
)

/**
 * Nucleus sampling mass, 0 to 1.
 */
const TopP = Schema.Number.pipe(Schema.finite(), Schema.between(0, 1, { description: "a number between 0 and 1" }))

/**
 * Sampling seed: a non-negative 32-bit integer (the range every provider accepts).
 */
const Seed = Schema.Int.pipe(Schema.between(0, 2_147_483_647, { description: "an integer between 0 and 2147483647" }))

/**
 * Longest stop sequence.
 */
const maxStopSequenceLength = 100

/**
 * Stop sequences: 1 to 4 (OpenAI's limit), each 1 to 100 characters.
 */
const StopSequences = Schema.Array(
  Schema.String.pipe(Schema.minLength(1), Schema.maxLength(maxStopSequenceLength))
).pipe(Schema.minItems(1), Schema.maxItems(4, { description: "1 to 4 stop sequences" }))

/**
 * Reasoning effort of a reasoning model.
 */
const ReasoningEffort = Schema.Literal("low", "medium", "high")

/**
 * Thinking budget in tokens; 0 turns thinking off where the provider allows it.
 */
const ReasoningBudget = Schema.Int.pipe(
  Schema.between(0, 1_000_000, { description: "an integer between 0 and 1000000" })
)

/**
 * Presence or frequency penalty, -2 to 2.
 */
const Penalty = Schema.Number.pipe(Schema.finite(), Schema.between(-2, 2, { description: "a number between -2 and 2" }))

/**
 * An opaque end-user id for the provider's abuse monitoring (a hash or a UUID, never an email or a
 * name): 1 to 128 characters of `[A-Za-z0-9._:-]`. Records say only that one was set.
 */
const UserId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._:-]{1,128}$/, { description: "1 to 128 characters of [A-Za-z0-9._:-]" })
)

/**
 * The neutral options of one request.
 *
 * | option | type | meaning |
 * |---|---|---|
 * | `temperature` | 0–2 | sampling temperature |
 * | `topP` | 0–1 | nucleus sampling |
 * | `seed` | int 0–2³¹−1 | best-effort determinism |
 * | `stop` | 1–4 strings | stop sequences |
 * | `reasoningEffort` | `low` / `medium` / `high` | effort of a reasoning model |
 * | `reasoningBudget` | int 0–1 000 000 | thinking budget in tokens (0: off) |
 * | `parallelToolCalls` | boolean | may the model call several tools at once (sent only with tools) |
 * | `presencePenalty`, `frequencyPenalty` | −2–2 | repetition penalties |
 * | `userId` | opaque id | end user, for the provider's abuse monitoring |
 *
 * @since 0.2.0
 * @category Models
 */
export const RequestOptions = Schema.Struct({
  temperature: Schema.optional(Temperature),
  topP: Schema.optional(TopP),
  seed: Schema.optional(Seed),
  stop: Schema.optional(StopSequences),
  reasoningEffort: Schema.optional(ReasoningEffort),
  reasoningBudget: Schema.optional(ReasoningBudget),
  parallelToolCalls: Schema.optional(Schema.Boolean),
  presencePenalty: Schema.optional(Penalty),
  frequencyPenalty: Schema.optional(Penalty),
  userId: Schema.optional(UserId)
}).annotations({ identifier: "@modelgate/core/RequestOptions" })
/** @since 0.2.0 */
export interface RequestOptions extends Schema.Schema.Type<typeof RequestOptions> {}

// ---------------------------------------------------------------------------------------------
// Workflow bounds
// ---------------------------------------------------------------------------------------------

/**
 * Bounds of a numeric option: a bare number pins it (default, minimum and maximum at once), or a
 * default and an allowed range (`{ default: 0.2, min: 0, max: 1 }`). Pinned when `min === max`.
 */
const rangeOf = <A extends number>(value: Schema.Schema<A, A>) =>
  Schema.Union(
    value,
    Schema.Struct({ default: Schema.optional(value), min: Schema.optional(value), max: Schema.optional(value) })
  )

/**
 * Bounds of an option with a few values: a bare value pins it, or a default and the values a
 * command may choose (`{ default: "low", allowed: ["low", "medium"] }`). Pinned when one value is
 * allowed.
 */
const choiceOf = <A extends string | boolean>(value: Schema.Schema<A, A>) =>
  Schema.Union(
    value,
    Schema.Struct({
      default: Schema.optional(value),
      allowed: Schema.optional(Schema.NonEmptyArray(value).pipe(Schema.maxItems(8)))
    })
  )

/**
 * Bounds of a list or id option (`stop`, `userId`): a default, and whether a command may set its
 * own (`overridable`, default `true`). Pinned when a default is given and it is not overridable;
 * `{ overridable: false }` alone forbids the option.
 */
const fixedOf = <A, I>(value: Schema.Schema<A, I>) =>
  Schema.Struct({ default: Schema.optional(value), overridable: Schema.optional(Schema.Boolean) })

/**
 * What a workflow allows and sets by default, per option.
 *
 * ```json
 * { "temperature": { "default": 0.2, "min": 0, "max": 1 }, "seed": 7, "reasoningEffort": { "allowed": ["low", "medium"] } }
 * ```
 *
 * @since 0.2.0
 * @category Models
 */
export const WorkflowOptions = Schema.Struct({
  temperature: Schema.optional(rangeOf(Temperature)),
  topP: Schema.optional(rangeOf(TopP)),
  seed: Schema.optional(rangeOf(Seed)),
  stop: Schema.optional(fixedOf(StopSequences)),
  reasoningEffort: Schema.optional(choiceOf(ReasoningEffort)),
  reasoningBudget: Schema.optional(rangeOf(ReasoningBudget)),
  parallelToolCalls: Schema.optional(choiceOf(Schema.Boolean)),
  presencePenalty: Schema.optional(rangeOf(Penalty)),
  frequencyPenalty: Schema.optional(rangeOf(Penalty)),
  userId: Schema.optional(fixedOf(UserId))
}).annotations({ identifier: "@modelgate/core/WorkflowOptions" })
/** @since 0.2.0 */
export interface WorkflowOptions extends Schema.Schema.Type<typeof WorkflowOptions> {}

// ---------------------------------------------------------------------------------------------
// Provider options (the escape hatch)
// ---------------------------------------------------------------------------------------------

/**
 * Most providers in one `providerOptions`, and most fields per provider.
 *
 * @since 0.2.0
 * @category Constants
 *
 * @internal
 */
export const maxProviderOptions = { providers: 8, fields: 32 } as const

/** A provider id, as `ModelTarget.ProviderId` spells it (not imported: `ModelTarget` imports this module). */
const ProviderKey = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/, { description: "a provider id" }))

/** A wire field name: a letter, then letters, digits and `_`, at most 64 characters. */
const FieldName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, { description: "a wire field name ([A-Za-z][A-Za-z0-9_]{0,63})" })
)

/**
 * Wire fields the neutral set does not model, per provider id:
 * `{ "openai": { "service_tier": "flex" }, "anthropic": { "top_k": 40 } }`. Each provider's adapter
 * says which fields it accepts and what their values may be ({@link ProviderOptionsAllowlist}); a
 * field outside the allowlist, one that could carry a URL, key or header, or one the gateway owns
 * (model, messages, output cap, stream, tools, response format, the neutral options) is refused.
 * At most 8 providers and 32 fields.
 *
 * @since 0.2.0
 * @category Models
 */
export const ProviderOptions = Schema.Record({
  key: ProviderKey,
  value: Schema.Record({ key: FieldName, value: Schema.Unknown }).pipe(
    Schema.filter((fields) => Object.keys(fields).length <= maxProviderOptions.fields, {
      description: `at most ${maxProviderOptions.fields} fields per provider`
    })
  )
}).pipe(
  Schema.filter((providers) => Object.keys(providers).length <= maxProviderOptions.providers, {
    description: `at most ${maxProviderOptions.providers} providers`
  })
)
/** @since 0.2.0 */
export type ProviderOptions = typeof ProviderOptions.Type

/**
 * The wire fields an adapter lets `providerOptions` set, each with the schema its value must
 * satisfy (an adapter without one accepts none).
 *
 * @since 0.2.0
 * @category Models
 */
export type ProviderOptionsAllowlist = Readonly<Record<string, Schema.Schema.AnyNoContext>>

/**
 * Fields no allowlist can open: what the gateway itself sends (model, messages, output cap,
 * streaming, tools, response format, the neutral options' wire fields) in any provider's spelling.
 *
 * @since 0.2.0
 * @category Constants
 */
export const ownedFields: ReadonlySet<string> = new Set([
  "model",
  "messages",
  "contents",
  "system",
  "systemInstruction",
  "max_tokens",
  "max_completion_tokens",
  "maxOutputTokens",
  "generationConfig",
  "stream",
  "stream_options",
  "tools",
  "tool_choice",
  "toolConfig",
  "functions",
  "function_call",
  "response_format",
  "responseMimeType",
  "responseSchema",
  "responseJsonSchema",
  "output_config",
  "output_format",
  "n",
  "candidateCount",
  "temperature",
  "top_p",
  "topP",
  "seed",
  "stop",
  "stop_sequences",
  "stopSequences",
  "reasoning_effort",
  "reasoning",
  "thinking",
  "thinkingConfig",
  "parallel_tool_calls",
  "presence_penalty",
  "presencePenalty",
  "frequency_penalty",
  "frequencyPenalty",
  "user",
  "safety_identifier",
  "metadata",
  "store"
])

/**
 * Problems of the fields given for `provider` against its adapter's `allowlist`, value-free
 * (`openai.baseURL: not an allowed field`); empty when every field is allowed and valid.
 *
 * @since 0.2.0
 * @category Validation
 */
export const providerOptionsProblems = (
  provider: string,
  fields: Readonly<Record<string, unknown>>,
  allowlist: ProviderOptionsAllowlist | undefined
): ReadonlyArray<string> => {
  const out: Array<string> = []
  for (const [field, value] of Object.entries(fields)) {
    const name = `${provider}.${field.slice(0, 64)}`
    if (ownedFields.has(field)) out.push(`${name}: owned by the gateway`)
    else if (Options.sensitiveName.test(field)) out.push(`${name}: may not carry a URL, key or header`)
    else if (allowlist === undefined || !Object.hasOwn(allowlist, field)) out.push(`${name}: not an allowed field`)
    else if (Options.sensitiveKeyIn(value)) out.push(`${name}: may not carry a URL, key or header`)
    else {
      const schema = allowlist[field]
      if (schema === undefined || !Options.isValid(schema, value)) out.push(`${name}: invalid value`)
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Evidence
// ---------------------------------------------------------------------------------------------

/**
 * The options of a call as evidence records them: values, never content. The end-user id is
 * recorded as `"set"`, provider options by field name only (`openai.service_tier`).
 *
 * @since 0.2.0
 * @category Models
 */
export const OptionsEvidence = Schema.Struct({
  temperature: Schema.optional(Schema.Number),
  topP: Schema.optional(Schema.Number),
  seed: Schema.optional(Schema.Number),
  stop: Schema.optional(Schema.Array(Schema.String)),
  reasoningEffort: Schema.optional(Schema.String),
  reasoningBudget: Schema.optional(Schema.Number),
  parallelToolCalls: Schema.optional(Schema.Boolean),
  presencePenalty: Schema.optional(Schema.Number),
  frequencyPenalty: Schema.optional(Schema.Number),
  userId: Schema.optional(Schema.Literal("set")),
  /** `provider.field` names of the provider options sent, values left out. */
  providerOptions: Schema.optional(Schema.Array(Schema.String))
}).annotations({ identifier: "@modelgate/core/OptionsEvidence" })
/** @since 0.2.0 */
export interface OptionsEvidence extends Schema.Schema.Type<typeof OptionsEvidence> {}
