/**
 * The option facts that module `ModelOptions` builds its schemas and checks from: the neutral
 * option names and the provider-option checks. Below both `ModelOptions` and the engine's
 * `internal/options` (which imports `ModelOptions`), so neither imports the other in a circle.
 */
import { Schema } from "effect"

/** Every neutral option, in a fixed order (the literals of `ModelOptions.OptionName`). */
export const names = [
  "temperature",
  "topP",
  "seed",
  "stop",
  "reasoningEffort",
  "reasoningBudget",
  "parallelToolCalls",
  "presencePenalty",
  "frequencyPenalty",
  "userId"
] as const

/** Names that could carry an endpoint, a credential or a header, at any depth. */
export const sensitiveName = /url|uri|endpoint|host|key|secret|token|passw|credential|auth|header|cookie|proxy/i

/** Whether `value` is valid for an allowlist's `schema` (Effect memoises the schema's parser). */
export const isValid = (schema: Schema.Schema.AnyNoContext, value: unknown): boolean =>
  Schema.is(schema, { onExcessProperty: "error" })(value)

/** The first key at any depth of `value` that names a URL, key, header…; iterative and bounded. */
export const sensitiveKeyIn = (value: unknown): boolean => {
  const stack: Array<{ readonly v: unknown; readonly depth: number }> = [{ v: value, depth: 0 }]
  let seen = 0
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!
    if (++seen > 10_000 || depth > 16) return true
    if (typeof v !== "object" || v === null) continue
    if (Array.isArray(v)) {
      for (const item of v) stack.push({ v: item, depth: depth + 1 })
      continue
    }
    for (const [key, child] of Object.entries(v)) {
      if (sensitiveName.test(key)) return true
      stack.push({ v: child, depth: depth + 1 })
    }
  }
  return false
}
