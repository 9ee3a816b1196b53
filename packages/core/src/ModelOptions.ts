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
 * @since 0.3.0
 */
import { Either, Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// The neutral set
// ---------------------------------------------------------------------------------------------

/**
 * The name of a neutral option, as targets list them in `capabilities.options`.
 *
 * @since 0.3.0
 * @category Models
 */
export const OptionName = Schema.Literal(
  "temperature",
  "topP",
  "seed",
  "stop",
  "reasoningEffort",
  "reasoningBudget",
  "parallelToolCalls",
  "presencePenalty",
  "frequencyPenalty",
  "userId"
)
/** @since 0.3.0 */
export type OptionName = typeof OptionName.Type

/**
 * Every neutral option, in a fixed order.
 *
 * @since 0.3.0
 * @category Constants
 */
export const optionNames: ReadonlyArray<OptionName> = OptionName.literals

/**
 * Sampling temperature, 0 to 2 (Anthropic accepts 0 to 1; its adapter refuses more).
 *
 * @since 0.3.0
 * @category Models
 */
export const Temperature = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(0, 2, { description: "a number between 0 and 2" })
)

/**
 * Nucleus sampling mass, 0 to 1.
 *
 * @since 0.3.0
 * @category Models
 */
export const TopP = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(0, 1, { description: "a number between 0 and 1" })
)

/**
 * Sampling seed: a non-negative 32-bit integer (the range every provider accepts).
 *
 * @since 0.3.0
 * @category Models
 */
export const Seed = Schema.Int.pipe(
  Schema.between(0, 2_147_483_647, { description: "an integer between 0 and 2147483647" })
)

/**
 * Longest stop sequence.
 *
 * @since 0.3.0
 * @category Constants
 */
export const maxStopSequenceLength = 100

/**
 * Stop sequences: 1 to 4 (OpenAI's limit), each 1 to {@link maxStopSequenceLength} characters.
 *
 * @since 0.3.0
 * @category Models
 */
export const StopSequences = Schema.Array(
  Schema.String.pipe(Schema.minLength(1), Schema.maxLength(maxStopSequenceLength))
).pipe(Schema.minItems(1), Schema.maxItems(4, { description: "1 to 4 stop sequences" }))

/**
 * Reasoning effort of a reasoning model.
 *
 * @since 0.3.0
 * @category Models
 */
export const ReasoningEffort = Schema.Literal("low", "medium", "high")
/** @since 0.3.0 */
export type ReasoningEffort = typeof ReasoningEffort.Type

/**
 * Thinking budget in tokens; 0 turns thinking off where the provider allows it.
 *
 * @since 0.3.0
 * @category Models
 */
export const ReasoningBudget = Schema.Int.pipe(
  Schema.between(0, 1_000_000, { description: "an integer between 0 and 1000000" })
)

/**
 * Presence or frequency penalty, -2 to 2.
 *
 * @since 0.3.0
 * @category Models
 */
export const Penalty = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(-2, 2, { description: "a number between -2 and 2" })
)

/**
 * An opaque end-user id for the provider's abuse monitoring (a hash or a UUID, never an email or a
 * name): 1 to 128 characters of `[A-Za-z0-9._:-]`. Records say only that one was set.
 *
 * @since 0.3.0
 * @category Models
 */
