/**
 * Registry entries: the models a gateway may call, what they can do, where they run and what they cost.
 *
 * @since 0.1.0
 */
import { Duration, Schema } from "effect"
import { OptionName } from "./ModelOptions.js"
import { RateLimit } from "./RateLimits.js"
import { TenantId } from "./Tenancy.js"
import * as Literals from "./internal/literals.js"

/**
 * Stable id of a target, e.g. `model://openai/gpt-4.1-mini@eu`.
 *
 * @since 0.1.0
 * @category Models
 */
export const TargetRef = Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(200), Schema.brand("TargetRef"))
/** @since 0.1.0 */
export type TargetRef = typeof TargetRef.Type

/**
 * Id of a provider adapter (`openai`, `anthropic`, `gemini`, `vllm-eu`, …).
 *
 * @since 0.1.0
 * @category Models
 */
export const ProviderId = Schema.NonEmptyTrimmedString.pipe(
  Schema.maxLength(100),
  Schema.pattern(/^[a-z0-9][a-z0-9._-]*$/),
  Schema.brand("ProviderId")
)
/** @since 0.1.0 */
export type ProviderId = typeof ProviderId.Type

/**
 * A JSON-Schema feature that a structured-output mode may or may not accept.
 *
 * @since 0.1.0
 * @category Models
 */
export type SchemaFeature = typeof Literals.SchemaFeature.Type

/**
 * How a target returns structured output.
 *
 * - `none`: free text only.
 * - `json_object`: JSON mode, no schema enforcement (the gateway still validates).
 * - `json_schema`: schema-guided, best effort.
 * - `json_schema_strict`: constrained decoding that rejects unsupported schema features.
 *
 * @since 0.1.0
 * @category Models
 */
const StructuredOutputMode = Schema.Literal("none", "json_object", "json_schema", "json_schema_strict")
/** @since 0.1.0 */
export type StructuredOutputMode = typeof StructuredOutputMode.Type

/**
 * Features a strict structured-output mode accepts when the target does not declare its own list
 * (the intersection of what OpenAI strict mode, Anthropic structured outputs and Gemini accept).
 */
const defaultStrictFeatures: ReadonlyArray<SchemaFeature> = ["anyOf", "enum", "const", "nullable"]

/**
 * Features a non-strict schema mode accepts by default: everything.
 */
const allSchemaFeatures: ReadonlyArray<SchemaFeature> = Literals.SchemaFeature.literals

/**
 * @since 0.1.0
 * @category Models
 */
export class StructuredOutput extends Schema.Class<StructuredOutput>("@modelgate/core/StructuredOutput")({
  mode: StructuredOutputMode,
  /** Features accepted. Omitted: all for `json_schema`/`json_object`, `anyOf`, `enum`, `const` and `nullable` for strict. */
  supportedFeatures: Schema.optional(Schema.Array(Literals.SchemaFeature))
}) {
  /** The features this mode accepts, after defaults. */
  get features(): ReadonlyArray<SchemaFeature> {
    if (this.supportedFeatures !== undefined) return this.supportedFeatures
    switch (this.mode) {
      case "none":
        return []
      case "json_schema_strict":
        return defaultStrictFeatures
      default:
        return allSchemaFeatures
    }
  }
}

/**
 * Longest duration any configuration field or command accepts: 24 hours. Timeouts, retry delays,
 * breaker cool-downs and health windows are finite and at most this long (`1e309`, which
 * `JSON.parse` reads as `Infinity`, is refused).
 *
 * @since 0.2.0
 * @category Constants
 */
export const maxDuration: Duration.Duration = Duration.hours(24)

const maxDurationMillis = Duration.toMillis(maxDuration)

/**
 * A duration in configuration, written as milliseconds: finite, between 0 and {@link maxDuration}.
 * Checked on both sides, so a class built in code refuses `Duration.infinity` too.
 *
 * @internal
 */
