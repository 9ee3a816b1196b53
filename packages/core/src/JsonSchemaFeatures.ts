/**
 * Derives the JSON Schema that is sent to providers from a workflow's Effect Schema, and finds the
 * JSON-Schema features it uses, so that startup validation can check them against what each
 * target's structured-output mode accepts.
 *
 * @since 0.1.0
 */
import { JSONSchema, type Schema } from "effect"
import type { SchemaFeature } from "./ModelTarget.js"

/**
 * The JSON Schema of an Effect Schema's encoded side, top level inlined, `$defs` kept only when
 * non-empty, without `$schema` (providers reject it in strict modes).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fromSchema = (schema: Schema.Schema.AnyNoContext): Record<string, unknown> => {
  const $defs: Record<string, JSONSchema.JsonSchema7> = {}
  const root = JSONSchema.fromAST(schema.ast, {
    definitions: $defs,
    topLevelReferenceStrategy: "skip"
  })
  const out: Record<string, unknown> = { ...root }
  delete out.$schema
  if (Object.keys($defs).length > 0) out.$defs = $defs
  return out
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The features a JSON Schema uses.
 *
 * @internal
 */
export const featuresOf = (jsonSchema: Record<string, unknown>): ReadonlySet<SchemaFeature> => {
  const found = new Set<SchemaFeature>()
  const defs = isRecord(jsonSchema.$defs) ? jsonSchema.$defs : {}
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const n of node) visit(n)
      return
    }
    if (!isRecord(node)) return
    for (const key of ["anyOf", "oneOf", "allOf", "not", "enum", "const", "pattern", "format"] as const) {
      if (key in node) found.add(key)
    }
    if ("minLength" in node || "maxLength" in node) found.add("stringLength")
    if (
      "minimum" in node ||
      "maximum" in node ||
      "exclusiveMinimum" in node ||
      "exclusiveMaximum" in node ||
      "multipleOf" in node
    ) {
      found.add("numberRange")
    }
    if ("minItems" in node || "maxItems" in node) found.add("arrayLength")
    if (node.type === "null" || (Array.isArray(node.type) && node.type.includes("null"))) found.add("nullable")
    const isObject = node.type === "object" || "properties" in node
    if (isObject) {
      if (node.additionalProperties !== false || "patternProperties" in node || "propertyNames" in node) {
        found.add("openObject")
      }
      const props = isRecord(node.properties) ? Object.keys(node.properties) : []
      const required = Array.isArray(node.required) ? node.required : []
      if (props.some((p) => !required.includes(p))) found.add("optionalProperties")
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === "$defs" || key === "enum" || key === "const") continue
      if (key === "properties" && isRecord(value)) {
        for (const v of Object.values(value)) visit(v)
      } else if (typeof value === "object") {
        visit(value)
      }
    }
  }
  visit({ ...jsonSchema, $defs: undefined })
  for (const def of Object.values(defs)) visit(def)
  if (hasRecursiveRef(jsonSchema, defs)) found.add("recursiveRef")
  return found
}

const refsIn = (node: unknown, out: Set<string>): Set<string> => {
  if (Array.isArray(node)) {
    for (const n of node) refsIn(n, out)
  } else if (isRecord(node)) {
    if (typeof node.$ref === "string") out.add(node.$ref.replace(/^#\/\$defs\//, ""))
    for (const [k, v] of Object.entries(node)) if (k !== "$defs") refsIn(v, out)
  }
  return out
}

const hasRecursiveRef = (root: Record<string, unknown>, defs: Record<string, unknown>): boolean => {
  // A definition is recursive when following $refs from it leads back to it.
  const graph = new Map<string, Set<string>>()
  for (const [name, def] of Object.entries(defs)) graph.set(name, refsIn(def, new Set()))
  const rootRefs = refsIn({ ...root, $defs: undefined }, new Set())
  if (rootRefs.has("") || rootRefs.has("#")) return true
  for (const start of graph.keys()) {
    const seen = new Set<string>()
    const stack = [...(graph.get(start) ?? [])]
    while (stack.length > 0) {
      const next = stack.pop()
      if (next === undefined || seen.has(next)) continue
      if (next === start) return true
      seen.add(next)
      for (const r of graph.get(next) ?? []) stack.push(r)
    }
  }
  return false
}