export const UserId = Schema.String.pipe(
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
 * @since 0.3.0
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
/** @since 0.3.0 */
export interface RequestOptions extends Schema.Schema.Type<typeof RequestOptions> {}

type MutableOptions = { -readonly [K in keyof RequestOptions]: RequestOptions[K] }

// ---------------------------------------------------------------------------------------------
// Workflow bounds
// ---------------------------------------------------------------------------------------------

/**
 * Bounds of a numeric option: a bare number pins it (default, minimum and maximum at once), or a
 * default and an allowed range (`{ default: 0.2, min: 0, max: 1 }`). Pinned when `min === max`.
 *
 * @since 0.3.0
 * @category Models
 */
export const rangeOf = <A extends number>(value: Schema.Schema<A, A>) =>
  Schema.Union(
    value,
    Schema.Struct({ default: Schema.optional(value), min: Schema.optional(value), max: Schema.optional(value) })
  )

/**
 * Bounds of an option with a few values: a bare value pins it, or a default and the values a
 * command may choose (`{ default: "low", allowed: ["low", "medium"] }`). Pinned when one value is
 * allowed.
 *
 * @since 0.3.0
 * @category Models
 */
export const choiceOf = <A extends string | boolean>(value: Schema.Schema<A, A>) =>
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
 *
 * @since 0.3.0
 * @category Models
 */
export const fixedOf = <A, I>(value: Schema.Schema<A, I>) =>
  Schema.Struct({ default: Schema.optional(value), overridable: Schema.optional(Schema.Boolean) })

/**
 * What a workflow allows and sets by default, per option.
 *
 * ```json
 * { "temperature": { "default": 0.2, "min": 0, "max": 1 }, "seed": 7, "reasoningEffort": { "allowed": ["low", "medium"] } }
 * ```
 *
 * @since 0.3.0
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
/** @since 0.3.0 */
export interface WorkflowOptions extends Schema.Schema.Type<typeof WorkflowOptions> {}

type Range =
  | number
  | { readonly default?: number | undefined; readonly min?: number | undefined; readonly max?: number | undefined }
type ChoiceBounds<A> = { readonly default?: A | undefined; readonly allowed?: ReadonlyArray<A> | undefined }
type Choice<A> = A | ChoiceBounds<A>

/** The bounds of a choice, a bare value read as the one allowed value. */
const choiceBounds = <A extends string | boolean>(b: Choice<A>): ChoiceBounds<A> =>
  typeof b === "string" || typeof b === "boolean" ? { default: b, allowed: [b] } : b
type Fixed<A> = { readonly default?: A | undefined; readonly overridable?: boolean | undefined }

const isPinnedRange = (b: Range | undefined): boolean =>
  b !== undefined && (typeof b === "number" || (b.min !== undefined && b.min === b.max))
const isPinnedChoice = <A extends string | boolean>(b: Choice<A> | undefined): boolean =>
  b !== undefined && choiceBounds(b).allowed?.length === 1
const isPinnedFixed = <A>(b: Fixed<A> | undefined): boolean =>
  b !== undefined && b.default !== undefined && b.overridable === false

/**
 * The options a workflow pins: every route target must accept them (checked at startup).
 *
 * @since 0.3.0
 * @category Utils
 */
export const pinned = (bounds: WorkflowOptions | undefined): ReadonlyArray<OptionName> => {
  if (bounds === undefined) return []
  const out: Array<OptionName> = []
  if (isPinnedRange(bounds.temperature)) out.push("temperature")
  if (isPinnedRange(bounds.topP)) out.push("topP")
  if (isPinnedRange(bounds.seed)) out.push("seed")
  if (isPinnedFixed(bounds.stop)) out.push("stop")
  if (isPinnedChoice(bounds.reasoningEffort)) out.push("reasoningEffort")
  if (isPinnedRange(bounds.reasoningBudget)) out.push("reasoningBudget")
  if (isPinnedChoice(bounds.parallelToolCalls)) out.push("parallelToolCalls")
  if (isPinnedRange(bounds.presencePenalty)) out.push("presencePenalty")
  if (isPinnedRange(bounds.frequencyPenalty)) out.push("frequencyPenalty")
  if (isPinnedFixed(bounds.userId)) out.push("userId")
  return out
}

/**
 * Problems of a workflow's bounds in themselves (a minimum above the maximum, a default outside the
 * range or the allowed values), as `[option, detail]` pairs; empty when consistent.
 *
 * @since 0.3.0
 * @category Validation
 */
export const boundsProblems = (bounds: WorkflowOptions | undefined): ReadonlyArray<readonly [OptionName, string]> => {
  if (bounds === undefined) return []
  const out: Array<readonly [OptionName, string]> = []
  const range = (name: OptionName, b: Range | undefined) => {
    if (b === undefined || typeof b === "number") return
    if (b.min !== undefined && b.max !== undefined && b.min > b.max) out.push([name, "min is above max"])
    if (b.default !== undefined && b.min !== undefined && b.default < b.min) out.push([name, "default is below min"])
    if (b.default !== undefined && b.max !== undefined && b.default > b.max) out.push([name, "default is above max"])
  }
  const choice = <A extends string | boolean>(name: OptionName, given: Choice<A> | undefined) => {
    if (given === undefined) return
    const b = choiceBounds(given)
    if (b.default !== undefined && b.allowed !== undefined && !b.allowed.includes(b.default)) {
      out.push([name, "default is not among the allowed values"])
    }
  }
  range("temperature", bounds.temperature)
  range("topP", bounds.topP)
  range("seed", bounds.seed)
  choice("reasoningEffort", bounds.reasoningEffort)
  range("reasoningBudget", bounds.reasoningBudget)
  choice("parallelToolCalls", bounds.parallelToolCalls)
  range("presencePenalty", bounds.presencePenalty)
  range("frequencyPenalty", bounds.frequencyPenalty)
  return out
}

// ---------------------------------------------------------------------------------------------
// Provider options (the escape hatch)
// ---------------------------------------------------------------------------------------------

/**
 * Most providers in one `providerOptions`, and most fields per provider.
 *
 * @since 0.3.0
 * @category Constants
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
 * At most {@link maxProviderOptions} providers and fields.
 *
 * @since 0.3.0
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
/** @since 0.3.0 */
export type ProviderOptions = typeof ProviderOptions.Type

/**
 * The wire fields an adapter lets `providerOptions` set, each with the schema its value must
 * satisfy (an adapter without one accepts none).
 *
 * @since 0.3.0
 * @category Models
 */
export type ProviderOptionsAllowlist = Readonly<Record<string, Schema.Schema.AnyNoContext>>

/**
 * Fields no allowlist can open: what the gateway itself sends (model, messages, output cap,
 * streaming, tools, response format, the neutral options' wire fields) in any provider's spelling.
 *
 * @since 0.3.0
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

/** Names that could carry an endpoint, a credential or a header, at any depth. */
const sensitiveName = /url|uri|endpoint|host|key|secret|token|passw|credential|auth|header|cookie|proxy/i

const validators = new WeakMap<Schema.Schema.AnyNoContext, (u: unknown) => boolean>()
const isValid = (schema: Schema.Schema.AnyNoContext, value: unknown): boolean => {
  let check = validators.get(schema)
  if (check === undefined) {
    const is = Schema.is(schema, { onExcessProperty: "error" })
    check = (u: unknown) => is(u)
    validators.set(schema, check)
  }
  return check(value)
}

/** The first key at any depth of `value` that names a URL, key, header…; iterative and bounded. */
const sensitiveKeyIn = (value: unknown): boolean => {
  const stack: Array<{ readonly v: unknown; readonly depth: number }> = [{ v: value, depth: 0 }]
  let seen = 0
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!
    if (++seen > 10_000 || depth > 16) return true
    if (typeof v !== "object" || v === null) continue
    if (Array.isArray(v)) {
      for (const item of v) stack.push({ v: item, depth: depth + 1 })
      continue
    }
    for (const [key, child] of Object.entries(v)) {
      if (sensitiveName.test(key)) return true
      stack.push({ v: child, depth: depth + 1 })
    }
  }
  return false
}

