/**
 * Startup problems as `GatewayConfig.validate` reports them: a path (`workflows[0].route[2]`, one
 * style for every problem), an exclusion or problem code, a detail with the values involved (ids,
 * regions, classes, durations: never a model name, key or other free text), and a fix that says
 * what to change. Problems without a specific fix get their code's from {@link fixes}.
 */
import { ConfigProblem } from "../../Errors.js"

/** A problem's fields before it becomes a `ConfigProblem`. */
export interface Fields {
  readonly path: string
  readonly workflow?: string | undefined
  readonly target?: string | undefined
  readonly reason: string
  readonly detail: string
  readonly fix?: string | undefined
}

/** Adds one problem. */
export type Add = (problem: Fields) => void

/** What to change, per problem code, when the check gives no fix of its own. */
export const fixes: Readonly<Record<string, string>> = {
  DUPLICATE_TARGET: "give each target its own ref, or remove the copy",
  DUPLICATE_WORKFLOW: "give each workflow its own name, or remove the copy",
  DURATION_TOO_LONG: "use a finite duration of at most 86400000 ms (24 h)",
  NON_POSITIVE_TIMEOUT: "use a duration above 0 ms",
  UNKNOWN_CATALOGUE_ENTRY: "use one of Catalogue.ids, or write the target out in full",
  RESERVED_KEY: "rename the key: __proto__, constructor and prototype cannot be keys",
  DEGRADE_VALUE_INVALID: "make degrade.value decode with the workflow's output schema",
  DUPLICATE_ROUTE_TARGET: "list each target once in the route",
  UNKNOWN_TARGET: "define a target with this ref in targets, or fix the ref's spelling",
  DISABLED: "remove the target from the route, or set its status to active",
  CAPABILITY_MISSING: "route to a target that has the capability, or drop the requirement",
  MEDIA_UNSUPPORTED:
    "list the format in the target's capabilities.audioInput (or the media type in capabilities.fileInput) if its provider accepts it, route to a target that does, or drop the requirement",
  ESCALATION_TARGET_NOT_IN_ROUTE: "add the target to the workflow's route, or remove it from escalation.targets",
  CANARY_WITHOUT_CANDIDATE: "name a candidate: canary.target, canary.policyVersion or canary.promptVersion",
  INVALID_CANARY_STEPS: "list canary.rollout.steps in increasing order",
  INVALID_OPTION_BOUNDS: "make the option's bounds consistent: min ≤ default ≤ max, within the option's range",
  PROVIDER_OPTION_NOT_ALLOWED: "remove the field, or use one the provider's adapter allows",
  EMBEDDING_OUTPUT_PRICED: "set pricing.outputPerMillion to 0",
  NO_EMBED_ADAPTER: "provide an adapter for this provider that implements embed, or disable the target",
  EMBEDDING_WORKFLOW_INVALID: "remove those fields from the embedding workflow",
  NO_COMPATIBLE_EMBEDDING_TARGET:
    "add a target whose capabilities.embeddings has this family and dimensions to the route"
}

/** The fix of a decoding problem (`INVALID_VALUE`), from its kind. */
const decodingFix = (detail: string): string =>
  detail === "is missing"
    ? "add the field"
    : detail === "is unexpected"
      ? "remove the field, or fix its name's spelling"
      : detail.startsWith("is invalid (expected ")
        ? `give ${detail.slice("is invalid (expected ".length, -1)}`
        : "give a value of the expected form"

/** The `ConfigProblem` of `fields`, with its fix (the check's, else its code's). */
export const problemOf = (fields: Fields): ConfigProblem => {
  const fix =
    fields.fix ?? fixes[fields.reason] ?? (fields.reason === "INVALID_VALUE" ? decodingFix(fields.detail) : undefined)
  return new ConfigProblem({
    path: fields.path,
    reason: fields.reason,
    detail: fields.detail,
    ...(fields.workflow !== undefined ? { workflow: fields.workflow } : {}),
    ...(fields.target !== undefined ? { target: fields.target } : {}),
    ...(fix !== undefined ? { fix } : {})
  })
}

/** A list of ids for a detail or fix: `[a, b]`, at most 20 shown. */
export const listOf = (ids: Iterable<string>): string => {
  const all = [...ids]
  const shown = all.slice(0, 20).map((id) => JSON.stringify(id))
  return `[${shown.join(", ")}${all.length > 20 ? `, … ${all.length - 20} more` : ""}]`
}
