/**
 * The gateway configuration: targets and workflows, decoded from plain JSON or built in code, plus
 * the pieces only code can give (output schemas, degrade handlers). Validation lists every problem.
 *
 * Edges handled at startup:
 *
 * - Every duration is finite and at most 24 h (`ModelTarget.maxDuration`); `1e309`, which
 *   `JSON.parse` reads as `Infinity`, is refused.
 * - Schema and degrade-handler names are looked up among the maps' own properties only, so a
 *   workflow naming `constructor`, `toString` or `__proto__` gets `UNKNOWN_SCHEMA` /
 *   `UNKNOWN_DEGRADE_HANDLER`, never something inherited from `Object.prototype`.
 * - Problems name paths and kinds of problems, never values (a key pasted into `model` is not
 *   echoed).
 * - With budgets that hold reservations, every workflow timeout must be shorter than the budgets'
 *   `reservationTtl` (`TIMEOUT_NOT_BELOW_RESERVATION_TTL`), so no reservation expires while its call
 *   can still run.
 * - Sampling options: bounds must be consistent (`INVALID_OPTION_BOUNDS`), every route target must
 *   accept each option the workflow pins (`OPTION_UNSUPPORTED`), and a workflow's `providerOptions`
 *   must name a provider of its route (`PROVIDER_OPTIONS_UNUSED`) and fields its adapter allows
 *   (`PROVIDER_OPTION_NOT_ALLOWED`).
 * - Catalogue references: a target naming `catalogue: "<id>"` gets that `Catalogue` entry's
 *   fields under its own when decoded; an unknown id is `UNKNOWN_CATALOGUE_ENTRY`, a
 *   `catalogueVersion` other than this release's `Catalogue.version` is
 *   `CATALOGUE_VERSION_MISMATCH`.
 * - Embeddings (`Embeddings.configProblems`): an embedding workflow needs a route target in its
 *   vector space, no chat model in its route (nor an embedding model in a chat route), no output
 *   schema or degraded answer; embedding targets bill no output and need an adapter that embeds.
 * - A workflow without `policyVersion` or `prompt.version` gets `"unversioned"`, and building the
 *   gateway logs one warning per such workflow ({@link warnUnversioned}).
 *
 * Configuration written in code gets completion and type-checking from {@link make}, in the same
 * encoded (JSON) form {@link decode} and `ModelGateway.layerJson` read ({@link Encoded}).
 *
 * @since 0.1.0
 */
import { Duration, Effect, Either, type ParseResult, Schema } from "effect"
import * as Catalogue from "./Catalogue.js"
import * as Embeddings from "./Embeddings.js"
import { ConfigProblem, GatewayConfigError } from "./Errors.js"
import { configProblemsOf, jsonPath, segment } from "./internal/issues.js"
import * as Lifecycle from "./internal/lifecycle.js"
import * as JsonSchemaFeatures from "./JsonSchemaFeatures.js"
import type { ModelCommand } from "./ModelCommand.js"
import * as ModelOptions from "./ModelOptions.js"
import { maxDuration, ModelTarget } from "./ModelTarget.js"
import { unversioned, Workflow } from "./Workflow.js"

/**
 * Targets and workflows.
 *
 * @since 0.1.0
 * @category Models
 */
export class GatewayConfig extends Schema.Class<GatewayConfig>("@modelgate/core/GatewayConfig")({
  targets: Schema.Array(ModelTarget),
  workflows: Schema.Array(Workflow)
}) {}

/**
 * A degraded-mode answer computed in code (e.g. keyword rules), used when every route failed for
 * availability reasons. Its value is validated against the workflow's output schema.
 *
 * @since 0.1.0
 * @category Models
 */
export type DegradeHandler = (command: ModelCommand) => Effect.Effect<unknown>