/**
 * Problems of the fields given for `provider` against its adapter's `allowlist`, value-free
 * (`openai.baseURL: not an allowed field`); empty when every field is allowed and valid.
 *
 * @since 0.3.0
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
    else if (sensitiveName.test(field)) out.push(`${name}: may not carry a URL, key or header`)
    else if (allowlist === undefined || !Object.hasOwn(allowlist, field)) out.push(`${name}: not an allowed field`)
    else if (sensitiveKeyIn(value)) out.push(`${name}: may not carry a URL, key or header`)
    else {
      const schema = allowlist[field]
      if (schema === undefined || !isValid(schema, value)) out.push(`${name}: invalid value`)
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

/**
 * The options of one call, resolved from the workflow's bounds and the command's overrides.
 *
 * @since 0.3.0
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

/**
 * No options: what a call resolves to when neither the workflow nor the command sets any.
 *
 * @since 0.3.0
 * @category Constants
 */
export const none: ResolvedOptions = { values: {}, required: [], providerOptions: undefined }

const describe = (v: number) => String(v)

/** A command value against numeric bounds: the value to use, or a problem. */
const pickRange = (
  name: OptionName,
  b: Range | undefined,
  v: number | undefined,
  required: Array<OptionName>
): number | string | undefined => {
  if (b === undefined) {
    if (v !== undefined) required.push(name)
    return v
  }
  const min = typeof b === "number" ? b : b.min
  const max = typeof b === "number" ? b : b.max
  const fallback = typeof b === "number" ? b : b.default
  if (min !== undefined && min === max) required.push(name)
  else if (v !== undefined) required.push(name)
  if (v === undefined) return fallback
  if (min !== undefined && min === max && v !== min)
    return `options.${name} is pinned by the workflow to ${describe(min)}`
  if (min !== undefined && v < min) return `options.${name} is below the workflow's minimum of ${describe(min)}`
  if (max !== undefined && v > max) return `options.${name} is above the workflow's maximum of ${describe(max)}`
  return v
}

