/**
 * The check of a per-call `generateObject({ schema })` against the workflow's declared output
 * schema: the same schema (or AST), or the same JSON Schema once documentation keywords are
 * removed and keys sorted. Anything else is a mismatch.
 *
 * @internal
 */
import type { CompiledWorkflow } from "@modelgate/core/GatewayConfig"
import * as JsonSchemaFeatures from "@modelgate/core/JsonSchemaFeatures"
import { Schema } from "effect"

/** Keywords that document a schema without constraining the value. */
const documentation: ReadonlySet<string> = new Set(["title", "description", "examples", "$comment", "default"])

/** JSON text of a JSON Schema with documentation keywords removed and object keys sorted. */
const canonical = (value: unknown): string => {
  const normalize = (node: unknown, inProperties: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => normalize(n, false))
    if (typeof node !== "object" || node === null) return node
    const out: Record<string, unknown> = {}
    const entries = Object.entries(node).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    for (const [key, child] of entries) {
      // Under `properties` / `$defs` the keys are names, not keywords: keep them all.
      if (!inProperties && documentation.has(key)) continue
      out[key] = normalize(child, key === "properties" || key === "$defs")
    }
    return out
  }
  return JSON.stringify(normalize(value, false))
}

/**
 * Why `schema` cannot be served by `compiled`'s workflow, or `undefined` when it can. A schema
 * that has no JSON Schema (a declaration without annotation) cannot be compared, so it differs.
 *
 * @internal
 */
export const mismatch = (
  compiled: CompiledWorkflow,
  schema: Schema.Schema.Any
): { readonly reason: "no_output_schema" | "different_schema"; readonly detail: string } | undefined => {
  const declared = compiled.schema
  if (declared === undefined || compiled.jsonSchema === undefined)
    return { reason: "no_output_schema", detail: "the workflow declares no output schema" }
  if (declared === schema || declared.ast === schema.ast) return undefined
  let perCall: Record<string, unknown>
  try {
    perCall = JsonSchemaFeatures.fromSchema(Schema.make(schema.ast))
  } catch {
    return { reason: "different_schema", detail: "the schema has no JSON Schema to compare" }
  }
  return canonical(perCall) === canonical(compiled.jsonSchema)
    ? undefined
    : { reason: "different_schema", detail: "its JSON Schema differs from the workflow's output schema" }
}