/**
 * Everything the gateway is built from.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Definition {
  readonly config: GatewayConfig
  /** Output schemas by the name workflows give in `output.schema`. */
  readonly schemas?: Readonly<Record<string, Schema.Schema.AnyNoContext>> | undefined
  readonly degradeHandlers?: Readonly<Record<string, DegradeHandler>> | undefined
  /**
   * Escalation checks by the name a workflow's `escalation.check` gives: true for a validated
   * value that should be answered again by a stronger target (e.g. `(v) => v.confidence < 0.6`).
   */
  readonly escalationChecks?: Readonly<Record<string, EscalationCheck>> | undefined
}

/**
 * A check on a workflow's validated value: true when a stronger target should answer again.
 *
 * @since 0.6.0
 * @category Models
 */
export type EscalationCheck = (value: unknown) => boolean

// ---------------------------------------------------------------------------------------------
// The encoded (JSON) form
// ---------------------------------------------------------------------------------------------

type ModelTargetEncoded = Schema.Schema.Encoded<typeof ModelTarget>

/**
 * A target written out in full, in encoded (JSON) form.
 *
 * @since 0.3.0
 * @category Models
 */
export interface FullTargetEncoded extends Omit<ModelTargetEncoded, "catalogue" | "catalogueVersion"> {
  readonly catalogue?: never
  readonly catalogueVersion?: never
}

/**
 * A target naming a `Catalogue` entry, in encoded (JSON) form: `ref`, `regions` and `dataClasses`
 * are its own; `provider`, `model`, `capabilities` (key by key), `pricing` (as a whole) and the
 * rest override the entry's. `catalogueVersion`, when given, must be this release's
 * `Catalogue.version` (pin it to notice a catalogue update).
 *
 * @since 0.3.0
 * @category Models
 */
export interface CatalogueTargetEncoded
  extends Omit<
    ModelTargetEncoded,
    "catalogue" | "catalogueVersion" | "provider" | "model" | "capabilities" | "pricing"
  > {
  readonly catalogue: Catalogue.Id
  readonly catalogueVersion?: string
  readonly provider?: ModelTargetEncoded["provider"]
  readonly model?: ModelTargetEncoded["model"]
  readonly capabilities?: Partial<ModelTargetEncoded["capabilities"]>
  readonly pricing?: ModelTargetEncoded["pricing"]
}

/**
 * A target in encoded (JSON) form: written out, or naming a catalogue entry.
 *
 * @since 0.3.0
 * @category Models
 */
export type TargetEncoded = FullTargetEncoded | CatalogueTargetEncoded

/**
 * A workflow in encoded (JSON) form (durations in milliseconds).
 *
 * @since 0.3.0
 * @category Models
 */
export type WorkflowEncoded = Schema.Schema.Encoded<typeof Workflow>

/**
 * The configuration as {@link decode} and `ModelGateway.layerJson` read it: plain JSON, durations
 * in milliseconds, targets written out or naming a catalogue entry.
 *
 * @since 0.3.0
 * @category Models
 */
export interface Encoded {
  readonly targets: ReadonlyArray<TargetEncoded>
  readonly workflows: ReadonlyArray<WorkflowEncoded>
}

/**
 * Types a configuration written in code, in its encoded (JSON) form: completion and type errors for
 * every target and workflow field (catalogue ids included), without building classes. Returns it
 * unchanged, for `ModelGateway.layerJson` (which decodes and validates it) or {@link decode}.
 *
 * @example
 * ```ts
 * const config = GatewayConfig.make({
 *   targets: [{ ref: "mini@eu", catalogue: "openai/gpt-4.1-mini", regions: ["eu"], dataClasses: ["internal"] }],
 *   workflows: [{ name: "reply", prompt: { id: "reply" }, route: ["mini@eu"], timeout: 3000, regions: ["eu"], dataClass: "internal" }]
 * })
 * ```
 *
 * @since 0.3.0
 * @category Constructors
 */
export const make = (config: Encoded): Encoded => config

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

