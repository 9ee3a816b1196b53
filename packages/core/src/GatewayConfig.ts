/**
 * The gateway configuration: targets and workflows, decoded from plain JSON or built in code, plus
 * the pieces only code can give (output schemas, degrade handlers). Validation lists every problem.
 *
 * Edges handled at startup:
 *
 * - Every duration is finite and at most 24 h; `1e309`, which
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
import { type Duration, Effect, Either, type ParseResult, Schema } from "effect"
import * as Catalogue from "./Catalogue.js"
import { merge as mergeCatalogue } from "./internal/catalogueMerge.js"
import * as Embeddings from "./Embeddings.js"
import { type ConfigProblem, GatewayConfigError } from "./Errors.js"
import type { CompiledWorkflow, DegradeHandler, EscalationCheck } from "./internal/compiled.js"
import { type Fields, problemOf } from "./internal/config/problems.js"
import { checkTarget } from "./internal/config/targets.js"
import { checkWorkflow, type Sources } from "./internal/config/workflows.js"
import { configPath, configProblemsOf } from "./internal/issues.js"
import * as Lifecycle from "./internal/lifecycle.js"
import { foldSliced, mapSliced, withSliceYield } from "./internal/sliceYield.js"
import * as JsonSchemaFeatures from "./JsonSchemaFeatures.js"
import type * as ModelOptions from "./ModelOptions.js"
import { ModelTarget } from "./ModelTarget.js"
import { unversioned, Workflow } from "./Workflow.js"

/**
 * Targets and workflows.
 *
 * @since 0.1.0
 * @category Models
 */
export class GatewayConfig extends Schema.Class<GatewayConfig>("@modelgate/core/GatewayConfig")({
  targets: Schema.Array(ModelTarget),
  workflows: Schema.Array(Workflow),
  /**
   * Every call needs a tenant the host vouched for (`Tenancy.vouch`); a call without one is refused
   * (`PolicyViolation` `TENANT_NOT_VOUCHED`). Omitted: only workflows bound to tenants need one.
   */
  requireVouchedTenant: Schema.optional(Schema.Boolean)
}) {}

export type { CompiledWorkflow, DegradeHandler } from "./internal/compiled.js"

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

// ---------------------------------------------------------------------------------------------
// The encoded (JSON) form
// ---------------------------------------------------------------------------------------------

type ModelTargetEncoded = Schema.Schema.Encoded<typeof ModelTarget>

/**
 * A target written out in full, in encoded (JSON) form.
 *
 * @since 0.2.0
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
 * @since 0.2.0
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
 * @since 0.2.0
 * @category Models
 */
export type TargetEncoded = FullTargetEncoded | CatalogueTargetEncoded

/**
 * A workflow in encoded (JSON) form (durations in milliseconds).
 *
 * @since 0.2.0
 * @category Models
 */
export type WorkflowEncoded = Schema.Schema.Encoded<typeof Workflow>

/**
 * The configuration as {@link decode} and `ModelGateway.layerJson` read it: plain JSON, durations
 * in milliseconds, targets written out or naming a catalogue entry.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Encoded<Name extends string = string> {
  readonly targets: ReadonlyArray<TargetEncoded>
  readonly workflows: ReadonlyArray<WorkflowEncoded & { readonly name: Name }>
}

/**
 * The workflow names of a configuration written in code with {@link make} (a union of string
 * literals); `string` for any other configuration. Register it to type `ModelGateway.workflow`'s
 * names (see `ModelGateway.Register`).
 *
 * @since 0.2.0
 * @category Models
 */
export type WorkflowNames<C> = C extends { readonly workflows: ReadonlyArray<{ readonly name: infer N }> }
  ? N extends string
    ? N
    : string
  : string

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
 * @since 0.2.0
 * @category Constructors
 */
export const make = <const Name extends string>(config: Encoded<Name>): Encoded<Name> => config

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

const decodeOptions = { errors: "all", onExcessProperty: "error" } as const
const decodeConfig = Schema.decodeUnknownEither(GatewayConfig, decodeOptions)
const decodeTarget = Schema.decodeUnknownEither(ModelTarget, decodeOptions)
const decodeWorkflow = Schema.decodeUnknownEither(Workflow, decodeOptions)

