/**
 * A model catalogue shipped as versioned data: pinned model ids with their capabilities, limits,
 * accepted options and prices, so that a target can name an entry instead of spelling them out:
 *
 * ```json
 * { "ref": "model://openai/gpt-4.1-mini@eu", "catalogue": "openai/gpt-4.1-mini",
 *   "regions": ["eu"], "dataClasses": ["internal"] }
 * ```
 *
 * The entry supplies `provider`, `model`, `capabilities`, `pricing` (with `pricingVersion` equal to
 * {@link version}) and `tokenizerSafetyFactor`; any of them given in the target overrides the
 * entry (`capabilities` key by key, `pricing` and `capabilities.structuredOutput` as a whole: a price
 * list has one version, a structured-output mode has its own features). `regions` and
 * `dataClasses` never come from the catalogue: where data may go stays an explicit decision.
 * References are resolved when a configuration is decoded (`GatewayConfig.decode`,
 * `ModelGateway.layerJson`); an unknown id is the listed problem `UNKNOWN_CATALOGUE_ENTRY`, and a
 * target that pins `catalogueVersion` to another version than this release ships is
 * `CATALOGUE_VERSION_MISMATCH` (so prices never change under a pinned configuration silently).
 * Evidence records the catalogue version of the target that answered.
 *
 * **The figures are data, updated by hand (or by a script) for each release, never fetched at run
 * time.** Figures as of 2026-08-21 (`figuresAsOf`), taken from the providers' pricing and model pages as
 * collected by `pydantic/genai-prices` (commit 47df840, 2026-08-21; it cites
 * https://developers.openai.com/api/docs/pricing, https://www.anthropic.com/pricing#api and
 * https://ai.google.dev/gemini-api/docs/pricing) and cross-checked against LiteLLM's
 * `model_prices_and_context_window.json` (as mirrored on 2026-07-24) for context windows and
 * output limits. Not re-checked against the live provider pages when this version was cut: where
 * the two sources disagree or a figure is not published, the entry says so in a comment.
 *
 * Conventions:
 *
 * - Prices are USD per million tokens at the standard (not batch, flex or priority) tier.
 *   `cachedInputPerMillion` is the cache-read price; cache writes (Anthropic 1.25×, OpenAI 5.6
 *   1.25×) and audio input are not modelled.
 * - Where a provider charges more above a prompt size (long-context tier), `contextWindow` is
 *   capped at that threshold, so the flat price is right for every call the router lets through
 *   (a call whose estimate exceeds the window is excluded as `CONTEXT_TOO_SMALL`). To use the long
 *   tier, override `capabilities.contextWindow` and `pricing` together.
 * - `tokenizerSafetyFactor` scales modelgate's o200k estimate for providers whose tokenizer is not
 *   public: 1.2 for Anthropic, 1.1 for Google. Deliberately conservative margins, not measured.
 * - Structured output: OpenAI strict mode and Anthropic structured outputs are constrained
 *   decoding that rejects unsupported schema keywords (`json_schema_strict` with the features
 *   listed); Gemini's `responseJsonSchema` ignores what it does not support (`json_schema`, every
 *   feature; the gateway validates the answer).
 * - `capabilities.options`: the neutral request options (`ModelOptions.OptionName`) a model
 *   accepts. Reasoning models (OpenAI GPT-5.x) take `reasoningEffort` and reject sampling
 *   options; Anthropic models accept `temperature` or `topP` but not both in one request.
 * - The schema-feature and option lists follow the providers' API documentation as read for this
 *   version; the price sources above do not carry them, so they are the least certain part of an
 *   entry. Override them per target where a provider behaves otherwise.
 *
 * @since 0.2.0
 */
import { Option } from "effect"
import type { OptionName } from "./ModelOptions.js"
import type { SchemaFeature, StructuredOutputMode } from "./ModelTarget.js"

/**
 * The catalogue's version: the `pricingVersion` of every entry's prices and the
 * `catalogueVersion` recorded in evidence.
 *
 * @since 0.2.0
 * @category Constants
 */
export const version = "catalogue-2026-11"

/**
 * Date of the figures (prices, windows, limits) in this version.
 *
 * @since 0.2.0
 * @category Constants
 *
 * @internal
 */
export const figuresAsOf = "2026-08-21"

/**
 * One catalogue entry, in the encoded (JSON) form of a target's fields.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Entry {
  /** Adapter id the entry is served by (the default `provider` of a target naming it). */
  readonly provider: string
  /** The pinned model id sent to the provider (a dated snapshot where the provider publishes one). */
  readonly model: string
  readonly capabilities: {
    readonly vision: boolean
    readonly tools: boolean
    readonly streaming: boolean
    readonly structuredOutput: {
      readonly mode: StructuredOutputMode
      readonly supportedFeatures?: ReadonlyArray<SchemaFeature>
    }
    readonly contextWindow: number
    readonly maxOutputTokens: number
    /** Neutral request options the model accepts (`ModelOptions.OptionName`). */
    readonly options: ReadonlyArray<OptionName>
  }
  readonly pricing: {
    readonly inputPerMillion: number
    readonly cachedInputPerMillion?: number
    readonly outputPerMillion: number
    readonly currency: "USD"
  }
  readonly tokenizerSafetyFactor: number
}