const decodeConfig = Schema.decodeUnknownEither(GatewayConfig, { errors: "all", onExcessProperty: "error" })

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** Fields a catalogue entry supplies: "missing" reported for them under an unresolved reference adds nothing. */
const suppliedByCatalogue = ["provider", "model", "capabilities", "pricing"] as const

/**
 * The input with every catalogue reference of `targets` resolved, the problems of the references
 * (value-free), and the paths whose "missing" problems an unresolved reference explains.
 */
const resolveCatalogue = (
  input: unknown
): {
  readonly input: unknown
  readonly problems: ReadonlyArray<ConfigProblem>
  readonly explained: ReadonlySet<string>
} => {
  const problems: Array<ConfigProblem> = []
  const explained = new Set<string>()
  if (!isRecord(input) || !Object.hasOwn(input, "targets") || !Array.isArray(input.targets)) {
    return { input, problems, explained }
  }
  const list: ReadonlyArray<unknown> = input.targets
  const targets = list.map((t, i) => {
    if (!isRecord(t)) return t
    const hasEntry = Object.hasOwn(t, "catalogue")
    const hasVersion = Object.hasOwn(t, "catalogueVersion")
    if (!hasEntry && !hasVersion) return t
    const path = jsonPath(["targets", i])
    if (hasVersion && (!hasEntry || t.catalogueVersion !== Catalogue.version)) {
      problems.push(
        new ConfigProblem({
          path: `${path}.catalogueVersion`,
          reason: "CATALOGUE_VERSION_MISMATCH",
          detail: hasEntry
            ? `this release ships catalogue ${Catalogue.version}: check the entry's figures, then update catalogueVersion`
            : "catalogueVersion needs a catalogue entry (catalogue)"
        })
      )
    }
    if (!hasEntry) return t
    if (!Catalogue.isId(t.catalogue)) {
      problems.push(
        new ConfigProblem({
          path: `${path}.catalogue`,
          reason: "UNKNOWN_CATALOGUE_ENTRY",
          detail: `no entry with this id in catalogue ${Catalogue.version} (Catalogue.ids lists them)`
        })
      )
      for (const key of suppliedByCatalogue) explained.add(`${path}.${key}`)
      return t
    }
    return Catalogue.merge(t.catalogue, t)
  })
  return { input: { ...input, targets }, problems, explained }
}

/**
 * Decodes a configuration from plain JSON (e.g. a parsed file, or {@link make}'s result),
 * resolving catalogue references. A failure lists every bad field with its path and what was
 * expected, never the value found.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decode = (input: unknown): Effect.Effect<GatewayConfig, GatewayConfigError> => {
  const resolved = resolveCatalogue(input)
  const decoded = decodeConfig(resolved.input)
  if (Either.isRight(decoded) && resolved.problems.length === 0) return Effect.succeed(decoded.right)
  const schemaProblems = Either.isLeft(decoded)
    ? configProblemsOf(decoded.left, jsonPath)
        .filter((p) => !(p.detail === "is missing" && resolved.explained.has(p.path)))
        .map((p) => new ConfigProblem(p))
    : []
  return Effect.fail(new GatewayConfigError({ problems: [...resolved.problems, ...schemaProblems] }))
}

/** `record[name]` if `name` is an own property of `record` (nothing inherited from `Object.prototype`). */
const own = <A>(record: Readonly<Record<string, A>> | undefined, name: string): A | undefined =>
  record !== undefined && Object.hasOwn(record, name) ? record[name] : undefined

/** The schema named `name`, if `definition` gives one (own properties only) and it is a schema. */
const schemaNamed = (definition: Definition, name: string): Schema.Schema.AnyNoContext | undefined => {
  const schema = own(definition.schemas, name)
  return Schema.isSchema(schema) ? schema : undefined
}

/** The degrade handler named `name`, if `definition` gives one (own properties only) and it is a function. */
const handlerNamed = (definition: Definition, name: string): DegradeHandler | undefined => {
  const handler = own(definition.degradeHandlers, name)
  return typeof handler === "function" ? handler : undefined
}

