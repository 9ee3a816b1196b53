/**
 * Embeddings through the gateway (`ModelGateway.embed`): the command, the result, and the rules
 * that keep every vector of a workflow in one vector space.
 *
 * An embedding workflow declares its space (`Workflow.embedding`: a model family and a vector
 * length); an embedding target declares what it produces (`capabilities.embeddings`: dimensions and
 * family, the family defaulting to its `model`). A call runs the same pipeline as `generate`:
 * routing, deadline, budget (input tokens × input price; embedding targets have no output price),
 * breakers, retries, fallback, evidence and one CallRecord (`mode: "embed"`). Fallback stays inside
 * the space: a route target of another family or length is excluded on every call with
 * `EMBEDDING_INCOMPATIBLE` and never tried. Startup refuses what can never work (see
 * {@link configProblems}).
 *
 * @since 0.2.0
 */
import { Effect, Either, ParseResult, Schema } from "effect"
import { checkShape, issueLines } from "./internal/issues.js"
import { TenantId } from "./ModelCommand.js"
import { Evidence } from "./ModelResult.js"
import { type EmbeddingCapability, Label, Labels, type ModelTarget } from "./ModelTarget.js"
import { Millis } from "./internal/fieldSchemas.js"
import type { ExclusionReason } from "./RouteDecision.js"
import type { EmbeddingSpace } from "./internal/workflowPolicies.js"
import type { Workflow } from "./Workflow.js"
import { RequestId } from "./internal/requestId.js"
import * as Literals from "./internal/literals.js"

/**
 * Most inputs of one embedding command (OpenAI's per-request limit).
 *
 * @since 0.2.0
 * @category Constants
 *
 * @internal
 */
export const maxInputs = 2048

/**
 * What the vectors are for: `query` and `document` for retrieval (a query's vector is compared with
 * documents' vectors), `similarity`, `classification`, `clustering`. Providers that tune vectors to
 * the task get it on the wire (Gemini `taskType`); the vectors stay in the workflow's space.
 *
 * @since 0.2.0
 * @category Models
 */
const EmbeddingTask = Schema.Literal("query", "document", "similarity", "classification", "clustering")
/** @since 0.2.0 */
export type EmbeddingTask = typeof EmbeddingTask.Type

/**
 * One embedding request: which workflow, for which tenant, which texts. Like `ModelCommand`, it
 * never names a credential, URL or target.
 *
 * @since 0.2.0
 * @category Models
 */
export class EmbedCommand extends Schema.Class<EmbedCommand>("@modelgate/core/EmbedCommand")({
  workflow: Literals.WorkflowName,
  tenant: TenantId,
  /** Texts to embed, one vector each, in order (1 to 2048, each 1 to 2 000 000 characters). */
  inputs: Schema.NonEmptyArray(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2_000_000))).pipe(
    Schema.maxItems(maxInputs)
  ),
  /** What the vectors are for (Gemini `taskType`); omitted: not said. */
  task: Schema.optional(EmbeddingTask),
  /** End-to-end deadline; at most the workflow's. */
  timeout: Schema.optional(Millis),
  /** Cost cap for this call in currency units; at most the workflow's. */
  maxCost: Schema.optional(Schema.Number.pipe(Schema.positive(), Schema.finite())),
  maxInputTokens: Schema.optional(Schema.Int.pipe(Schema.positive(), Schema.lessThanOrEqualTo(100_000_000))),
  /** Data class of this request; defaults to the workflow's. */
  dataClass: Schema.optional(Label),
  /** Regions allowed for this request; within the workflow's. */
  regions: Schema.optional(Labels),
  /** Agent run id and step (evidence); inside an `AgentRun` they default to the run's. */
  runId: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  step: Schema.optional(Schema.Int.pipe(Schema.nonNegative())),
  /** The caller's request id, as `ModelCommand.requestId`. Since 0.3.0. */
  requestId: Schema.optional(RequestId)
}) {}

const decodeChecked = Schema.decodeUnknownEither(EmbedCommand, { errors: "all", onExcessProperty: "error" })

/**
 * Decodes an embedding command from untrusted input, like `ModelCommand.decodeUnknown`: unknown
 * fields are an error (no `baseUrl`, `apiKey` or `target` can be smuggled in), and the error names
 * paths, kinds of problems and limits — never the values, which are the texts to embed. Hostile
 * shapes (deep nesting, huge inputs, exotic objects) are refused before decoding.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const decodeCommand = (input: unknown): Effect.Effect<EmbedCommand, ParseResult.ParseError> =>
  Effect.suspend(() => {
    const rejected = (problems: string) =>
      Effect.fail(
        new ParseResult.ParseError({
          issue: new ParseResult.Type(EmbedCommand.ast, undefined, `invalid embed command: ${problems}`)
        })
      )
    const shape = checkShape(input)
    if (shape !== undefined) return rejected(shape)
    const decoded = decodeChecked(input)
    if (Either.isRight(decoded)) return Effect.succeed(decoded.right)
    return rejected(issueLines(decoded.left).join("; "))
  })

/**
 * The answer of an embedding call: one vector per input, in input order, all of the workflow's
 * space, and the call's evidence (`evidence.embedding` names the space and the input count).
 *
 * @since 0.2.0
 * @category Models
 */
export class EmbeddingResult extends Schema.Class<EmbeddingResult>("@modelgate/core/EmbeddingResult")({
  vectors: Schema.Array(Schema.Array(Schema.Number)),
  evidence: Evidence
}) {}

