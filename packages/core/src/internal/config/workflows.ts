/**
 * Startup checks of one workflow, per concern and in this order: name and timing, output schema,
 * escalation and degraded answer, sampling and provider options, the route (the router's own
 * eligibility rules, `internal/router/eligibility`, plus what only a configuration can get wrong),
 * the canary, the response cache and the shadow target.
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as JsonSchemaFeatures from "../../JsonSchemaFeatures.js"
import * as ModelOptions from "../../ModelOptions.js"
import * as Options from "../options.js"
import type { ModelTarget } from "../../ModelTarget.js"
import type { Workflow } from "../../Workflow.js"
import { segment } from "../issues.js"
import { type Exclusion, type Shape, startupReasons } from "../router/eligibility.js"
import { checkCache } from "./cache.js"
import { type Add, listOf } from "./problems.js"
import { ms, tooLong, tooLongDetail } from "./targets.js"

/** What the workflow checks read of the definition besides the workflow. */
export interface Sources {
  /** Own-property lookups of the definition's code maps (`undefined`: not given). */
  readonly given: (
    map: "schemas" | "degradeHandlers" | "escalationChecks",
    name: string
  ) => { readonly value: unknown; readonly names: ReadonlyArray<string> }
  /** The schema of this name, when what was given under it is a schema. */
  readonly schema: (name: string) => Schema.Schema.AnyNoContext | undefined
  readonly targets: ReadonlyMap<string, ModelTarget>
  readonly reservationTtl: Duration.Duration | undefined
  readonly providerOptions: ReadonlyMap<string, ModelOptions.ProviderOptionsAllowlist> | undefined
}

/** One workflow's checks; `path` is its own (`workflows[i]`). */
export const checkWorkflow = (w: Workflow, path: string, sources: Sources, add: Add): void => {
  const wf = w.name
  const at = (sub: string, problem: { reason: string; detail: string; fix?: string; target?: string }) =>
    add({ path: `${path}${sub}`, workflow: wf, ...problem })
  checkTiming(w, sources, at)
  const shape = checkOutput(w, sources, at)
  checkEscalationAndDegrade(w, shape, sources, at)
  checkOptions(w, sources, at)
  checkRoute(w, shape, sources, at)
  checkCanary(w, sources, at)
  checkTenants(w, sources, at)
  checkCache(w, at)
  if (w.prefixAffinity !== undefined && w.selection !== "scored") {
    at(".prefixAffinity", {
      reason: "PREFIX_AFFINITY_NOT_SCORED",
      detail: "prefix affinity is a term of scored selection; an ordered route always tries its first eligible target",
      fix: 'set selection: "scored", or remove prefixAffinity'
    })
  }
  if (w.shadow !== undefined && !sources.targets.has(w.shadow.target)) {
    at(".shadow.target", { target: w.shadow.target, reason: "UNKNOWN_TARGET", detail: "no target with this ref" })
  }
}

type At = (sub: string, problem: { reason: string; detail: string; fix?: string; target?: string }) => void

/** The timeout (positive, finite, below the budgets' reservation TTL) and the retry delays. */
const checkTiming = (w: Workflow, sources: Sources, at: At): void => {
  if (Duration.toMillis(w.timeout) <= 0) {
    at(".timeout", { reason: "NON_POSITIVE_TIMEOUT", detail: `must be > 0, got ${ms(w.timeout)}` })
  }
  const ttl = sources.reservationTtl
  if (tooLong(w.timeout)) {
    at(".timeout", { reason: "DURATION_TOO_LONG", detail: tooLongDetail })
  } else if (ttl !== undefined && !Duration.lessThan(w.timeout, ttl)) {
    at(".timeout", {
      reason: "TIMEOUT_NOT_BELOW_RESERVATION_TTL",
      detail: `timeout ${ms(w.timeout)} must be shorter than the budgets' reservationTtl ${ms(ttl)}: a reservation could expire while its call still runs`,
      fix: `lower the timeout below ${ms(ttl)}, or raise the budgets' reservationTtl above ${ms(w.timeout)}`
    })
  }
  for (const key of ["baseDelay", "maxDelay"] as const) {
    if (tooLong(w.retry[key])) at(`.retry.${key}`, { reason: "DURATION_TOO_LONG", detail: tooLongDetail })
  }
  if (Duration.greaterThan(w.retry.baseDelay, w.retry.maxDelay)) {
    at(".retry", {
      reason: "INVALID_RETRY",
      detail: `baseDelay ${ms(w.retry.baseDelay)} > maxDelay ${ms(w.retry.maxDelay)}`,
      fix: `lower retry.baseDelay to at most ${ms(w.retry.maxDelay)}, or raise retry.maxDelay`
    })
  }
}