/** The escalation check named `name`, if `definition` gives one (own properties only) and it is a function. */
const checkNamed = (definition: Definition, name: string): EscalationCheck | undefined => {
  const check = own(definition.escalationChecks, name)
  return typeof check === "function" ? check : undefined
}

/**
 * What startup validation knows beyond the definition.
 *
 * @since 0.2.0
 * @category Validation
 */
export interface ValidateOptions {
  /**
   * How long the budgets hold an unsettled reservation (`Budgets.Service.reservationTtl`);
   * `undefined` when nothing is held. Every workflow timeout must be shorter.
   */
  readonly reservationTtl?: Duration.Duration | undefined
  /**
   * Per provider id, the wire fields its adapter lets `providerOptions` set
   * (`ProviderAdapter.providerOptions`); a provider without an entry accepts none.
   */
  readonly providerOptions?: ReadonlyMap<string, ModelOptions.ProviderOptionsAllowlist> | undefined
  /**
   * The providers whose adapters implement `embed`; an active embedding target of another provider
   * is `NO_EMBED_ADAPTER`. Omitted: not checked.
   */
  readonly embedders?: ReadonlySet<string> | undefined
}

/**
 * A workflow with its resolved output schema and JSON Schema (computed once at startup).
 *
 * @since 0.1.0
 * @category Models
 */
export interface CompiledWorkflow {
  readonly workflow: Workflow
  readonly schema: Schema.Schema.AnyNoContext | undefined
  /** The schema's decoder, built once (every error collected). */
  readonly decode: ((u: unknown) => Either.Either<unknown, ParseResult.ParseError>) | undefined
  readonly jsonSchema: Record<string, unknown> | undefined
  readonly features: ReadonlySet<string>
  readonly targets: ReadonlyArray<ModelTarget>
  readonly degrade: DegradeHandler | undefined
  /** Per provider id, the provider-option fields its adapter allows (for commands' `providerOptions`). */
  readonly providerOptionAllowlists: ReadonlyMap<string, ModelOptions.ProviderOptionsAllowlist>
  /** The workflow's escalation check (`workflow.escalation.check`), resolved; absent without one. */
  readonly escalationCheck?: EscalationCheck | undefined
  /** The canary's candidate target (`workflow.canary`), resolved; absent without a canary. */
  readonly canaryTarget?: ModelTarget | undefined
  /** A policy or prompt canary: the workflow as its candidate side runs it (absent otherwise). */
  readonly canaryVariant?: CompiledWorkflow | undefined
  /** The lifecycle features the workflow uses (absent: none, nothing runs per call for them). */
  readonly lifecycle?: Lifecycle.Features | undefined
}

/**
 * Checks a configuration against itself, the provided schemas and handlers, the providers that
 * have adapters and the budgets' reservation TTL. Returns every problem found (empty when valid);
 * problems name paths and kinds of problems, never values.
 *
 * @since 0.1.0
 * @category Validation
 */