/** Targets or workflows decoded per slice of a large configuration (about 7 ms of decoding). */
const decodedPerSlice = 100

type SchemaProblems = Array<Fields>

const problemsAt =
  (prefix: ReadonlyArray<PropertyKey>) =>
  (error: ParseResult.ParseError): SchemaProblems =>
    configProblemsOf(error, (path) => configPath([...prefix, ...path]))

/**
 * The configuration decoded, or its schema problems. A configuration of more than
 * {@link decodedPerSlice} targets and workflows is decoded item by item, `yieldBetween` every
 * slice, so decoding (and reloading) 10,000 targets never holds the event loop for long; the
 * problems are the same, in the same order, as one pass over the whole.
 */
const decodeSchema = (
  input: unknown,
  yieldBetween: Effect.Effect<void>
): Effect.Effect<Either.Either<GatewayConfig, SchemaProblems>> => {
  const targetItems: unknown = isRecord(input) ? input.targets : undefined
  const workflowItems: unknown = isRecord(input) ? input.workflows : undefined
  if (
    !isRecord(input) ||
    !Array.isArray(targetItems) ||
    !Array.isArray(workflowItems) ||
    targetItems.length + workflowItems.length <= decodedPerSlice
  ) {
    return Effect.succeed(Either.mapLeft(decodeConfig(input), problemsAt([])))
  }
  const each = <A>(
    name: string,
    items: ReadonlyArray<unknown>,
    decodeOne: (u: unknown) => Either.Either<A, ParseResult.ParseError>
  ) =>
    mapSliced(items, decodedPerSlice, yieldBetween, (item, i) => Either.mapLeft(decodeOne(item), problemsAt([name, i])))
  return Effect.gen(function* () {
    const targets = yield* each("targets", targetItems, decodeTarget)
    const workflows = yield* each("workflows", workflowItems, decodeWorkflow)
    const rest = Either.mapLeft(decodeConfig({ ...input, targets: [], workflows: [] }), problemsAt([]))
    // One pass lists unknown keys first, then the fields in order (`targets`, `workflows`, the rest).
    const restProblems = leftOf(rest)
    const unknownKey = (p: Fields) => !declaredFields.some((f) => p.path === f || p.path.startsWith(`${f}.`))
    const problems = [
      ...restProblems.filter(unknownKey),
      ...targets.flatMap(leftOf),
      ...workflows.flatMap(leftOf),
      ...restProblems.filter((p) => !unknownKey(p))
    ]
    if (problems.length > 0 || Either.isLeft(rest)) return Either.left(problems)
    return Either.right(
      new GatewayConfig(
        { ...rest.right, targets: targets.flatMap(rightOf), workflows: workflows.flatMap(rightOf) },
        true
      )
    )
  })
}

/** The configuration's own fields, as problem paths. */
const declaredFields = Object.keys(GatewayConfig.fields).map((key) => configPath([key]))

const rightOf = <A, E>(e: Either.Either<A, E>): Array<A> => (Either.isRight(e) ? [e.right] : [])
const leftOf = <A, E>(e: Either.Either<A, Array<E>>): Array<E> => (Either.isLeft(e) ? e.left : [])

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
    const path = configPath(["targets", i])
    if (hasVersion && (!hasEntry || t.catalogueVersion !== Catalogue.version)) {
      problems.push(
        problemOf({
          path: `${path}.catalogueVersion`,
          reason: "CATALOGUE_VERSION_MISMATCH",
          detail: hasEntry
            ? `this release ships catalogue ${Catalogue.version}: check the entry's figures, then update catalogueVersion`
            : "catalogueVersion needs a catalogue entry (catalogue)",
          fix: hasEntry
            ? `check the entry's figures, then set catalogueVersion to "${Catalogue.version}"`
            : "name a catalogue entry, or remove catalogueVersion"
        })
      )
    }
    if (!hasEntry) return t
    if (!Catalogue.isId(t.catalogue)) {
      problems.push(
        problemOf({
          path: `${path}.catalogue`,
          reason: "UNKNOWN_CATALOGUE_ENTRY",
          detail: `no entry with this id in catalogue ${Catalogue.version} (Catalogue.ids lists them)`
        })
      )
      for (const key of suppliedByCatalogue) explained.add(`${path}.${key}`)
      return t
    }
    return mergeCatalogue(t.catalogue, t)
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
export const decode = (input: unknown): Effect.Effect<GatewayConfig, GatewayConfigError> =>
  withSliceYield((yieldBetween) => {
    const resolved = resolveCatalogue(input)
    return Effect.flatMap(decodeSchema(resolved.input, yieldBetween), (decoded) => {
      if (Either.isRight(decoded) && resolved.problems.length === 0) return Effect.succeed(decoded.right)
      const schemaProblems = Either.isLeft(decoded)
        ? decoded.left.filter((p) => !(p.detail === "is missing" && resolved.explained.has(p.path))).map(problemOf)
        : []
      return Effect.fail(new GatewayConfigError({ problems: [...resolved.problems, ...schemaProblems] }))
    })
  })

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
 * Checks a configuration against itself, the provided schemas and handlers, the providers that
 * have adapters and the budgets' reservation TTL. Returns every problem found (empty when valid),
 * each with a path, a code, a detail naming the values involved (never a value that could be a
 * secret or text) and a `fix`. Route targets are checked with the router's own eligibility rules.
 *
 * @since 0.1.0
 * @category Validation
 */
