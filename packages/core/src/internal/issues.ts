/**
 * Schema issues reported without values: a path (`$.messages.0.content`) and the kind of problem,
 * with what was expected (read from the schema, never from the input). Values are left out because
 * they may be prompt or generated text, or a secret pasted into the wrong field.
 *
 * Also the names no configuration map may use as a key (`__proto__`, `constructor`, `prototype`).
 */
import { Option, ParseResult, Schema, SchemaAST } from "effect"

/** Longest path segment (a record key, a property name) kept in a path; longer ones are cut. */
const maxSegmentLength = 64

/** A path segment, cut to {@link maxSegmentLength} characters (a hostile key cannot bloat a path). */
export const segment = (key: PropertyKey): string => {
  const s = String(key)
  return s.length <= maxSegmentLength ? s : `${s.slice(0, maxSegmentLength)}…`
}

/** `$`-rooted JSON path of an issue, each segment bounded. */
export const jsonPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "$" : `$.${path.map(segment).join(".")}`

/**
 * Path of a configuration problem, the style every startup problem uses: `targets[0].regions[1]`
 * (indices in brackets, keys after dots, each segment bounded).
 */
export const configPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`
    else out += out === "" ? segment(key) : `.${segment(key)}`
  }
  return out === "" ? "$" : out
}

/** At most 20 issues of `error`, as `path: Kind`. */
export const issuesOf = (error: ParseResult.ParseError): Array<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .slice(0, 20)
    .map((i) => `${jsonPath(i.path)}: ${i._tag}`)

// ---------------------------------------------------------------------------------------------
// Value-free issues
// ---------------------------------------------------------------------------------------------

/**
 * One problem of a decoded input, value-free: where, what kind, and for an invalid value what the
 * schema expected (e.g. `an array of at most 32 item(s)`).
 */
export interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly kind: "invalid" | "missing" | "unexpected" | "reserved_key" | "forbidden"
  readonly expected: string | undefined
}

/** Longest `expected` text kept (a large struct's description is cut). */
const maxExpectedLength = 160

const bounded = (s: string) => (s.length <= maxExpectedLength ? s : `${s.slice(0, maxExpectedLength)}…`)

/** What `ast` expects, from the schema's own annotations (never the input). */
const expectedOf = (ast: SchemaAST.AST): string => {
  if (SchemaAST.isRefinement(ast)) {
    return bounded(
      SchemaAST.getDescriptionAnnotation(ast).pipe(
        Option.orElse(() => SchemaAST.getTitleAnnotation(ast)),
        Option.orElse(() => SchemaAST.getIdentifierAnnotation(ast)),
        Option.getOrElse(() => String(ast.from))
      )
    )
  }
  return bounded(String(ast))
}

const isUndefinedMismatch = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type" && SchemaAST.isUndefinedKeyword(issue.ast)

/**
 * The problems of `error` in the order `ParseResult.ArrayFormatter` lists them (at most `max`),
 * with no value of the input. Iterative: a deep issue tree cannot overflow the stack.
 */
export const valueFreeIssues = (error: ParseResult.ParseError, max = 100): Array<Issue> => {
  const out: Array<Issue> = []
  const stack: Array<readonly [ParseResult.ParseIssue, ReadonlyArray<PropertyKey>]> = [[error.issue, []]]
  while (stack.length > 0 && out.length < max) {
    const [issue, path] = stack.pop()!
    switch (issue._tag) {
      case "Type":
        out.push({ path, kind: "invalid", expected: expectedOf(issue.ast) })
        break
      case "Missing":
        out.push({ path, kind: "missing", expected: undefined })
        break
      case "Unexpected": {
        const last = path[path.length - 1]
        const kind = typeof last === "string" && isReservedKey(last) ? "reserved_key" : "unexpected"
        out.push({ path, kind, expected: undefined })
        break
      }
      case "Forbidden":
        out.push({ path, kind: "forbidden", expected: undefined })
        break
      case "Pointer":
        stack.push([issue.issue, path.concat(issue.path)])
        break
      case "Refinement":
      case "Transformation":
        stack.push([issue.issue, path])
        break
      case "Composite": {
        const all = Array.isArray(issue.issues) ? issue.issues : [issue.issues]
        // An optional field is `X | undefined`: once X failed, "expected undefined" adds nothing.
        const issues = all.length > 1 ? all.filter((i) => !isUndefinedMismatch(i)) : all
        for (let i = issues.length - 1; i >= 0; i--) stack.push([issues[i]!, path])
        break
      }
    }
  }
  return out
}

/** The problem of an issue in words, value-free (`is invalid (expected …)`, `is missing`, …). */
export const describeIssue = (issue: Issue): string => {
  switch (issue.kind) {
    case "invalid":
      return `is invalid (expected ${issue.expected ?? "another value"})`
    case "missing":
      return "is missing"
    case "unexpected":
      return "is unexpected"
    case "reserved_key":
      return reservedKeyDetail
    case "forbidden":
      return "cannot be checked"
  }
}

/** Issues of a configuration as `ConfigProblem` fields (`reason` is `RESERVED_KEY` or `INVALID_VALUE`). */
export const configProblemsOf = (
  error: ParseResult.ParseError,
  pathOf: (path: ReadonlyArray<PropertyKey>) => string
): Array<{ readonly path: string; readonly reason: string; readonly detail: string }> =>
  valueFreeIssues(error).map((issue) => ({
    path: pathOf(issue.path),
    reason: issue.kind === "reserved_key" ? "RESERVED_KEY" : "INVALID_VALUE",
    detail: describeIssue(issue)
  }))

// ---------------------------------------------------------------------------------------------
// Reserved keys
// ---------------------------------------------------------------------------------------------

const reservedKeys: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

/** Whether `key` is a name no configuration map may use (it lives on `Object.prototype`). */
export const isReservedKey = (key: string): boolean => reservedKeys.has(key)

/** Detail of a `RESERVED_KEY` problem. */
export const reservedKeyDetail = "is a reserved name (__proto__, constructor and prototype cannot be keys)"

/**
 * A key of a configuration map: every string but `__proto__`, `constructor` and `prototype`. With
 * {@link safeRecord} such a key is reported, never dropped.
 */
export const ConfigKey = Schema.String.pipe(
  Schema.filter((key) => !isReservedKey(key), {
    description: "a key other than __proto__, constructor and prototype"
  })
)

/**
 * A record keyed by {@link ConfigKey} that reports unknown and reserved keys whatever the decoder's
 * options (a `__proto__` key decoded into a record would otherwise become its prototype, silently).
 */
export const safeRecord = <V extends Schema.Schema.All>(value: V) =>
  Schema.Record({ key: ConfigKey, value }).annotations({ parseOptions: { onExcessProperty: "error" } })

/**
 * The reserved keys of `record`: its own reserved keys, plus `__proto__` when its prototype was
 * replaced (what assigning a decoded `__proto__` key does).
 */
export const reservedKeysOf = (record: object | undefined): Array<string> => {
  if (record === undefined || record === null || typeof record !== "object") return []
  const found = Object.keys(record).filter(isReservedKey)
  const proto: unknown = Object.getPrototypeOf(record)
  if (proto !== Object.prototype && proto !== null && !found.includes("__proto__")) found.unshift("__proto__")
  return found
}

// ---------------------------------------------------------------------------------------------
// Untrusted input
// ---------------------------------------------------------------------------------------------

/** At most `max` value-free issues of `error`, one line each: `$.path is invalid (expected …)`. */
export const issueLines = (error: ParseResult.ParseError, max = 20): Array<string> =>
  valueFreeIssues(error, max).map((i) => `${jsonPath(i.path)} ${describeIssue(i)}`)

/** Deepest nesting accepted in untrusted input (tool parameter schemas included). */
export const maxInputDepth = 64

/** Most values (objects, arrays and primitives) accepted in one untrusted command. */
export const maxInputValues = 1_000_000

/**
 * Checks the raw shape of untrusted input before any decoding: only plain objects and arrays,
 * nested at most {@link maxInputDepth} levels, at most {@link maxInputValues} values, no
 * `__proto__` key (decoded into a record it would replace the record's prototype). Iterative, so
 * hostile nesting cannot overflow the stack. Returns the first problem (bounded path segments), or
 * `undefined`.
 */
export const checkShape = (input: unknown): string | undefined => {
  const stack: Array<{ readonly value: unknown; readonly path: string; readonly depth: number }> = [
    { value: input, path: "$", depth: 0 }
  ]
  let count = 0
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!
    if (++count > maxInputValues) return `$: more than ${maxInputValues} values`
    if (typeof value !== "object" || value === null) continue
    if (depth >= maxInputDepth) return `${path}: nested deeper than ${maxInputDepth} levels`
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) stack.push({ value: value[i], path: `${path}.${i}`, depth: depth + 1 })
      continue
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) return `${path}: not a plain object`
    if (proto === null) return `${path}: object without prototype`
    for (const [key, child] of Object.entries(value)) {
      if (key === "__proto__") return `${path}.__proto__: reserved key`
      stack.push({ value: child, path: `${path}.${segment(key)}`, depth: depth + 1 })
    }
  }
  return undefined
}