export const validate = (
  definition: Definition,
  providers: ReadonlySet<string>,
  options: ValidateOptions = {}
): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const { config } = definition
  const add = (p: ConstructorParameters<typeof ConfigProblem>[0]) => problems.push(new ConfigProblem(p))
  /** A duration beyond 24 h or infinite (possible only for a config built without validation). */
  const tooLong = (d: Duration.Duration | undefined) =>
    d !== undefined && (!Duration.isFinite(d) || Duration.greaterThan(d, maxDuration))
  const tooLongDetail = "must be finite and at most 24 h (86400000 ms)"
  const targets = new Map<string, ModelTarget>()
  config.targets.forEach((t, i) => {
    const path = `targets[${i}]`
    if (targets.has(t.ref)) add({ path, target: t.ref, reason: "DUPLICATE_TARGET", detail: "ref defined twice" })
    targets.set(t.ref, t)
    const l = t.limits
    for (const key of ["perAttemptTimeout", "ttftTimeout", "streamIdleTimeout", "minimumAttemptTime"] as const) {
      if (tooLong(l[key])) {
        add({ path: `${path}.limits.${key}`, target: t.ref, reason: "DURATION_TOO_LONG", detail: tooLongDetail })
      }
    }
    if (Duration.toMillis(l.perAttemptTimeout) <= 0) {
      add({
        path: `${path}.limits.perAttemptTimeout`,
        target: t.ref,
        reason: "NON_POSITIVE_TIMEOUT",
        detail: "must be > 0"
      })
    }
    if (Duration.toMillis(l.minimumAttemptTime) <= 0) {
      add({
        path: `${path}.limits.minimumAttemptTime`,
        target: t.ref,
        reason: "NON_POSITIVE_TIMEOUT",
        detail: "must be > 0"
      })
    }
    for (const key of ["ttftTimeout", "streamIdleTimeout"] as const) {
      const d = l[key]
      if (d !== undefined && Duration.toMillis(d) <= 0) {
        add({ path: `${path}.limits.${key}`, target: t.ref, reason: "NON_POSITIVE_TIMEOUT", detail: "must be > 0" })
      }
    }
    if (Duration.greaterThan(l.minimumAttemptTime, l.perAttemptTimeout)) {
      add({
        path: `${path}.limits.minimumAttemptTime`,
        target: t.ref,
        reason: "MINIMUM_EXCEEDS_PER_ATTEMPT",
        detail: "minimumAttemptTime exceeds perAttemptTimeout"
      })
    }
    if (t.catalogue !== undefined && !Catalogue.isId(t.catalogue)) {
      add({
        path: `${path}.catalogue`,
        target: t.ref,
        reason: "UNKNOWN_CATALOGUE_ENTRY",
        detail: `no entry with this id in catalogue ${Catalogue.version}`
      })
    }
    if (t.catalogueVersion !== undefined && (t.catalogue === undefined || t.catalogueVersion !== Catalogue.version)) {
      add({
        path: `${path}.catalogueVersion`,
        target: t.ref,
        reason: "CATALOGUE_VERSION_MISMATCH",
        detail:
          t.catalogue === undefined
            ? "catalogueVersion needs a catalogue entry (catalogue)"
            : `this release ships catalogue ${Catalogue.version}`
      })
    }
    if (t.status !== "disabled" && !providers.has(t.provider)) {
      add({
        path: `${path}.provider`,
        target: t.ref,
        reason: "NO_ADAPTER",
        detail: "no adapter provided for this provider"
      })
    }
  })
  const names = new Set<string>()
  config.workflows.forEach((w, i) => {
    const path = `workflows[${i}]`
    const wf = w.name
    if (names.has(w.name)) add({ path, workflow: wf, reason: "DUPLICATE_WORKFLOW", detail: "name defined twice" })
    names.add(w.name)
    if (Duration.toMillis(w.timeout) <= 0) {
      add({ path: `${path}.timeout`, workflow: wf, reason: "NON_POSITIVE_TIMEOUT", detail: "must be > 0" })
    }
    if (tooLong(w.timeout)) {
      add({ path: `${path}.timeout`, workflow: wf, reason: "DURATION_TOO_LONG", detail: tooLongDetail })
    } else if (options.reservationTtl !== undefined && !Duration.lessThan(w.timeout, options.reservationTtl)) {
      add({
        path: `${path}.timeout`,
        workflow: wf,
        reason: "TIMEOUT_NOT_BELOW_RESERVATION_TTL",
        detail: "must be shorter than the budgets' reservationTtl: a reservation could expire while its call still runs"
      })
    }
    for (const key of ["baseDelay", "maxDelay"] as const) {
      if (tooLong(w.retry[key])) {
        add({ path: `${path}.retry.${key}`, workflow: wf, reason: "DURATION_TOO_LONG", detail: tooLongDetail })
      }
    }
    if (Duration.greaterThan(w.retry.baseDelay, w.retry.maxDelay)) {
      add({ path: `${path}.retry`, workflow: wf, reason: "INVALID_RETRY", detail: "baseDelay > maxDelay" })
    }
    let schema: Schema.Schema.AnyNoContext | undefined
    let features: ReadonlySet<string> = new Set()
    if (w.output !== undefined) {
      const given = own<unknown>(definition.schemas, w.output.schema)
      schema = schemaNamed(definition, w.output.schema)
      if (given === undefined) {
        add({
          path: `${path}.output.schema`,
          workflow: wf,
          reason: "UNKNOWN_SCHEMA",
          detail: "no schema of this name was provided"
        })
      } else if (schema === undefined) {
        add({
          path: `${path}.output.schema`,
          workflow: wf,
          reason: "INVALID_SCHEMA",
          detail: "what was provided under this name is not an Effect Schema"
        })
      } else {
        try {
          features = JsonSchemaFeatures.featuresOf(JsonSchemaFeatures.fromSchema(schema))
        } catch {
          // e.g. a `Schema.declare` without a JSON Schema annotation: a listed problem, not a defect
          add({
            path: `${path}.output.schema`,
            workflow: wf,
            reason: "INVALID_SCHEMA",
            detail: "the schema cannot be expressed as JSON Schema"
          })
          schema = undefined
        }
      }
    }
    for (const [i, ref] of (w.escalation?.targets ?? []).entries()) {
      if (!w.route.includes(ref)) {
        add({
          path: `${path}.escalation.targets[${i}]`,
          workflow: wf,
          reason: "ESCALATION_TARGET_NOT_IN_ROUTE",
          detail: "an escalation target must be one of the workflow's route targets"
        })
      }
    }
    const check = w.escalation?.check
    if (check !== undefined && checkNamed(definition, check) === undefined) {
      add({
        path: `${path}.escalation.check`,
        workflow: wf,
        reason: "UNKNOWN_ESCALATION_CHECK",
        detail: "no escalation check (function) of this name"
      })
    }
    if (w.degrade?._tag === "handler" && handlerNamed(definition, w.degrade.name) === undefined) {
      const given = own<unknown>(definition.degradeHandlers, w.degrade.name) !== undefined
      add({
        path: `${path}.degrade.name`,
        workflow: wf,
        reason: given ? "INVALID_DEGRADE_HANDLER" : "UNKNOWN_DEGRADE_HANDLER",
        detail: given ? "what was provided under this name is not a function" : "no degrade handler of this name"
      })
    }
    if (
      w.degrade?._tag === "static" &&
      schema !== undefined &&
      Either.isLeft(Schema.decodeUnknownEither(schema)(w.degrade.value))
    ) {
      add({
        path: `${path}.degrade.value`,
        workflow: wf,
        reason: "DEGRADE_VALUE_INVALID",
        detail: "does not match the output schema"
      })
    }
    for (const [option, detail] of ModelOptions.boundsProblems(w.options)) {
      add({ path: `${path}.options.${option}`, workflow: wf, reason: "INVALID_OPTION_BOUNDS", detail })
    }
    const pinned = ModelOptions.pinned(w.options)
    for (const [provider, fields] of Object.entries(w.providerOptions ?? {})) {
      const ppath = `${path}.providerOptions.${segment(provider)}`
      if (!w.route.some((ref) => targets.get(ref)?.provider === provider)) {
        add({
          path: ppath,
          workflow: wf,
          reason: "PROVIDER_OPTIONS_UNUSED",
          detail: "no target of the route uses this provider"
        })
        continue
      }
      for (const problem of ModelOptions.providerOptionsProblems(
        provider,
        fields,
        options.providerOptions?.get(provider)
      )) {
        add({ path: ppath, workflow: wf, reason: "PROVIDER_OPTION_NOT_ALLOWED", detail: problem })
      }
    }
    const seen = new Set<string>()
    w.route.forEach((ref, j) => {
      const rpath = `${path}.route[${j}]`
      const tgt = (reason: string, detail: string) => add({ path: rpath, workflow: wf, target: ref, reason, detail })
      if (seen.has(ref)) tgt("DUPLICATE_ROUTE_TARGET", "target appears twice in the route")
      seen.add(ref)
      const t = targets.get(ref)
      if (t === undefined) {
        tgt("UNKNOWN_TARGET", "no target with this ref")
        return
      }
      if (t.status === "disabled") tgt("DISABLED_TARGET", "target is disabled")
      const caps = t.capabilities
      const missing: Array<string> = []
      if (w.requires.vision && !caps.vision) missing.push("vision")
      if (w.requires.tools && !caps.tools) missing.push("tools")
      if (w.requires.streaming && !caps.streaming) missing.push("streaming")
      if (missing.length > 0) tgt("CAPABILITY_MISSING", `missing: ${missing.join(", ")}`)
      if (w.requires.minContextWindow !== undefined && caps.contextWindow < w.requires.minContextWindow) {
        tgt("CONTEXT_TOO_SMALL", "context window below requires.minContextWindow")
      }
      if (w.requires.minOutputTokens !== undefined && caps.maxOutputTokens < w.requires.minOutputTokens) {
        tgt("CAPABILITY_MISSING", "maxOutputTokens below requires.minOutputTokens")
      }
      if (w.output !== undefined) {
        if (caps.structuredOutput.mode === "none") {
          tgt("CAPABILITY_MISSING", "no structured output")
        } else {
          const supported = new Set<string>(caps.structuredOutput.features)
          const unsupported = [...features].filter((f) => !supported.has(f))
          if (unsupported.length > 0) {
            tgt(
              "SCHEMA_FEATURE_UNSUPPORTED",
              `${caps.structuredOutput.mode} does not support: ${unsupported.sort().join(", ")}`
            )
          }
        }
      }
      if (t.regions.some((r) => !w.regions.includes(r))) {
        tgt("DATA_REGION_MISMATCH", "the target runs in regions outside the workflow's regions")
      }
      if (!t.dataClasses.includes(w.dataClass)) {
        tgt("DATA_CLASS_NOT_ALLOWED", "the target may not receive the workflow's data class")
      }
      if (Duration.greaterThan(t.limits.minimumAttemptTime, w.timeout)) {
        tgt("MINIMUM_EXCEEDS_TIMEOUT", "minimumAttemptTime exceeds the workflow timeout")
      }
      const unsupported = ModelOptions.unsupported(pinned, caps.options ?? [])
      if (unsupported !== undefined) {
        tgt("OPTION_UNSUPPORTED", `does not accept options the workflow pins: ${unsupported.join(", ")}`)
      }
    })
    const canary = w.canary
    if (canary !== undefined) {
      const unknownTarget = (at: string, ref: string) => {
        if (!targets.has(ref)) {
          add({ path: at, workflow: wf, target: ref, reason: "UNKNOWN_TARGET", detail: "no target with this ref" })
        }
      }
      if (canary.target !== undefined) unknownTarget(`${path}.canary.target`, canary.target)
      canary.route?.forEach((ref, j) => {
        unknownTarget(`${path}.canary.route[${j}]`, ref)
      })
      if (canary.target === undefined && canary.policyVersion === undefined && canary.promptVersion === undefined) {
        add({
          path: `${path}.canary`,
          workflow: wf,
          reason: "CANARY_WITHOUT_CANDIDATE",
          detail: "names no candidate target, policy version or prompt version"
        })
      }
      if (canary.rollout?.steps.some((x, j, all) => j > 0 && x <= all[j - 1]!)) {
        add({
          path: `${path}.canary.rollout.steps`,
          workflow: wf,
          reason: "INVALID_CANARY_STEPS",
          detail: "each step must be above the previous"
        })
      }
      if (!(canary.share > 0 && canary.share <= 1)) {
        add({
          path: `${path}.canary.share`,
          workflow: wf,
          reason: "INVALID_CANARY_SHARE",
          detail: "must be within (0, 1]"
        })
      }
    }
    if (w.shadow !== undefined && !targets.has(w.shadow.target)) {
      add({
        path: `${path}.shadow.target`,
        workflow: wf,
        target: w.shadow.target,
        reason: "UNKNOWN_TARGET",
        detail: "no target with this ref"
      })
    }
  })
  // Embedding targets and workflows (`Embeddings.configProblems`).
  for (const p of Embeddings.configProblems(config, options.embedders)) add(p)
  return problems
}

