/**
 * Workflows: the policy for one kind of call (`ticket.classify`), keyed by name.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ProviderOptions, WorkflowOptions } from "./internal/optionSchemas.js"
import { Label, Labels, Segment, TargetRef } from "./ModelTarget.js"
import { Millis, Name } from "./internal/fieldSchemas.js"
import { TenantId } from "./Tenancy.js"
import * as Literals from "./internal/literals.js"
import {
  CanaryPolicy,
  EmbeddingSpace,
  EscalationPolicy,
  NewVersionCanary,
  OnNewVersion,
  OutputSpec,
  PrefixAffinity,
  QualityPolicy,
  RequiredCapabilities,
  RetryPolicy,
  ScoringPolicy,
  Selection,
  ShadowPolicy,
  Weight
} from "./internal/workflowPolicies.js"

/**
 * @since 0.1.0
 * @category Models
 */
export type WorkflowName = typeof Literals.WorkflowName.Type

/**
 * What to answer without a model when every route failed for availability reasons.
 *
 * - `static`: a fixed value (validated against the output schema at startup).
 * - `handler`: a named function supplied in code (`degradeHandlers`), e.g. keyword rules.
 *
 * @since 0.1.0
 * @category Models
 */
const DegradeSpec = Schema.Union(
  Schema.TaggedStruct("static", { value: Schema.Unknown }),
  Schema.TaggedStruct("handler", { name: Name })
)

/**
 * Risk of a workflow's or a command's task. `HIGH` keeps only targets with a verified quality
 * score of at least the workflow's `qualityThreshold` on the task segment (`QUALITY_UNVERIFIED`).
 *
 * @since 0.2.0
 * @category Models
 */
export type Risk = typeof Literals.Risk.Type

/**
 * Where a cached answer may be served: `tenant` (to the tenant whose call made it; the default) or
 * `global` (to every tenant; only for a workflow whose `dataClass` is `"public"`, checked at startup).
 *
 * @since 0.2.0
 * @category Models
 */
const CacheScope = Schema.Literal("tenant", "global")
/** @since 0.2.0 */
export type CacheScope = typeof CacheScope.Type

/**
 * The response cache of a workflow (`docs/caching.md`): successful, validated, non-degraded answers
 * are kept for `ttl` and served again to an identical request in `scope`, with no provider call and
 * no spend. Not for embedding workflows; a command offering side-effecting tools is never cached.
 *
 * @since 0.2.0
 * @category Models
 */
export class CachePolicy extends Schema.Class<CachePolicy>("@modelgate/core/CachePolicy")({
  /** How long an answer is served from the cache (> 0, at most 24 h). */
  ttl: Millis,
  /** `tenant` (default) or `global` (a `"public"` data class only). */
  scope: Schema.optionalWith(CacheScope, { default: () => "tenant" as const })
}) {}

/**
 * The data class a workflow must have for a `global` cache scope: its inputs hold nothing of a
 * tenant's, so one tenant's answer may be served to another.
 *
 * @internal
 */
export const globalCacheDataClass = "public"

/**
 * What a policy or prompt version left out of a workflow defaults to. Evidence then cannot tell
 * revisions apart, so building a gateway logs a warning once per such workflow.
 *
 * @since 0.2.0
 * @category Constants
 *
 * @internal
 */
export const unversioned = "unversioned"

/**
 * The output-token cap of a call when neither its command nor its workflow sets
 * `maxOutputTokens`: 4,096 tokens, or the target's `capabilities.maxOutputTokens` when that is
 * lower. A budget reserves for this many output tokens and the provider is asked for no more, so a
 * call costs more than it reserved only when the provider counts more tokens than estimated — and a
 * model's full output limit (32,768 tokens and more) is never reserved by default.
 *
 * @since 0.2.0
 * @category Constants
 */
export const defaultMaxOutputTokens = 4_096

/**
 * The policy of one workflow.
 *
 * @since 0.1.0
 * @category Models
 */
