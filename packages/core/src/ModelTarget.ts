/**
 * Registry entries: the models a gateway may call, what they can do, where they run and what they cost.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { OptionName } from "./ModelOptions.js"
import { RateLimit } from "./RateLimits.js"
import { TenantId } from "./Tenancy.js"
import { Name } from "./internal/fieldSchemas.js"
import type * as Literals from "./internal/literals.js"
import * as TargetSchemas from "./internal/targetSchemas.js"

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
export type StructuredOutputMode = typeof TargetSchemas.StructuredOutputMode.Type

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
  dimensions: TargetSchemas.PositiveInt.pipe(Schema.lessThanOrEqualTo(maxEmbeddingDimensions)),
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
  structuredOutput: Schema.optionalWith(TargetSchemas.StructuredOutput, {
    default: () => new TargetSchemas.StructuredOutput({ mode: "none" })
  }),
  contextWindow: TargetSchemas.PositiveInt,
  maxOutputTokens: TargetSchemas.PositiveInt,
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
  classes: Schema.optional(TargetSchemas.TargetClasses),
  /** Verified quality per task segment (at most 64 segments); read by `risk: "HIGH"` and scored selection. */
  quality: Schema.optional(
    Schema.Record({ key: Segment, value: TargetSchemas.VerifiedQuality }).pipe(
      Schema.filter((r) => Object.keys(r).length <= 64 || "at most 64 segments")
    )
  ),
  limits: Schema.optionalWith(TargetSchemas.AttemptLimits, { default: () => TargetSchemas.AttemptLimits.make({}) }),
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
