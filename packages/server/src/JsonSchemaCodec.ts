/**
 * Output schemas of a JSON configuration file, written as JSON Schema, turned into Effect Schemas
 * (what the gateway validates with and renders back to JSON Schema for providers). The subset:
 * `type` `object` (with `properties`, `required`; other properties are optional), `array`
 * (`items`, `minItems`, `maxItems`), `string` (`enum`, `minLength`, `maxLength`, `pattern`),
 * `number`, `integer` (`minimum`, `maximum`), `boolean`, `null`, a `type` list with `"null"`,
 * `enum` of strings and `description`. Anything else is a configuration problem.
 *
 * @since 0.1.0
 */
import { Either, Schema } from "effect"

type Json = Record<string, unknown>

const isRecord = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

const numberOf = (s: Json, key: string): number | undefined =>
  typeof s[key] === "number" ? (s[key] as number) : undefined

const described = (schema: Schema.Schema.AnyNoContext, s: Json): Schema.Schema.AnyNoContext =>
  typeof s.description === "string" ? schema.annotations({ description: s.description }) : schema

const stringSchema = (s: Json): Schema.Schema.AnyNoContext => {
  if (Array.isArray(s.enum) && s.enum.length > 0 && s.enum.every((v) => typeof v === "string"))
    return Schema.Literal(...(s.enum as Array<string>))
  let out: Schema.Schema<string> = Schema.String
  const min = numberOf(s, "minLength")
  const max = numberOf(s, "maxLength")
  if (min !== undefined) out = out.pipe(Schema.minLength(min))
  if (max !== undefined) out = out.pipe(Schema.maxLength(max))
  if (typeof s.pattern === "string") out = out.pipe(Schema.pattern(new RegExp(s.pattern)))
  return out
}

const numberSchema = (s: Json, integer: boolean): Schema.Schema.AnyNoContext => {
  let out: Schema.Schema<number> = integer ? Schema.Int : Schema.Number
  const min = numberOf(s, "minimum")
  const max = numberOf(s, "maximum")
  if (min !== undefined) out = out.pipe(Schema.greaterThanOrEqualTo(min))
  if (max !== undefined) out = out.pipe(Schema.lessThanOrEqualTo(max))
  return out
}

const convert = (s: unknown, path: string, problems: Array<string>, depth: number): Schema.Schema.AnyNoContext => {
  if (depth > 32 || !isRecord(s)) {
    problems.push(`${path} is not a supported JSON Schema`)
    return Schema.Unknown
  }
  if (Array.isArray(s.type)) {
    const types = s.type.filter((t) => t !== "null")
    const inner = convert({ ...s, type: types[0] }, path, problems, depth + 1)
    return types.length === 1 && s.type.includes("null") ? Schema.NullOr(inner) : inner
  }
  if (s.type === undefined && Array.isArray(s.enum)) return described(stringSchema(s), s)
  switch (s.type) {
    case "string":
      return described(stringSchema(s), s)
    case "number":
    case "integer":
      return described(numberSchema(s, s.type === "integer"), s)
    case "boolean":
      return described(Schema.Boolean, s)
    case "null":
      return Schema.Null
    case "array": {
      let out: Schema.Schema<ReadonlyArray<unknown>, ReadonlyArray<unknown>> = Schema.Array(
        convert(s.items ?? {}, `${path}.items`, problems, depth + 1)
      )
      const min = numberOf(s, "minItems")
      const max = numberOf(s, "maxItems")
      if (min !== undefined) out = out.pipe(Schema.minItems(min))
      if (max !== undefined) out = out.pipe(Schema.maxItems(max))
      return described(out, s)
    }
    case "object": {
      const properties = isRecord(s.properties) ? s.properties : {}
      const required = new Set(Array.isArray(s.required) ? s.required.filter((r) => typeof r === "string") : [])
      const fields: Record<string, Schema.Schema.AnyNoContext | Schema.optional<Schema.Schema.AnyNoContext>> = {}
      for (const [name, sub] of Object.entries(properties)) {
        const field = convert(sub, `${path}.properties.${name}`, problems, depth + 1)
        fields[name] = required.has(name) ? field : Schema.optional(field)
      }
      return described(Schema.Struct(fields), s)
    }
    default:
      problems.push(`${path}.type is not supported`)
      return Schema.Unknown
  }
}

/**
 * An Effect Schema of a JSON Schema, or the problems (paths only).
 *
 * @since 0.1.0
 * @category Constructors
 */
export const fromJsonSchema = (
  name: string,
  jsonSchema: unknown
): Either.Either<Schema.Schema.AnyNoContext, ReadonlyArray<string>> => {
  const problems: Array<string> = []
  const schema = convert(jsonSchema, `$.schemas.${name}`, problems, 0)
  return problems.length === 0 ? Either.right(schema) : Either.left(problems)
}