export const Millis = Schema.transform(
  Schema.Number.pipe(
    Schema.finite(),
    Schema.between(0, maxDurationMillis, { description: `milliseconds between 0 and ${maxDurationMillis} (24 h)` })
  ),
  Schema.DurationFromSelf.pipe(
    Schema.lessThanOrEqualToDuration(maxDuration, {
      description: "a finite duration of at most 24 h",
      arbitrary: () => (fc) => fc.integer({ min: 0, max: maxDurationMillis }).map(Duration.millis)
    })
  ),
  { strict: true, decode: (ms) => Duration.millis(ms), encode: (d) => Duration.toMillis(d) }
)

/**
 * Most entries of a region or data-class list (in a target, a workflow or a command).
 */
const maxLabels = 32

/**
 * Longest region or data-class name.
 */
const maxLabelLength = 64

/**
 * A region (`eu`, `us-east-1`) or data class (`internal`) name: trimmed, 1 to 64
 * characters.
 *
 * @internal
 */
export const Label = Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(maxLabelLength))

/**
 * A non-empty list of at most 32 {@link Label}s.
 *
 * @internal
 */
export const Labels = Schema.NonEmptyArray(Label).pipe(Schema.maxItems(maxLabels))

/**
 * Longest name or version string in configuration (model id, prompt id, schema or handler name,
 * price-list version).
 */
const maxNameLength = 200

/**
 * A name or version in configuration: trimmed, 1 to 200 characters.
 *
 * @internal
 */
export const Name = Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(maxNameLength))

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegative = Schema.Number.pipe(Schema.nonNegative(), Schema.finite())

/**
 * Most dimensions an embedding vector may declare.
 *
 * @internal
 */
export const maxEmbeddingDimensions = 65_536

/**
 * The vectors an embedding target produces: their length and the model family whose vector space
 * they belong to. Vectors of two targets are comparable only when both agree (`Embeddings`).
 *
 * @since 0.2.0
 * @category Models
 */
export class EmbeddingCapability extends Schema.Class<EmbeddingCapability>("@modelgate/core/EmbeddingCapability")({
  /** Length of every vector. */
  dimensions: PositiveInt.pipe(Schema.lessThanOrEqualTo(maxEmbeddingDimensions)),
  /** The vector space (e.g. `text-embedding-3-small`); omitted: the target's `model`. */
  family: Schema.optional(Name),
  /**
   * Ask the provider for `dimensions` on the wire (OpenAI `dimensions`, Gemini
   * `outputDimensionality`), for models that shorten their vectors. Default `false`.
   */
  sendDimensions: Schema.optionalWith(Schema.Boolean, { default: () => false })
}) {}

/**
 * An audio format of an `audio` content part (`ModelCommand`), and of a target's
 * `capabilities.audioInput`.
 *
 * @internal
 */
export const AudioFormat = Schema.Literal("wav", "mp3", "flac", "aac", "ogg", "webm", "m4a", "aiff")

/**
 * A media type (`application/pdf`): `type/subtype`, at most 100 characters.
 *
 * @internal
 */
export const MediaType = Schema.String.pipe(
  Schema.maxLength(100),
  Schema.pattern(/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i)
)

/**
 * What a target can do.
 *
 * @since 0.1.0
 * @category Models
 */