/**
 * The family of a target's vectors: its declared family, else its model.
 *
 * @since 0.2.0
 * @category Utils
 *
 * @internal
 */
export const familyOf = (target: ModelTarget, capability: EmbeddingCapability): string =>
  capability.family ?? target.model

/**
 * Why `target` cannot serve a workflow whose space is `space` (`undefined`: a generation workflow),
 * or `undefined` when it can: an embedding model never generates, a generation model never embeds,
 * and an embedding target of another family or length is `EMBEDDING_INCOMPATIBLE`.
 *
 * @since 0.2.0
 * @category Routing
 *
 * @internal
 */
export const incompatibility = (
  space: EmbeddingSpace | undefined,
  target: ModelTarget
): { readonly reason: ExclusionReason; readonly detail: string } | undefined => {
  const produced = target.capabilities.embeddings
  if (space === undefined) {
    return produced === undefined
      ? undefined
      : { reason: "CAPABILITY_MISSING", detail: "an embedding model: no text generation" }
  }
  if (produced === undefined) return { reason: "CAPABILITY_MISSING", detail: "missing: embeddings" }
  const family = familyOf(target, produced)
  if (family === space.family && produced.dimensions === space.dimensions) return undefined
  return {
    reason: "EMBEDDING_INCOMPATIBLE",
    detail: `vectors ${family}/${produced.dimensions}, the workflow's space is ${space.family}/${space.dimensions}`
  }
}

/**
 * A startup problem of the embedding rules, as `GatewayConfig.validate` lists it.
 *
 * @since 0.2.0
 * @category Validation
 *
 * @internal
 */
export interface ConfigProblemFields {
  readonly path: string
  readonly workflow?: string
  readonly target?: string
  readonly reason: string
  readonly detail: string
}

/**
 * The embedding problems of a configuration (value-free, like every config problem):
 *
 * - `EMBEDDING_OUTPUT_PRICED`: an embedding target with an output price (embeddings bill input only).
 * - `NO_EMBED_ADAPTER`: an active embedding target whose provider's adapter has no `embed`
 *   (checked when `embedders` is given: the providers whose adapters embed).
 * - `EMBEDDING_WORKFLOW_INVALID`: an embedding workflow with an output schema, a degraded answer,
 *   shadow traffic, or required vision, tools or streaming.
 * - `NO_COMPATIBLE_EMBEDDING_TARGET`: an embedding workflow none of whose route targets is in its space.
 * - `CAPABILITY_MISSING` on a route entry: a generation model in an embedding workflow, or an
 *   embedding model in a generation workflow.
 *
 * A route may keep embedding targets of another space (say the next model, while its index is
 * rebuilt): they are excluded on every call (`EMBEDDING_INCOMPATIBLE`) and never tried.
 *
 * @since 0.2.0
 * @category Validation
 *
 * @internal
 */
export const configProblems = (
  config: {
    readonly targets: ReadonlyArray<ModelTarget>
    readonly workflows: ReadonlyArray<Workflow>
  },
  embedders: ReadonlySet<string> | undefined
): Array<ConfigProblemFields> => {
  const problems: Array<ConfigProblemFields> = []
  const byRef = new Map<string, ModelTarget>()
  config.targets.forEach((t, i) => {
    byRef.set(t.ref, t)
    if (t.capabilities.embeddings === undefined) return
    if (t.pricing.outputPerMillion !== 0) {
      problems.push({
        path: `targets[${i}].pricing.outputPerMillion`,
        target: t.ref,
        reason: "EMBEDDING_OUTPUT_PRICED",
        detail: "an embedding target bills input only: outputPerMillion must be 0"
      })
    }
    if (embedders !== undefined && t.status !== "disabled" && !embedders.has(t.provider)) {
      problems.push({
        path: `targets[${i}].provider`,
        target: t.ref,
        reason: "NO_EMBED_ADAPTER",
        detail: "the adapter of this provider does not implement embed"
      })
    }
  })
  config.workflows.forEach((w, i) => {
    const path = `workflows[${i}]`
    const space = w.embedding
    if (space !== undefined) {
      const invalid: Array<string> = []
      if (w.output !== undefined) invalid.push("an output schema")
      if (w.degrade !== undefined) invalid.push("a degraded answer")
      if (w.requires.vision || w.requires.tools || w.requires.streaming) invalid.push("vision, tools or streaming")
      // A shadow call is a generation request; an embedding target cannot answer it.
      if (w.shadow !== undefined) invalid.push("shadow traffic")
      if (invalid.length > 0) {
        problems.push({
          path,
          workflow: w.name,
          reason: "EMBEDDING_WORKFLOW_INVALID",
          detail: `an embedding workflow cannot have ${invalid.join(", ")}`
        })
      }
    }
    let compatible = false
    w.route.forEach((ref, j) => {
      const t = byRef.get(ref)
      if (t === undefined) return
      const why = incompatibility(space, t)
      if (why === undefined) compatible = true
      else if (why.reason === "CAPABILITY_MISSING") {
        problems.push({ path: `${path}.route[${j}]`, workflow: w.name, target: ref, ...why })
      }
    })
    if (space !== undefined && !compatible) {
      problems.push({
        path: `${path}.route`,
        workflow: w.name,
        reason: "NO_COMPATIBLE_EMBEDDING_TARGET",
        detail: `no route target produces vectors of ${space.family}/${space.dimensions}`
      })
    }
  })
  return problems
}