// ---------------------------------------------------------------------------------------------
// Shared settings
// ---------------------------------------------------------------------------------------------

/**
 * OpenAI strict mode: `additionalProperties: false` and every property required (so neither
 * `openObject` nor `optionalProperties`); no `allOf`, `oneOf`, `not`; no string length limits.
 */
const openAiStrict = {
  mode: "json_schema_strict",
  supportedFeatures: [
    "anyOf",
    "enum",
    "const",
    "pattern",
    "format",
    "numberRange",
    "arrayLength",
    "recursiveRef",
    "nullable"
  ]
} as const

/**
 * Anthropic structured outputs: no recursive schemas, no numeric or string-length limits, array
 * limits only `minItems` 0 or 1 (so no `arrayLength`), `additionalProperties: false` only; optional
 * properties are allowed. `pattern` takes simple regular expressions (no backreferences).
 */
const anthropicStrict = {
  mode: "json_schema_strict",
  supportedFeatures: ["anyOf", "allOf", "enum", "const", "pattern", "format", "optionalProperties", "nullable"]
} as const

/** Gemini `responseJsonSchema`: schema-guided, unsupported keywords ignored; the gateway validates. */
const geminiSchema = { mode: "json_schema" } as const

/** GPT-4.1: the sampling options, `user` / `safety_identifier`; not a reasoning model. */
const openAiSampling: ReadonlyArray<OptionName> = [
  "temperature",
  "topP",
  "seed",
  "stop",
  "presencePenalty",
  "frequencyPenalty",
  "parallelToolCalls",
  "userId"
]
/**
 * GPT-5.x are reasoning models: `reasoning_effort`; temperature, top_p, penalties and `stop` are
 * rejected. `seed` is left out (not documented for them).
 */
const openAiReasoning: ReadonlyArray<OptionName> = ["reasoningEffort", "parallelToolCalls", "userId"]
/**
 * Anthropic: `temperature` or `top_p` (not both in one request on 4.5 and later), `stop_sequences`,
 * extended thinking `budget_tokens`, `disable_parallel_tool_use`, `metadata.user_id`; no seed, no
 * penalties.
 */
const anthropicOptions: ReadonlyArray<OptionName> = [
  "temperature",
  "topP",
  "stop",
  "reasoningBudget",
  "parallelToolCalls",
  "userId"
]
/** Gemini 2.5: `generationConfig` sampling fields and `thinkingConfig.thinkingBudget`. */
const gemini25Options: ReadonlyArray<OptionName> = [
  "temperature",
  "topP",
  "seed",
  "stop",
  "presencePenalty",
  "frequencyPenalty",
  "reasoningBudget"
]
/**
 * Gemini 3.x: `thinkingBudget` is still accepted (Google recommends `thinkingLevel`, whose values
 * differ per model, so `reasoningEffort` is left out); penalties are not documented for 3.x and are
 * left out rather than guessed.
 */
const gemini3Options: ReadonlyArray<OptionName> = ["temperature", "topP", "seed", "stop", "reasoningBudget"]

/**
 * An entry of one provider family: what the family shares (adapter id, structured output, tokenizer
 * margin, vision, tools and streaming), then the model's own id, window, output limit, options and
 * prices (input, cached input, output per million).
 */
const family =
  (provider: string, structuredOutput: Entry["capabilities"]["structuredOutput"], tokenizerSafetyFactor: number) =>
  (
    model: string,
    contextWindow: number,
    maxOutputTokens: number,
    options: ReadonlyArray<OptionName>,
    [inputPerMillion, cachedInputPerMillion, outputPerMillion]: readonly [number, number, number]
  ): Entry => ({
    provider,
    model,
    capabilities: {
      vision: true,
      tools: true,
      streaming: true,
      structuredOutput,
      contextWindow,
      maxOutputTokens,
      options
    },
    pricing: { inputPerMillion, cachedInputPerMillion, outputPerMillion, currency: "USD" },
    tokenizerSafetyFactor
  })

const openAi = family("openai", openAiStrict, 1)
const anthropic = family("anthropic", anthropicStrict, 1.2)
const gemini = family("gemini", geminiSchema, 1.1)

// ---------------------------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------------------------