export class Capabilities extends Schema.Class<Capabilities>("@modelgate/core/Capabilities")({
  vision: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  tools: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  streaming: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  structuredOutput: Schema.optionalWith(StructuredOutput, {
    default: () => new StructuredOutput({ mode: "none" })
  }),
  contextWindow: PositiveInt,
  maxOutputTokens: PositiveInt,
  /**
   * The neutral options (`ModelOptions.OptionName`) this target honours, e.g.
   * `["temperature", "topP", "seed", "stop"]`; a reasoning model typically lists
   * `reasoningEffort` and not `temperature`. Omitted: none. A request that sets an option the
   * target does not list, or a workflow that pins one, keeps the target out of its route
   * (`OPTION_UNSUPPORTED`); a workflow default it does not list is not sent to it.
   */
  options: Schema.optional(Schema.Array(OptionName).pipe(Schema.maxItems(16))),
  /**
   * Present on an embedding model (`ModelGateway.embed`): the vectors it produces. Such a target
   * serves embedding workflows only; its `pricing.outputPerMillion` must be 0 and `contextWindow`
   * bounds the input tokens of one request (all inputs together).
   */
  embeddings: Schema.optional(EmbeddingCapability),
  /**
   * Audio formats the target accepts as input (`audio` parts of a command), e.g. `["wav", "mp3"]`
   * for OpenAI's audio models. Omitted: none. A request with an audio part in another format keeps
   * the target out of its route (`MEDIA_UNSUPPORTED`).
   */
  audioInput: Schema.optional(Schema.Array(AudioFormat).pipe(Schema.minItems(1), Schema.maxItems(8))),
  /**
   * Media types of `file` parts the target accepts, e.g. `["application/pdf"]`. Omitted: none. A
   * request with a file of another type keeps the target out of its route (`MEDIA_UNSUPPORTED`).
   */
  fileInput: Schema.optional(Schema.Array(MediaType).pipe(Schema.minItems(1), Schema.maxItems(32)))
}) {}

/**
 * Prices per million tokens, with the version of the price list they come from.
 *
 * @since 0.1.0
 * @category Models
 */
export class Pricing extends Schema.Class<Pricing>("@modelgate/core/Pricing")({
  inputPerMillion: NonNegative,
  cachedInputPerMillion: Schema.optional(NonNegative),
  /** Price of audio input tokens (`Usage.audioInputTokens`); omitted: the input price. */
  audioInputPerMillion: Schema.optional(NonNegative),
  outputPerMillion: NonNegative,
  currency: Schema.optionalWith(Schema.Literal("USD"), { default: () => "USD" as const }),
  pricingVersion: Name
}) {}

/**
 * Per-target attempt limits.
 *
 * @since 0.1.0
 * @category Models
 */
export class AttemptLimits extends Schema.Class<AttemptLimits>("@modelgate/core/AttemptLimits")({
  /** Attempts on this target per call, the first included. */
  maxAttempts: Schema.optionalWith(PositiveInt.pipe(Schema.lessThanOrEqualTo(10)), { default: () => 2 }),
  /** Upper bound of one attempt; the real bound is `min(remaining, perAttemptTimeout)`. */
  perAttemptTimeout: Schema.optionalWith(Millis, { default: () => Duration.seconds(30) }),
  /** Time to first token for streams. */
  ttftTimeout: Schema.optional(Millis),
  /** Longest gap between stream chunks. */
  streamIdleTimeout: Schema.optional(Millis),
  /** No attempt starts with less time than this left before the deadline. */
  minimumAttemptTime: Schema.optionalWith(Millis, { default: () => Duration.millis(100) })
}) {}

/**
 * Target lifecycle status. `deprecated` targets stay eligible, are scored down under scored
 * selection and logged once (a warning) when first routed to; `disabled` targets are never called.
 *
 * @since 0.1.0
 * @category Models
 */
const TargetStatus = Schema.Literal("active", "deprecated", "disabled")

/**
 * Quality class of a target, weakest first. Order matters: `minQualityTier` keeps targets at or
 * above a class, and scored selection reads the class when no verified score applies.
 *
 * @since 0.2.0
 * @category Models
 */
export type QualityTier = typeof Literals.QualityTier.Type

/**
 * Latency class of a target, fastest first.
 *
 * @since 0.2.0
 * @category Models
 */
const LatencyTier = Schema.Literal("fast", "medium", "slow")

/**
 * Cost class of a target, cheapest first (descriptive: scoring reads the prices).
 *
 * @since 0.2.0
 * @category Models
 */
const CostTier = Schema.Literal("low", "medium", "high")

/**
 * Rank of a quality class (`low` 0, `standard` 1, `high` 2).
 *
 * @since 0.2.0
 * @category Utils
 */
export const qualityRank = (tier: QualityTier): number => Literals.QualityTier.literals.indexOf(tier)

/**
 * A target's classes. Each is optional; `quality` omitted falls back to the legacy `tier`
 * (`small` → `low`, `medium` → `standard`, `large` → `high`).
 *
 * @since 0.2.0
 * @category Models
 */