export const validate = (
  definition: Definition,
  providers: ReadonlySet<string>,
  options: ValidateOptions = {}
): ReadonlyArray<ConfigProblem> => {
  const { problems, steps } = validationSteps(definition, providers, options)
  for (const step of steps) step()
  return problems
}

/**
 * {@link validate} a slice of checks at a time, yielding between slices, so a 10,000-target
 * configuration never holds the event loop for long (the gateway validates with it on `reload`).
 *
 * @internal
 */
export const validateYielding = (
  definition: Definition,
  providers: ReadonlySet<string>,
  options: ValidateOptions = {}
): Effect.Effect<ReadonlyArray<ConfigProblem>> =>
  withSliceYield((yieldBetween) => {
    const { problems, steps } = validationSteps(definition, providers, options)
    return Effect.as(
      foldSliced<() => void, void>(steps, checkedPerSlice, yieldBetween, undefined, (_, step) => step()),
      problems
    )
  })

/** Targets or workflows validated per slice by {@link validateYielding}. */
const checkedPerSlice = 200

/**
 * The checks of {@link validate} as steps, in order: one per target, one per workflow (which read
 * the targets the steps before them collected), then the embedding checks. Each adds to `problems`.
 */
const validationSteps = (
  definition: Definition,
  providers: ReadonlySet<string>,
  options: ValidateOptions
): { readonly problems: Array<ConfigProblem>; readonly steps: ReadonlyArray<() => void> } => {
  const problems: Array<ConfigProblem> = []
  const add = (p: Fields) => problems.push(problemOf(p))
  const { config } = definition
  const targets = new Map<string, ModelTarget>()
  const sources: Sources = {
    given: (map, name) => {
      const record = definition[map]
      return { value: own<unknown>(record, name), names: record === undefined ? [] : Object.keys(record).sort() }
    },
    schema: (name) => schemaNamed(definition, name),
    targets,
    reservationTtl: options.reservationTtl,
    providerOptions: options.providerOptions
  }
  const names = new Set<string>()
  const checkOne = (w: Workflow, i: number) => {
    const path = `workflows[${i}]`
    if (names.has(w.name)) add({ path, workflow: w.name, reason: "DUPLICATE_WORKFLOW", detail: "name defined twice" })
    names.add(w.name)
    checkWorkflow(w, path, sources, add)
  }
  const steps = [
    ...config.targets.map((t, i) => () => checkTarget(t, i, targets, providers, add)),
    ...config.workflows.map((w, i) => () => checkOne(w, i)),
    // Embedding targets and workflows (`Embeddings.configProblems`).
    () => {
      for (const p of Embeddings.configProblems(config, options.embedders)) add(p)
    }
  ]
  return { problems, steps }
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
      escalationCheck: w.escalation?.check === undefined ? undefined : checkNamed(definition, w.escalation.check),
      vouchedOnly: definition.config.requireVouchedTenant === true || w.tenants !== undefined
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
 * @since 0.2.0
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
 * @since 0.2.0
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
 * @since 0.2.0
 * @category Validation
 *
 * @internal
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