const data = {
  // ----- OpenAI -------------------------------------------------------------------------------
  "openai/gpt-4.1-mini": openAi("gpt-4.1-mini-2025-04-14", 1_047_576, 32_768, openAiSampling, [0.4, 0.1, 1.6]),
  "openai/gpt-4.1": openAi("gpt-4.1-2025-04-14", 1_047_576, 32_768, openAiSampling, [2, 0.5, 8]),
  // GPT-5.6: no dated snapshot id known to us, so the alias is pinned; replace it with the dated id
  // once checked. Window 1,050,000 per genai-prices, 400,000 per LiteLLM; capped here at the
  // 272,000-token long-context threshold (above it: 2× input, 1.5× output) either way.
  "openai/gpt-5.6-sol": openAi("gpt-5.6-sol", 272_000, 128_000, openAiReasoning, [5, 0.5, 30]),
  // Prices after OpenAI's 20 % cut of 2026-07-30 (genai-prices); LiteLLM still lists 2.50 / 15.
  "openai/gpt-5.6-terra": openAi("gpt-5.6-terra", 272_000, 128_000, openAiReasoning, [2, 0.2, 12]),
  // Prices after OpenAI's 80 % cut of 2026-07-30 (genai-prices); LiteLLM still lists 1 / 6.
  "openai/gpt-5.6-luna": openAi("gpt-5.6-luna", 272_000, 128_000, openAiReasoning, [0.2, 0.02, 1.2]),
  // ----- Anthropic ----------------------------------------------------------------------------
  "anthropic/claude-haiku-4-5": anthropic("claude-haiku-4-5-20251001", 200_000, 64_000, anthropicOptions, [1, 0.1, 5]),
  // 200,000 tokens at these prices; the 1 M window costs 2× input and 1.5× output above that.
  "anthropic/claude-sonnet-4-5": anthropic(
    "claude-sonnet-4-5-20250929",
    200_000,
    64_000,
    anthropicOptions,
    [3, 0.3, 15]
  ),
  // Standard prices since 2026-09-01 (the introductory 2 / 10 ended 2026-08-31). Flat across the
  // 1 M window. Alias pinned (no dated id known to us); max output 128,000 per LiteLLM only.
  "anthropic/claude-sonnet-5": anthropic("claude-sonnet-5", 1_000_000, 128_000, anthropicOptions, [3, 0.3, 15]),
  // Flat across the 1 M window. Alias pinned (no dated id known to us); max output per LiteLLM only.
  "anthropic/claude-opus-5": anthropic("claude-opus-5", 1_000_000, 128_000, anthropicOptions, [5, 0.5, 25]),
  // ----- Google (adapter id `gemini`) ---------------------------------------------------------
  // Stable Gemini ids are already pinned versions. Prices are for text, image and video input;
  // audio input costs more and is not modelled.
  "gemini/gemini-2.5-flash": gemini("gemini-2.5-flash", 1_048_576, 65_536, gemini25Options, [0.3, 0.03, 2.5]),
  // 200,000 tokens at these prices (window 1,048,576; above 200,000: 2.50 input, 15 output).
  "gemini/gemini-2.5-pro": gemini("gemini-2.5-pro", 200_000, 65_536, gemini25Options, [1.25, 0.125, 10]),
  // A preview model: Google may change or retire it at short notice. 200,000 tokens at these prices
  // (above: 4 input, 18 output).
  "gemini/gemini-3.1-pro-preview": gemini("gemini-3.1-pro-preview", 200_000, 65_536, gemini3Options, [2, 0.2, 12]),
  // Gemini 3.6 / 3.7 Flash are left out: their introductory prices end 2026-12-31 and double after.
  "gemini/gemini-3.5-flash": gemini("gemini-3.5-flash", 1_048_576, 65_536, gemini3Options, [1.5, 0.15, 9]),
  "gemini/gemini-3.5-flash-lite": gemini("gemini-3.5-flash-lite", 1_048_576, 65_536, gemini3Options, [0.3, 0.03, 2.5])
} satisfies Record<string, Entry>

/**
 * Id of a catalogue entry, `<adapter id>/<model name>` (`openai/gpt-4.1-mini`).
 *
 * @since 0.2.0
 * @category Models
 */
export type Id = keyof typeof data

/**
 * Every entry, by id.
 *
 * @since 0.2.0
 * @category Constants
 */
export const entries: { readonly [K in Id]: Entry } = data

/**
 * Every entry id, in catalogue order.
 *
 * @since 0.2.0
 * @category Constants
 */
export const ids: ReadonlyArray<Id> = Object.keys(data).filter((k): k is Id => Object.hasOwn(data, k))

/**
 * Whether `id` names an entry (own properties only: `constructor` or `__proto__` name none).
 *
 * @since 0.2.0
 * @category Guards
 */
export const isId = (id: unknown): id is Id => typeof id === "string" && Object.hasOwn(data, id)

/**
 * The entry named `id`, if any.
 *
 * @since 0.2.0
 * @category Getters
 */
export const get = (id: string): Option.Option<Entry> => (isId(id) ? Option.some(entries[id]) : Option.none())
