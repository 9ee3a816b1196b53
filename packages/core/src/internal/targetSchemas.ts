/**
 * The sub-schemas of a `ModelTarget` that only the engine decodes (structured output, attempt
 * limits, classes, verified quality): a target is written as plain data and decoded whole; read
 * its parts as `ModelTarget["limits"]`, `Capabilities["structuredOutput"]` …. Also the rank of a
 * quality class, which the router compares.
 */
import { Duration, Schema } from "effect"
import { Millis, Name } from "./fieldSchemas.js"
import * as Literals from "./literals.js"

/** A positive integer (token counts, attempts). */
export const PositiveInt = Schema.Int.pipe(Schema.positive())

/** The schema of `ModelTarget.StructuredOutputMode`. */
export const StructuredOutputMode = Schema.Literal("none", "json_object", "json_schema", "json_schema_strict")

/**
 * Features a strict structured-output mode accepts when the target does not declare its own list
 * (the intersection of what OpenAI strict mode, Anthropic structured outputs and Gemini accept).
 */
const defaultStrictFeatures: ReadonlyArray<typeof Literals.SchemaFeature.Type> = ["anyOf", "enum", "const", "nullable"]

/**
 * Features a non-strict schema mode accepts by default: everything.
 */
const allSchemaFeatures: ReadonlyArray<typeof Literals.SchemaFeature.Type> = Literals.SchemaFeature.literals

/** How a target returns structured output: its mode, and the JSON-Schema features it accepts. */
export class StructuredOutput extends Schema.Class<StructuredOutput>("@modelgate/core/StructuredOutput")({
  mode: StructuredOutputMode,
  /** Features accepted. Omitted: all for `json_schema`/`json_object`, `anyOf`, `enum`, `const` and `nullable` for strict. */
  supportedFeatures: Schema.optional(Schema.Array(Literals.SchemaFeature))
}) {
  /** The features this mode accepts, after defaults. */
  get features(): ReadonlyArray<typeof Literals.SchemaFeature.Type> {
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
 * Per-target attempt limits.
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
 * Latency class of a target, fastest first.
 */
const LatencyTier = Schema.Literal("fast", "medium", "slow")

/**
 * Cost class of a target, cheapest first (descriptive: scoring reads the prices).
 */
const CostTier = Schema.Literal("low", "medium", "high")

/**
 * Rank of a quality class (`low` 0, `standard` 1, `high` 2).
 */
export const qualityRank = (tier: typeof Literals.QualityTier.Type): number =>
  Literals.QualityTier.literals.indexOf(tier)

/**
 * A target's classes. Each is optional; `quality` omitted falls back to the legacy `tier`
 * (`small` → `low`, `medium` → `standard`, `large` → `high`).
 */
export class TargetClasses extends Schema.Class<TargetClasses>("@modelgate/core/TargetClasses")({
  quality: Schema.optional(Literals.QualityTier),
  latency: Schema.optional(LatencyTier),
  cost: Schema.optional(CostTier)
}) {}

/**
 * A verified quality score of a target on one task segment, from an offline eval.
 */
export class VerifiedQuality extends Schema.Class<VerifiedQuality>("@modelgate/core/VerifiedQuality")({
  /** Eval score between 0 and 1. */
  score: Schema.Number.pipe(Schema.between(0, 1)),
  /** Version of the eval that produced the score. */
  evalVersion: Name,
  /** When it was evaluated (ISO-8601 text, recorded as given). */
  evaluatedAt: Name
}) {}