/** The output schema: given, an Effect Schema, expressible as JSON Schema. Returns what the route rules read. */
const checkOutput = (w: Workflow, sources: Sources, at: At): Shape => {
  const none: Shape = { workflow: w, schema: undefined, features: new Set() }
  if (w.output === undefined) return none
  const { value, names } = sources.given("schemas", w.output.schema)
  if (value === undefined) {
    at(".output.schema", {
      reason: "UNKNOWN_SCHEMA",
      detail: "no schema of this name was provided",
      fix: `pass an Effect Schema under this name in the definition's schemas (given: ${listOf(names)})`
    })
    return none
  }
  const schema = sources.schema(w.output.schema)
  if (schema === undefined) {
    at(".output.schema", {
      reason: "INVALID_SCHEMA",
      detail: "what was provided under this name is not an Effect Schema",
      fix: "pass an Effect Schema (e.g. Schema.Struct({ … })) under this name"
    })
    return none
  }
  try {
    return { workflow: w, schema, features: JsonSchemaFeatures.featuresOf(JsonSchemaFeatures.fromSchema(schema)) }
  } catch {
    // e.g. a `Schema.declare` without a JSON Schema annotation: a listed problem, not a defect
    at(".output.schema", {
      reason: "INVALID_SCHEMA",
      detail: "the schema cannot be expressed as JSON Schema",
      fix: "give its declared parts a jsonSchema annotation, or build it from schemas JSONSchema.make can express"
    })
    return none
  }
}

/** Escalation targets within the route, the escalation check and the degraded answer. */
const checkEscalationAndDegrade = (w: Workflow, shape: Shape, sources: Sources, at: At): void => {
  for (const [i, ref] of (w.escalation?.targets ?? []).entries()) {
    if (!w.route.includes(ref)) {
      at(`.escalation.targets[${i}]`, {
        reason: "ESCALATION_TARGET_NOT_IN_ROUTE",
        detail: "an escalation target must be one of the workflow's route targets"
      })
    }
  }
  const check = w.escalation?.check
  if (check !== undefined) {
    const { value, names } = sources.given("escalationChecks", check)
    if (typeof value !== "function") {
      at(".escalation.check", {
        reason: "UNKNOWN_ESCALATION_CHECK",
        detail: "no escalation check (function) of this name",
        fix: `pass a function under this name in the definition's escalationChecks (given: ${listOf(names)})`
      })
    }
  }
  const degrade = w.degrade
  if (degrade?._tag === "handler") {
    const { value, names } = sources.given("degradeHandlers", degrade.name)
    if (typeof value !== "function") {
      const given = value !== undefined
      at(".degrade.name", {
        reason: given ? "INVALID_DEGRADE_HANDLER" : "UNKNOWN_DEGRADE_HANDLER",
        detail: given ? "what was provided under this name is not a function" : "no degrade handler of this name",
        fix: given
          ? "pass a function (command) => Effect under this name"
          : `pass a function under this name in the definition's degradeHandlers (given: ${listOf(names)})`
      })
    }
  }
  if (
    degrade?._tag === "static" &&
    shape.schema !== undefined &&
    Either.isLeft(Schema.decodeUnknownEither(shape.schema)(degrade.value))
  ) {
    at(".degrade.value", { reason: "DEGRADE_VALUE_INVALID", detail: "does not match the output schema" })
  }
}

/** Sampling-option bounds and provider options (a provider of the route, fields its adapter allows). */
const checkOptions = (w: Workflow, sources: Sources, at: At): void => {
  for (const [option, detail] of Options.boundsProblems(w.options)) {
    at(`.options.${option}`, { reason: "INVALID_OPTION_BOUNDS", detail })
  }
  const routeProviders = new Set<string>(w.route.flatMap((ref) => sources.targets.get(ref)?.provider ?? []))
  for (const [provider, fields] of Object.entries(w.providerOptions ?? {})) {
    const sub = `.providerOptions.${segment(provider)}`
    if (!routeProviders.has(provider)) {
      at(sub, {
        reason: "PROVIDER_OPTIONS_UNUSED",
        detail: "no target of the route uses this provider",
        fix: `key providerOptions by a provider of the route (${listOf([...routeProviders].sort())}), or remove this entry`
      })
      continue
    }
    const allowlist = sources.providerOptions?.get(provider)
    for (const problem of ModelOptions.providerOptionsProblems(provider, fields, allowlist)) {
      at(sub, { reason: "PROVIDER_OPTION_NOT_ALLOWED", detail: problem })
    }
  }
}

/** Feature-specific advice for a schema a structured-output mode rejects. */
const featureHints: Readonly<Record<string, string>> = {
  optionalProperties: "use Schema.NullOr(X) instead of Schema.optional(X): strict modes require every property",
  openObject: "use Schema.Struct without records or index signatures (strict modes need closed objects)",
  recursiveRef: "flatten the recursive schema to a fixed depth"
}

