/**
 * The `decode` every configuration section (budgets, concurrency) shares: its schema's problems,
 * each with its path under the section, else the section's own checks; never a value.
 */
import { Effect, Schema } from "effect"
import { ConfigProblem, GatewayConfigError } from "../Errors.js"
import { configProblemsOf, segment } from "./issues.js"

/** Decodes one section (`section` prefixes every problem's path) and validates it with `validate`. */
export const decodeSection = <A, I>(
  schema: Schema.Schema<A, I>,
  section: string,
  validate: (decoded: A) => ReadonlyArray<ConfigProblem>
) => {
  const decodeConfig = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })
  return (input: unknown): Effect.Effect<A, GatewayConfigError> =>
    Effect.suspend(() => {
      const decoded = decodeConfig(input)
      if (decoded._tag === "Left") {
        const problems = configProblemsOf(decoded.left, (path) => [section, ...path.map(segment)].join("."))
        return Effect.fail(new GatewayConfigError({ problems: problems.map((p) => new ConfigProblem(p)) }))
      }
      const problems = validate(decoded.right)
      return problems.length > 0 ? Effect.fail(new GatewayConfigError({ problems })) : Effect.succeed(decoded.right)
    })
}