const pickChoice = <A extends string | boolean>(
  name: OptionName,
  b: Choice<A> | undefined,
  v: A | undefined,
  required: Array<OptionName>
): { readonly value: A | undefined } | string => {
  if (b === undefined) {
    if (v !== undefined) required.push(name)
    return { value: v }
  }
  const { allowed, default: fallback } = choiceBounds(b)
  if (allowed?.length === 1 || v !== undefined) required.push(name)
  if (v === undefined) return { value: fallback }
  if (allowed !== undefined && !allowed.includes(v)) {
    return `options.${name} is not among the workflow's allowed values [${allowed.map(String).join(", ")}]`
  }
  return { value: v }
}

const pickFixed = <A>(
  name: OptionName,
  b: Fixed<A> | undefined,
  v: A | undefined,
  required: Array<OptionName>
): { readonly value: A | undefined } | string => {
  if (v !== undefined) {
    if (b?.overridable === false) return `options.${name} is fixed by the workflow`
    required.push(name)
    return { value: v }
  }
  if (isPinnedFixed(b)) required.push(name)
  return { value: b?.default }
}

const mergeProviderOptions = (
  workflow: ProviderOptions | undefined,
  command: ProviderOptions | undefined
): ProviderOptions | string | undefined => {
  if (command === undefined) return workflow
  if (workflow === undefined) return command
  const out: Record<string, Readonly<Record<string, unknown>>> = { ...workflow }
  for (const [provider, fields] of Object.entries(command)) {
    const fixed = Object.hasOwn(workflow, provider) ? workflow[provider] : undefined
    if (fixed === undefined) {
      out[provider] = fields
      continue
    }
    for (const field of Object.keys(fields)) {
      if (Object.hasOwn(fixed, field)) {
        return `providerOptions.${provider.slice(0, 100)}.${field.slice(0, 64)} is set by the workflow`
      }
    }
    out[provider] = { ...fixed, ...fields }
  }
  return out
}

/**
 * Resolves a command's options and provider options against its workflow's: the values to send
 * and which of them are required, or a value-free problem (`options.temperature is above the
 * workflow's maximum of 1`) that makes the call `InvalidRequest`.
 *
 * @since 0.3.0
 * @category Resolution
 */
export const resolve = (
  workflow: {
    readonly options?: WorkflowOptions | undefined
    readonly providerOptions?: ProviderOptions | undefined
  },
  command: {
    readonly options?: RequestOptions | undefined
    readonly providerOptions?: ProviderOptions | undefined
  }
): Either.Either<ResolvedOptions, string> => {
  const b = workflow.options
  const r = command.options
  if (b === undefined && r === undefined && workflow.providerOptions === undefined) {
    return command.providerOptions === undefined
      ? Either.right(none)
      : Either.right({ values: {}, required: [], providerOptions: command.providerOptions })
  }
  const required: Array<OptionName> = []
  const values: MutableOptions = {}
  const problems: Array<string> = []
  const range = (name: OptionName, bound: Range | undefined, v: number | undefined): number | undefined => {
    const picked = pickRange(name, bound, v, required)
    if (typeof picked === "string") {
      problems.push(picked)
      return undefined
    }
    return picked
  }
  const unwrap = <A>(picked: { readonly value: A | undefined } | string): A | undefined => {
    if (typeof picked === "string") {
      problems.push(picked)
      return undefined
    }
    return picked.value
  }
  const temperature = range("temperature", b?.temperature, r?.temperature)
  if (temperature !== undefined) values.temperature = temperature
  const topP = range("topP", b?.topP, r?.topP)
  if (topP !== undefined) values.topP = topP
  const seed = range("seed", b?.seed, r?.seed)
  if (seed !== undefined) values.seed = seed
  const stop = unwrap(pickFixed("stop", b?.stop, r?.stop, required))
  if (stop !== undefined) values.stop = stop
  const effort = unwrap(pickChoice("reasoningEffort", b?.reasoningEffort, r?.reasoningEffort, required))
  if (effort !== undefined) values.reasoningEffort = effort
  const budget = range("reasoningBudget", b?.reasoningBudget, r?.reasoningBudget)
  if (budget !== undefined) values.reasoningBudget = budget
  const parallel = unwrap(pickChoice("parallelToolCalls", b?.parallelToolCalls, r?.parallelToolCalls, required))
  if (parallel !== undefined) values.parallelToolCalls = parallel
  const presence = range("presencePenalty", b?.presencePenalty, r?.presencePenalty)
  if (presence !== undefined) values.presencePenalty = presence
  const frequency = range("frequencyPenalty", b?.frequencyPenalty, r?.frequencyPenalty)
  if (frequency !== undefined) values.frequencyPenalty = frequency
  const userId = unwrap(pickFixed("userId", b?.userId, r?.userId, required))
  if (userId !== undefined) values.userId = userId
  const providerOptions = mergeProviderOptions(workflow.providerOptions, command.providerOptions)
  if (typeof providerOptions === "string") problems.push(providerOptions)
  if (problems.length > 0) return Either.left(problems.join("; "))
  return Either.right({
    values,
    required,
    providerOptions: typeof providerOptions === "string" ? undefined : providerOptions
  })
}

