/**
 * The gateway configuration: targets and workflows, decoded from plain JSON or built in code, plus
 * the pieces only code can give (output schemas, degrade handlers). Validation lists every problem.
 *
 * @since 0.1.0
 */
import { Duration, Effect, Either, ParseResult, Schema } from "effect"
import { ConfigProblem, GatewayConfigError } from "./Errors.js"
import { jsonPath } from "./internal/issues.js"
import * as JsonSchemaFeatures from "./JsonSchemaFeatures.js"
import type { ModelCommand } from "./ModelCommand.js"
import { ModelTarget } from "./ModelTarget.js"
import { Workflow } from "./Workflow.js"

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
}

const decodeConfig = Schema.decodeUnknownEither(GatewayConfig, { errors: "all", onExcessProperty: "error" })

/**
 * Decodes a configuration from plain JSON (e.g. a parsed file). A failure lists every bad field
 * with its path.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const decode = (input: unknown): Effect.Effect<GatewayConfig, GatewayConfigError> =>
  Either.match(decodeConfig(input), {
    onRight: Effect.succeed,
    onLeft: (error) =>
      Effect.fail(
        new GatewayConfigError({
          problems: ParseResult.ArrayFormatter.formatErrorSync(error).map(
            (issue) =>
              new ConfigProblem({
                path: jsonPath(issue.path),
                reason: "INVALID_VALUE",
                detail: issue.message
              })
          )
        })
      )
  })

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
}

/**
 * Checks a configuration against itself, the provided schemas and handlers, and the providers that
 * have adapters. Returns every problem found (empty when valid).
 *
 * @since 0.1.0
 * @category Validation
 */
export const validate = (definition: Definition, providers: ReadonlySet<string>): ReadonlyArray<ConfigProblem> => {
  const problems: Array<ConfigProblem> = []
  const { config } = definition
  const add = (p: ConstructorParameters<typeof ConfigProblem>[0]) => problems.push(new ConfigProblem(p))
  const targets = new Map<string, ModelTarget>()
  config.targets.forEach((t, i) => {
    const path = `targets[${i}]`
    if (targets.has(t.ref)) add({ path, target: t.ref, reason: "DUPLICATE_TARGET", detail: "ref defined twice" })
    targets.set(t.ref, t)
    const l = t.limits
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
        detail: `minimumAttemptTime ${Duration.toMillis(l.minimumAttemptTime)} ms > perAttemptTimeout ${Duration.toMillis(l.perAttemptTimeout)} ms`
      })
    }
    if (t.status !== "disabled" && !providers.has(t.provider)) {
      add({
        path: `${path}.provider`,
        target: t.ref,
        reason: "NO_ADAPTER",
        detail: `no adapter provided for provider "${t.provider}"`
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
    if (Duration.greaterThan(w.retry.baseDelay, w.retry.maxDelay)) {
      add({ path: `${path}.retry`, workflow: wf, reason: "INVALID_RETRY", detail: "baseDelay > maxDelay" })
    }
    let schema: Schema.Schema.AnyNoContext | undefined
    let features: ReadonlySet<string> = new Set()
    if (w.output !== undefined) {
      schema = definition.schemas?.[w.output.schema]
      if (schema === undefined) {
        add({
          path: `${path}.output.schema`,
          workflow: wf,
          reason: "UNKNOWN_SCHEMA",
          detail: `no schema named "${w.output.schema}" was provided`
        })
      } else {
        features = JsonSchemaFeatures.featuresOf(JsonSchemaFeatures.fromSchema(schema))
      }
    }
    if (w.degrade?._tag === "handler" && definition.degradeHandlers?.[w.degrade.name] === undefined) {
      add({
        path: `${path}.degrade.name`,
        workflow: wf,
        reason: "UNKNOWN_DEGRADE_HANDLER",
        detail: `no degrade handler named "${w.degrade.name}"`
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
        tgt("CONTEXT_TOO_SMALL", `context window ${caps.contextWindow} < required ${w.requires.minContextWindow}`)
      }
      if (w.requires.minOutputTokens !== undefined && caps.maxOutputTokens < w.requires.minOutputTokens) {
        tgt("CAPABILITY_MISSING", `max output ${caps.maxOutputTokens} < required ${w.requires.minOutputTokens}`)
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
      const outside = t.regions.filter((r) => !w.regions.includes(r))
      if (outside.length > 0)
        tgt("DATA_REGION_MISMATCH", `regions [${outside.join(", ")}] not in workflow regions [${w.regions.join(", ")}]`)
      if (!t.dataClasses.includes(w.dataClass)) tgt("DATA_CLASS_NOT_ALLOWED", `data class "${w.dataClass}" not allowed`)
      if (Duration.greaterThan(t.limits.minimumAttemptTime, w.timeout)) {
        tgt("MINIMUM_EXCEEDS_TIMEOUT", "minimumAttemptTime exceeds the workflow timeout")
      }
    })
  })
  return problems
}

/**
 * Compiles every workflow (resolved targets, schema, JSON Schema, features). Assumes `validate`
 * returned no problems.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const compile = (definition: Definition): ReadonlyMap<string, CompiledWorkflow> => {
  const targets = new Map(definition.config.targets.map((t) => [t.ref as string, t]))
  const out = new Map<string, CompiledWorkflow>()
  for (const w of definition.config.workflows) {
    const schema = w.output ? definition.schemas?.[w.output.schema] : undefined
    const jsonSchema = schema ? JsonSchemaFeatures.fromSchema(schema) : undefined
    const degrade: DegradeHandler | undefined =
      w.degrade === undefined
        ? undefined
        : w.degrade._tag === "handler"
          ? definition.degradeHandlers?.[w.degrade.name]
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
      degrade
    })
  }
  return out
}
