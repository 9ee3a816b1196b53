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
import * as OptionSchemas from "./internal/optionSchemas.js"

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
  temperature: Schema.optional(OptionSchemas.Temperature),
  topP: Schema.optional(OptionSchemas.TopP),
  seed: Schema.optional(OptionSchemas.Seed),
  stop: Schema.optional(OptionSchemas.StopSequences),
  reasoningEffort: Schema.optional(OptionSchemas.ReasoningEffort),
  reasoningBudget: Schema.optional(OptionSchemas.ReasoningBudget),
  parallelToolCalls: Schema.optional(Schema.Boolean),
  presencePenalty: Schema.optional(OptionSchemas.Penalty),
  frequencyPenalty: Schema.optional(OptionSchemas.Penalty),
  userId: Schema.optional(OptionSchemas.UserId)
}).annotations({ identifier: "@modelgate/core/RequestOptions" })
/** @since 0.2.0 */
export interface RequestOptions extends Schema.Schema.Type<typeof RequestOptions> {}

// ---------------------------------------------------------------------------------------------
// Workflow bounds
// ---------------------------------------------------------------------------------------------

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
export interface WorkflowOptions extends Schema.Schema.Type<typeof OptionSchemas.WorkflowOptions> {}

// ---------------------------------------------------------------------------------------------
// Provider options (the escape hatch)
// ---------------------------------------------------------------------------------------------

/**
 * Wire fields the neutral set does not model, per provider id:
 * `{ "openai": { "service_tier": "flex" }, "anthropic": { "top_k": 40 } }`. Each provider's adapter
 * says which fields it accepts and what their values may be (`ProviderOptionsAllowlist`); a
 * field outside the allowlist, one that could carry a URL, key or header, or one the gateway owns
 * (model, messages, output cap, stream, tools, response format, the neutral options) is refused.
 * At most 8 providers and 32 fields.
 *
 * @since 0.2.0
 * @category Models
 */
export type ProviderOptions = typeof OptionSchemas.ProviderOptions.Type

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
export interface OptionsEvidence extends Schema.Schema.Type<typeof OptionSchemas.OptionsEvidence> {}