/** The fix of an eligibility problem of a route target, with the values the rule compared. */
const eligibilityFix = (w: Workflow, shape: Shape, t: ModelTarget, why: Exclusion): string | undefined => {
  switch (why.reason) {
    case "DATA_REGION_MISMATCH":
      return `region names compare exactly ("EU" is not "eu"): make the target's regions ${listOf(t.regions)} a subset of the workflow's ${listOf(w.regions)}, or remove the target from the route`
    case "DATA_CLASS_NOT_ALLOWED":
      return `the target accepts ${listOf(t.dataClasses)}: add ${JSON.stringify(w.dataClass)} to its dataClasses, or remove it from the route`
    case "SCHEMA_FEATURE_UNSUPPORTED": {
      const mode = t.capabilities.structuredOutput
      const supported = new Set<string>(mode.features)
      const unsupported = [...shape.features].filter((f) => !supported.has(f)).sort()
      const hints = unsupported.flatMap((f) => featureHints[f] ?? [])
      const base = `${mode.mode} supports ${listOf(mode.features)}`
      return hints.length > 0
        ? `${base}: ${hints.join("; ")}`
        : `${base}: drop the other features from the schema, or route to a target whose mode supports them`
    }
    case "OPTION_UNSUPPORTED":
      return `the target accepts options ${listOf(t.capabilities.options ?? [])}: remove the pin from the workflow's options, or the target from the route`
    default:
      return undefined
  }
}

/** Every route target: defined, listed once, eligible for the workflow (the router's rules), within its limits. */
const checkRoute = (w: Workflow, shape: Shape, sources: Sources, at: At): void => {
  const pinned = Options.pinned(w.options)
  const seen = new Set<string>()
  w.route.forEach((ref, j) => {
    const sub = `.route[${j}]`
    const tgt = (reason: string, detail: string, fix?: string) =>
      at(sub, fix === undefined ? { target: ref, reason, detail } : { target: ref, reason, detail, fix })
    if (seen.has(ref)) tgt("DUPLICATE_ROUTE_TARGET", "target appears twice in the route")
    seen.add(ref)
    const t = sources.targets.get(ref)
    if (t === undefined) {
      tgt("UNKNOWN_TARGET", "no target with this ref")
      return
    }
    for (const why of startupReasons(shape, t, pinned)) tgt(why.reason, why.detail, eligibilityFix(w, shape, t, why))
    const caps = t.capabilities
    const minWindow = w.requires.minContextWindow
    if (minWindow !== undefined && caps.contextWindow < minWindow) {
      tgt(
        "CONTEXT_TOO_SMALL",
        `context window ${caps.contextWindow} below requires.minContextWindow ${minWindow}`,
        "route to a target with a larger context window, or lower requires.minContextWindow"
      )
    }
    const minOutput = w.requires.minOutputTokens
    if (minOutput !== undefined && caps.maxOutputTokens < minOutput) {
      tgt(
        "CAPABILITY_MISSING",
        `maxOutputTokens ${caps.maxOutputTokens} below requires.minOutputTokens ${minOutput}`,
        "route to a target with a larger output cap, or lower requires.minOutputTokens"
      )
    }
    if (Duration.greaterThan(t.limits.minimumAttemptTime, w.timeout)) {
      tgt(
        "MINIMUM_EXCEEDS_TIMEOUT",
        `minimumAttemptTime ${ms(t.limits.minimumAttemptTime)} exceeds the workflow timeout ${ms(w.timeout)}`,
        "raise the workflow's timeout, or lower the target's limits.minimumAttemptTime"
      )
    }
  })
}

/**
 * A workflow bound to tenants: each of them must be servable by one of its route targets (a shared
 * one, or one dedicated to that tenant), else its calls could never be served.
 */
const checkTenants = (w: Workflow, sources: Sources, at: At): void => {
  if (w.tenants === undefined) return
  const route = w.route.flatMap((ref) => {
    const t = sources.targets.get(ref)
    return t === undefined ? [] : [t]
  })
  w.tenants.forEach((tenant, j) => {
    if (route.some((t) => t.tenants === undefined || t.tenants.includes(tenant))) return
    at(`.tenants[${j}]`, {
      reason: "TENANT_UNSERVED",
      detail: `tenant ${tenant}: every route target is dedicated to other tenants`,
      fix: `add ${tenant} to the tenants of a route target, or route to a shared target (no tenants)`
    })
  })
}

/** The canary: known targets, a candidate, increasing rollout steps, a share within (0, 1]. */
const checkCanary = (w: Workflow, sources: Sources, at: At): void => {
  const canary = w.canary
  if (canary === undefined) return
  const known = (sub: string, ref: string) => {
    if (!sources.targets.has(ref)) at(sub, { target: ref, reason: "UNKNOWN_TARGET", detail: "no target with this ref" })
  }
  if (canary.target !== undefined) known(".canary.target", canary.target)
  canary.route?.forEach((ref, j) => {
    known(`.canary.route[${j}]`, ref)
  })
  if (canary.target === undefined && canary.policyVersion === undefined && canary.promptVersion === undefined) {
    at(".canary", {
      reason: "CANARY_WITHOUT_CANDIDATE",
      detail: "names no candidate target, policy version or prompt version"
    })
  }
  if (canary.rollout?.steps.some((x, j, all) => j > 0 && x <= all[j - 1]!)) {
    at(".canary.rollout.steps", { reason: "INVALID_CANARY_STEPS", detail: "each step must be above the previous" })
  }
  if (!(canary.share > 0 && canary.share <= 1)) {
    at(".canary.share", {
      reason: "INVALID_CANARY_SHARE",
      detail: "must be within (0, 1]",
      fix: `use a share above 0 and at most 1 (got ${canary.share})`
    })
  }
}