/**
 * Compiles every workflow (resolved targets, schema, JSON Schema, features, the adapters'
 * provider-option allowlists). Assumes `validate` returned no problems.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const compile = (
  definition: Definition,
  options: ValidateOptions = {}
): ReadonlyMap<string, CompiledWorkflow> => {
  const targets = new Map(definition.config.targets.map((t) => [t.ref as string, t]))
  const providerOptionAllowlists = options.providerOptions ?? new Map()
  const out = new Map<string, CompiledWorkflow>()
  for (const w of definition.config.workflows) {
    const schema = w.output ? schemaNamed(definition, w.output.schema) : undefined
    const jsonSchema = schema ? JsonSchemaFeatures.fromSchema(schema) : undefined
    const degrade: DegradeHandler | undefined =
      w.degrade === undefined
        ? undefined
        : w.degrade._tag === "handler"
          ? handlerNamed(definition, w.degrade.name)
          : (
              (value: unknown) => () =>
                Effect.succeed(value)
            )(w.degrade.value)
    out.set(w.name, {
      workflow: w,
      schema,
      decode: schema ? Schema.decodeUnknownEither(schema, { errors: "all" }) : undefined,
      jsonSchema,
      features: jsonSchema ? JsonSchemaFeatures.featuresOf(jsonSchema) : new Set(),
      targets: w.route.flatMap((ref) => {
        const t = targets.get(ref)
        return t ? [t] : []
      }),
      degrade,
      providerOptionAllowlists,
      canaryTarget: w.canary?.target === undefined ? undefined : targets.get(w.canary.target),
      escalationCheck: w.escalation?.check === undefined ? undefined : checkNamed(definition, w.escalation.check)
    })
  }
  return Lifecycle.compileLifecycle(out, targets)
}

// ---------------------------------------------------------------------------------------------
// Unversioned workflows
// ---------------------------------------------------------------------------------------------

/**
 * A workflow whose policy or prompt version is `Workflow.unversioned`, and which of the two.
 *
 * @since 0.3.0
 * @category Models
 */