export class Workflow extends Schema.Class<Workflow>("@modelgate/core/Workflow")({
  name: Literals.WorkflowName,
  /** Version of this policy, in evidence. Omitted: `"unversioned"`, with a startup warning. */
  policyVersion: Schema.optionalWith(Name, { default: () => unversioned }),
  /** The prompt's id and version, in evidence. Version omitted: `"unversioned"`, with a startup warning. */
  prompt: Schema.Struct({ id: Name, version: Schema.optionalWith(Name, { default: () => unversioned }) }),
  requires: Schema.optionalWith(RequiredCapabilities, { default: () => RequiredCapabilities.make({}) }),
  /** Structured output; omitted for free text. */
  output: Schema.optional(OutputSpec),
  /** Targets in order, primary first. */
  route: Schema.NonEmptyArray(TargetRef),
  /** End-to-end deadline (at most 24 h); a command may only shorten it. */
  timeout: Millis,
  retry: Schema.optionalWith(RetryPolicy, { default: () => RetryPolicy.make({}) }),
  /** Regions the data may go to (at most 32, each at most 64 characters). */
  regions: Labels,
  /** Data class of the inputs (every route must be allowed to receive it). */
  dataClass: Label,
  allowFallback: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** Input-token limit of one call. */
  maxInputTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /**
   * Input-size limit of one call in characters of text (messages, tool definitions, output schema),
   * checked before anything is counted or sent. Default 1,048,576 characters.
   */
  maxInputCharacters: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /**
   * Output-token cap of one call (a command's `maxOutputTokens` may lower it). Omitted: the
   * command's, else {@link defaultMaxOutputTokens} (4,096); never above the target's own limit. The
   * cap is what the reservation pays for and what the provider is asked for.
   */
  maxOutputTokens: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Default cost cap of one call, in currency units. */
  maxCost: Schema.optional(Schema.Number.pipe(Schema.positive(), Schema.finite())),
  degrade: Schema.optional(DegradeSpec),
  /** Ask the same route once more with the validation error when output is invalid. Off by default. */
  repair: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /**
   * Defaults and allowed ranges of the neutral sampling options (`ModelOptions.WorkflowOptions`):
   * `{ temperature: { default: 0.2, min: 0, max: 1 }, seed: 7 }` (a bare value pins). A command may
   * override within them; a pinned option must be honoured by every route target.
   */
  options: Schema.optional(WorkflowOptions),
  /**
   * Wire fields the neutral options do not model, per provider id (`{ openai: { service_tier: "flex" } }`),
   * checked at startup against each adapter's allowlist; a command cannot override them.
   */
  providerOptions: Schema.optional(ProviderOptions),
  /** `ordered` (omitted: route order, the first eligible target first) or `scored`. */
  selection: Schema.optional(Selection),
  /** Scored selection's weights and thresholds. */
  scoring: Schema.optional(ScoringPolicy),
  /** Risk of the task; a command may raise it. Omitted: `LOW`. */
  risk: Schema.optional(Literals.Risk),
  /** Lowest verified score (0..1) on the segment a `HIGH`-risk call accepts. Default 0.8. */
  qualityThreshold: Schema.optional(Weight),
  /** Task segment (task class) whose verified quality applies; a command may name its own. */
  segment: Schema.optional(Segment),
  /** Quality class scored selection prefers; a command may name its own. */
  preferredTier: Schema.optional(Literals.QualityTier),
  /** Lowest quality class a target may have (`BELOW_MIN_TIER`); a command may raise it. */
  minQualityTier: Schema.optional(Literals.QualityTier),
  /** A candidate target tried first on a sticky share of calls. */
  canary: Schema.optional(CanaryPolicy),
  /** Escalation to a stronger target (`escalation.signals`, `tier`, `targets`, `check`); omitted: only the command's `escalate`. */
  escalation: Schema.optional(EscalationPolicy),
  /**
   * Makes this an embedding workflow (`ModelGateway.embed` only, never `generate`/`stream`): the
   * vector space every answer must be in.
   */
  embedding: Schema.optional(EmbeddingSpace),
  /** What a reload giving a route target a new model version does. Omitted: `switch`. */
  onNewVersion: Schema.optional(OnNewVersion),
  /** The canary a new version starts as under `onNewVersion: "canary"`. */
  newVersionCanary: Schema.optional(NewVersionCanary),
  /** A candidate target sent a sampled share of calls off the caller's path. */
  shadow: Schema.optional(ShadowPolicy),
  /** Demotion of targets whose quality regresses on this workflow. */
  quality: Schema.optional(QualityPolicy),
  /**
   * The tenants this workflow serves (at most 1,000): only calls the host vouched for one of them
   * (`Tenancy.vouch`); every other call is refused (`PolicyViolation` `TENANT_NOT_ALLOWED`). Each
   * must be servable by a route target (checked at startup). Absent: every tenant.
   */
  tenants: Schema.optional(Schema.Array(TenantId).pipe(Schema.minItems(1), Schema.maxItems(1_000))),
  /** The response cache (`docs/caching.md`); omitted: no answer is cached. */
  cache: Schema.optional(CachePolicy),
  /** Prompt-prefix affinity (scored selection only); omitted: none. */
  prefixAffinity: Schema.optional(PrefixAffinity)
}) {}
