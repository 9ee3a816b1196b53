/**
 * `modelgate check <config.json>`: every problem that would stop the gateway from starting, each
 * with what to change. The file is decoded as `ModelGateway.layerJson` decodes it, then the gateway
 * is built offline (`ModelGateway.make`, the application's own startup validation) with the
 * adapters the file names; nothing calls a provider.
 *
 * @since 0.2.0
 */
import { GatewayConfig } from "@modelgate/core"
import type { ConfigProblem } from "@modelgate/core/Errors"
import { Effect, Either } from "effect"
import * as ConfigFile from "./ConfigFile.js"
import { withGateway } from "./internal/offline.js"

/**
 * The outcome of a check: the problems (none: the gateway starts) and notes that do not stop it.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Result {
  readonly problems: ReadonlyArray<ConfigProblem>
  readonly notes: ReadonlyArray<string>
  /** Counts of what was checked, when the file decoded. */
  readonly checked?: { readonly targets: number; readonly workflows: number } | undefined
}

/**
 * What to change for a problem that comes from the file's stand-ins for code (`schemas`,
 * `degradeHandlers`, `escalationChecks`, `adapters`); `undefined` for the others, whose detail says it.
 *
 * @since 0.2.0
 * @category Getters
 */
export const fileFix = (problem: ConfigProblem): string | undefined => {
  switch (problem.reason) {
    case "NO_ADAPTER":
      return `name the adapter serving this provider under "adapters": { "<provider id>": "openai" | "anthropic" | "gemini" | "openai-compatible" | "custom" }`
    case "UNKNOWN_SCHEMA":
      return `give the schema's JSON Schema under "schemas" (what JSONSchema.make(schema) prints), or remove output.schema for free text`
    case "UNKNOWN_DEGRADE_HANDLER":
      return `list the handler's name under "degradeHandlers" if the application supplies it in code`
    case "UNKNOWN_ESCALATION_CHECK":
      return `list the check's name under "escalationChecks" if the application supplies it in code`
    default:
      return undefined
  }
}

/**
 * Checks the text of a configuration file (`path` names it in problems).
 *
 * @since 0.2.0
 * @category Constructors
 */
export const check = (path: string, text: string): Effect.Effect<Result> =>
  Effect.gen(function* () {
    const json = ConfigFile.readJson(path, text)
    if (Either.isLeft(json)) return { problems: json.left, notes: [] }
    const loaded = yield* Effect.either(ConfigFile.decode(json.right))
    if (Either.isLeft(loaded)) return { problems: loaded.left, notes: [] }
    const built = yield* Effect.either(withGateway(loaded.right, () => Effect.void))
    const config = loaded.right.definition.config
    const notes = GatewayConfig.unversionedOf(config).map(
      ({ workflow, fields }) => `workflow ${workflow}: ${fields.join(" and ")} not set (recorded as "unversioned")`
    )
    return {
      problems: Either.isLeft(built) ? built.left.problems : [],
      notes,
      checked: { targets: config.targets.length, workflows: config.workflows.length }
    }
  })

/**
 * The report of a check as lines: one block per problem (path, reason, who, what is wrong and what
 * to change), then the notes.
 *
 * @since 0.2.0
 * @category Rendering
 */
export const render = (path: string, result: Result): ReadonlyArray<string> => {
  const lines: Array<string> = []
  const n = result.problems.length
  if (n === 0) {
    const what = result.checked ? ` (${result.checked.targets} targets, ${result.checked.workflows} workflows)` : ""
    lines.push(`${path}: ok${what}: the gateway starts with this configuration`)
  } else {
    lines.push(`${path}: ${n} problem${n === 1 ? "" : "s"}; the gateway would not start:`)
    result.problems.forEach((p, i) => {
      const who = [p.workflow && `workflow ${p.workflow}`, p.target && `target ${p.target}`].filter(Boolean).join(", ")
      lines.push(`  ${i + 1}. ${p.path}: ${p.reason}${who ? ` (${who})` : ""}`)
      lines.push(`     ${p.detail}`)
      const fix = fileFix(p)
      if (fix !== undefined) lines.push(`     fix: ${fix}`)
    })
  }
  for (const note of result.notes) lines.push(`note: ${note}`)
  return lines
}