/**
 * The required options `accepted` (a target's `capabilities.options`) lacks, or `undefined` when
 * it accepts them all. Allocates only when one is missing.
 *
 * @since 0.3.0
 * @category Utils
 */
export const unsupported = (
  required: ReadonlyArray<OptionName>,
  accepted: ReadonlyArray<OptionName>
): Array<OptionName> | undefined => {
  let missing: Array<OptionName> | undefined
  for (const name of required) {
    if (accepted.includes(name)) continue
    if (missing === undefined) missing = []
    missing.push(name)
  }
  return missing
}

/**
 * The options to send to a target that accepts `accepted` (its `capabilities.options`; omitted:
 * none): the resolved values without the workflow defaults it does not accept (required options it
 * lacks keep it out of the route). The resolved values themselves when it accepts them all.
 *
 * @since 0.3.0
 * @category Resolution
 */
export const forTarget = (
  resolved: ResolvedOptions,
  accepted: ReadonlyArray<OptionName> | undefined
): RequestOptions => {
  const values = resolved.values
  if (resolved === none) return values
  let out: MutableOptions | undefined
  for (const name of optionNames) {
    if (values[name] === undefined || accepted?.includes(name)) continue
    if (out === undefined) out = { ...values }
    delete out[name]
  }
  return out ?? values
}

/**
 * The wire fields of `provider` in the resolved provider options, if any.
 *
 * @since 0.3.0
 * @category Resolution
 */
export const forProvider = (
  resolved: ResolvedOptions,
  provider: string
): Readonly<Record<string, unknown>> | undefined => {
  const all = resolved.providerOptions
  return all !== undefined && Object.hasOwn(all, provider) ? all[provider] : undefined
}

// ---------------------------------------------------------------------------------------------
// Evidence
// ---------------------------------------------------------------------------------------------

/**
 * The options of a call as evidence records them: values, never content. The end-user id is
 * recorded as `"set"`, provider options by field name only (`openai.service_tier`).
 *
 * @since 0.3.0
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
/** @since 0.3.0 */
export interface OptionsEvidence extends Schema.Schema.Type<typeof OptionsEvidence> {}

/**
 * The evidence of the options sent to `target` (those of the answer), or of the resolved options
 * when no target answered; `undefined` when none were set.
 *
 * @since 0.3.0
 * @category Evidence
 */
export const evidenceOf = (
  resolved: ResolvedOptions | undefined,
  target:
    | { readonly provider: string; readonly capabilities: { readonly options?: ReadonlyArray<OptionName> | undefined } }
    | undefined
): OptionsEvidence | undefined => {
  if (resolved === undefined || resolved === none) return undefined
  const values = target === undefined ? resolved.values : forTarget(resolved, target.capabilities.options)
  const { userId, ...rest } = values
  const fields: Array<string> = []
  const providers = resolved.providerOptions ?? {}
  for (const [provider, given] of Object.entries(providers)) {
    if (target !== undefined && provider !== target.provider) continue
    for (const field of Object.keys(given)) fields.push(`${provider}.${field}`)
  }
  const out: OptionsEvidence = {
    ...rest,
    ...(userId !== undefined ? { userId: "set" as const } : {}),
    ...(fields.length > 0 ? { providerOptions: fields } : {})
  }
  return Object.keys(out).length === 0 ? undefined : out
}