export interface Unversioned {
  readonly workflow: string
  readonly fields: ReadonlyArray<"policyVersion" | "prompt.version">
}

/**
 * The workflows whose policy or prompt version is `Workflow.unversioned` (left out, or written
 * so), in configuration order.
 *
 * @since 0.3.0
 * @category Validation
 */
export const unversionedOf = (config: GatewayConfig): ReadonlyArray<Unversioned> =>
  config.workflows.flatMap((w) => {
    const fields: Array<Unversioned["fields"][number]> = []
    if (w.policyVersion === unversioned) fields.push("policyVersion")
    if (w.prompt.version === unversioned) fields.push("prompt.version")
    return fields.length === 0 ? [] : [{ workflow: w.name, fields }]
  })

/**
 * Logs one warning per workflow whose policy or prompt version is unversioned (its evidence cannot
 * tell revisions apart). `ModelGateway.make` runs it once, when the gateway is built.
 *
 * @since 0.3.0
 * @category Validation
 */
export const warnUnversioned = (config: GatewayConfig): Effect.Effect<void> =>
  Effect.forEach(
    unversionedOf(config),
    ({ workflow, fields }) =>
      Effect.logWarning(
        `workflow ${workflow}: ${fields.join(" and ")} not set, recorded as "${unversioned}": evidence cannot tell its revisions apart`
      ).pipe(Effect.annotateLogs({ workflow })),
    { discard: true }
  )
