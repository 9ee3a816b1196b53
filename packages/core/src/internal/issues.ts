/**
 * Schema issues reported without values: a path (`$.messages.0.content`) and the kind of problem.
 * Values are left out because they may be prompt or generated text.
 */
import { ParseResult } from "effect"

/** `$`-rooted JSON path of an issue. */
export const jsonPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "$" : `$.${path.map(String).join(".")}`

/** At most 20 issues of `error`, as `path: Kind`. */
export const issuesOf = (error: ParseResult.ParseError): Array<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .slice(0, 20)
    .map((i) => `${jsonPath(i.path)}: ${i._tag}`)