export class TargetClasses extends Schema.Class<TargetClasses>("@modelgate/core/TargetClasses")({
  quality: Schema.optional(Literals.QualityTier),
  latency: Schema.optional(LatencyTier),
  cost: Schema.optional(CostTier)
}) {}

/**
 * Longest task-segment name (`extract.invoice`, `RESEARCH_SYNTHESIS`).
 */
const maxSegmentLength = 100

/**
 * A task segment (task class) that quality is verified for.
 *
 * @internal
 */
export const Segment = Schema.NonEmptyTrimmedString.pipe(
  Schema.maxLength(maxSegmentLength),
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/)
)

/**
 * A verified quality score of a target on one task segment, from an offline eval.
 *
 * @since 0.2.0
 * @category Models
 */
export class VerifiedQuality extends Schema.Class<VerifiedQuality>("@modelgate/core/VerifiedQuality")({
  /** Eval score between 0 and 1. */
  score: Schema.Number.pipe(Schema.between(0, 1)),
  /** Version of the eval that produced the score. */
  evalVersion: Name,
  /** When it was evaluated (ISO-8601 text, recorded as given). */
  evaluatedAt: Name
}) {}

/**
 * A registry entry: one pinned model at one provider endpoint.
 *
 * @since 0.1.0
 * @category Models
 */
export class ModelTarget extends Schema.Class<ModelTarget>("@modelgate/core/ModelTarget")({
  ref: TargetRef,
  provider: ProviderId,
  /** The pinned model id sent to the provider. */
  model: Name,
  capabilities: Capabilities,
  regions: Labels,
  dataClasses: Labels,
  pricing: Pricing,
  /** Legacy size class; read as the quality class when `classes.quality` is omitted. */
  tier: Schema.optional(Schema.Literal("small", "medium", "large")),
  /** Quality, latency and cost classes (scored selection, `minQualityTier`). */
  classes: Schema.optional(TargetClasses),
  /** Verified quality per task segment (at most 64 segments); read by `risk: "HIGH"` and scored selection. */
  quality: Schema.optional(
    Schema.Record({ key: Segment, value: VerifiedQuality }).pipe(
      Schema.filter((r) => Object.keys(r).length <= 64 || "at most 64 segments")
    )
  ),
  limits: Schema.optionalWith(AttemptLimits, { default: () => AttemptLimits.make({}) }),
  status: Schema.optionalWith(TargetStatus, { default: () => "active" as const }),
  /** Multiplier on token estimates where the provider's tokenizer is not public. */
  tokenizerSafetyFactor: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThanOrEqualTo(1)), {
    default: () => 1
  }),
  /**
   * The `Catalogue` entry the target was resolved from (`openai/gpt-4.1-mini`): in JSON, naming it
   * supplies `provider`, `model`, `capabilities`, `pricing` and `tokenizerSafetyFactor`, each
   * overridable.
   */
  catalogue: Schema.optional(Name),
  /** The catalogue version it was resolved from (recorded in evidence); must be this release's. */
  catalogueVersion: Schema.optional(Name),
  /** Provider rate limit (requests and tokens per minute), enforced before dispatch (`RateLimits`). */
  rateLimit: Schema.optional(RateLimit),
  /**
   * A deployment dedicated to these tenants (at most 1,000; its credential is its provider's): it
   * serves only calls the host vouched for one of them (`Tenancy.vouch`), and is excluded as
   * `TENANT_NOT_ALLOWED` for every other call. Absent: shared by every tenant.
   */
  tenants: Schema.optional(Schema.Array(TenantId).pipe(Schema.minItems(1), Schema.maxItems(1_000)))
}) {
  /** The quality class: `classes.quality`, else the legacy `tier` mapped, else `undefined`. */
  get qualityTier(): QualityTier | undefined {
    const q = this.classes?.quality
    if (q !== undefined) return q
    switch (this.tier) {
      case "small":
        return "low"
      case "medium":
        return "standard"
      case "large":
        return "high"
      default:
        return undefined
    }
  }
}
