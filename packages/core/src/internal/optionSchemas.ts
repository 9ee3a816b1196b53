/**
 * The schemas of module `ModelOptions` that only the engine decodes (a workflow's bounds, a
 * command's and a workflow's provider options, the evidence of a call's options) and the value
 * schemas of the neutral options they and `ModelOptions.RequestOptions` are built from: their
 * types stay public in `ModelOptions`.
 */
import { Schema } from "effect"

/**
 * Sampling temperature, 0 to 2 (Anthropic accepts 0 to 1; its adapter refuses more).
 */
export const Temperature = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(0, 2, { description: "a number between 0 and 2" })
)

/**
 * Nucleus sampling mass, 0 to 1.
 */
export const TopP = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(0, 1, { description: "a number between 0 and 1" })
)

/**
 * Sampling seed: a non-negative 32-bit integer (the range every provider accepts).
 */
export const Seed = Schema.Int.pipe(
  Schema.between(0, 2_147_483_647, { description: "an integer between 0 and 2147483647" })
)

/**
 * Longest stop sequence.
 */
const maxStopSequenceLength = 100

/**
 * Stop sequences: 1 to 4 (OpenAI's limit), each 1 to 100 characters.
 */
export const StopSequences = Schema.Array(
  Schema.String.pipe(Schema.minLength(1), Schema.maxLength(maxStopSequenceLength))
).pipe(Schema.minItems(1), Schema.maxItems(4, { description: "1 to 4 stop sequences" }))

/**
 * Reasoning effort of a reasoning model.
 */
export const ReasoningEffort = Schema.Literal("low", "medium", "high")

/**
 * Thinking budget in tokens; 0 turns thinking off where the provider allows it.
 */
export const ReasoningBudget = Schema.Int.pipe(
  Schema.between(0, 1_000_000, { description: "an integer between 0 and 1000000" })
)

/**
 * Presence or frequency penalty, -2 to 2.
 */
export const Penalty = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(-2, 2, { description: "a number between -2 and 2" })
)

/**
 * An opaque end-user id for the provider's abuse monitoring (a hash or a UUID, never an email or a
 * name): 1 to 128 characters of `[A-Za-z0-9._:-]`. Records say only that one was set.
 */
export const UserId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._:-]{1,128}$/, { description: "1 to 128 characters of [A-Za-z0-9._:-]" })
)

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

/** The schema of `ModelOptions.WorkflowOptions`. */
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

// ---------------------------------------------------------------------------------------------
// Provider options
// ---------------------------------------------------------------------------------------------

/**
 * Most providers in one `providerOptions`, and most fields per provider.
 */
export const maxProviderOptions = { providers: 8, fields: 32 } as const

/** A provider id, as `ModelTarget.ProviderId` spells it (not imported: `ModelTarget` imports `ModelOptions`, which imports this module). */
const ProviderKey = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,99}$/, { description: "a provider id" }))

/** A wire field name: a letter, then letters, digits and `_`, at most 64 characters. */
const FieldName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, { description: "a wire field name ([A-Za-z][A-Za-z0-9_]{0,63})" })
)

/** The schema of `ModelOptions.ProviderOptions`. */
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

/** The schema of `ModelOptions.OptionsEvidence`. */
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
