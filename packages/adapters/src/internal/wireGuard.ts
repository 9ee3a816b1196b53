/**
 * Type guards compiled from the adapters' wire schemas: they accept exactly what decoding the
 * schema from `unknown` accepts, without the parser's per-call allocations (issues, `Either`s, the
 * output copy). The answer's own value is then read as the schema's type: the wire schemas have no
 * transformations, and the readers only read the fields the schema names.
 *
 * Compiled: structs (no index signatures), arrays, unions, literals (`null` included), `string`,
 * `number`, `boolean`, `undefined`, `unknown`. A schema with anything else is checked by decoding it.
 *
 * @internal
 */
import { Either, Schema, type SchemaAST } from "effect"

type Check = (input: unknown) => boolean

const always: Check = () => true
const isString: Check = (input) => typeof input === "string"
const isNumber: Check = (input) => typeof input === "number"
const isBoolean: Check = (input) => typeof input === "boolean"
const isUndefined: Check = (input) => input === undefined
/** What an empty struct accepts (as `Schema.Struct({})` does). */
const isNotNullable: Check = (input) => input !== null && input !== undefined
const isRecord = (input: unknown): input is Readonly<Record<string, unknown>> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

interface Property {
  readonly name: string
  readonly optional: boolean
  readonly check: Check
}

/** A struct's check: a non-array object; an absent optional key is skipped, an absent required one is `undefined`. */
const struct =
  (properties: ReadonlyArray<Property>): Check =>
  (input) => {
    if (!isRecord(input)) return false
    for (const property of properties) {
      if (Object.hasOwn(input, property.name)) {
        if (!property.check(input[property.name])) return false
      } else if (!property.optional && !property.check(undefined)) {
        return false
      }
    }
    return true
  }

const union =
  (members: ReadonlyArray<Check>): Check =>
  (input) => {
    for (const member of members) if (member(input)) return true
    return false
  }

const array =
  (item: Check): Check =>
  (input) => {
    if (!Array.isArray(input)) return false
    for (const element of input) if (!item(element)) return false
    return true
  }

const all = (checks: ReadonlyArray<Check | undefined>): ReadonlyArray<Check> | undefined => {
  const out: Array<Check> = []
  for (const check of checks) {
    if (check === undefined) return undefined
    out.push(check)
  }
  return out
}

/** The check of `ast`, or `undefined` when it has a node this compiler does not know. */
const compile = (ast: SchemaAST.AST): Check | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return isString
    case "NumberKeyword":
      return isNumber
    case "BooleanKeyword":
      return isBoolean
    case "UndefinedKeyword":
      return isUndefined
    case "UnknownKeyword":
    case "AnyKeyword":
      return always
    case "Literal": {
      const literal = ast.literal
      return (input) => input === literal
    }
    case "Union": {
      const members = all(ast.types.map(compile))
      return members === undefined ? undefined : union(members)
    }
    case "TupleType": {
      const rest = ast.rest[0]
      if (ast.elements.length > 0 || ast.rest.length !== 1 || rest === undefined) return undefined
      const item = compile(rest.type)
      return item === undefined ? undefined : array(item)
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length > 0) return undefined
      if (ast.propertySignatures.length === 0) return isNotNullable
      const properties: Array<Property> = []
      for (const signature of ast.propertySignatures) {
        const check = compile(signature.type)
        if (check === undefined || typeof signature.name !== "string") return undefined
        properties.push({ name: signature.name, optional: signature.isOptional, check })
      }
      return struct(properties)
    }
    default:
      return undefined
  }
}

/**
 * Whether `schema` compiles to a guard (else {@link guard} decodes with it).
 *
 * @internal
 */
export const compiles = <A>(schema: Schema.Schema<A, A>): boolean => compile(schema.ast) !== undefined

/**
 * The guard of a wire schema: `true` exactly when `Schema.decodeUnknownEither(schema)` succeeds.
 *
 * @internal
 */
export const guard = <A>(schema: Schema.Schema<A, A>): ((input: unknown) => input is A) => {
  const check = compile(schema.ast)
  if (check !== undefined) return (input): input is A => check(input)
  const decode = Schema.decodeUnknownEither(schema)
  return (input): input is A => Either.isRight(decode(input))
}
