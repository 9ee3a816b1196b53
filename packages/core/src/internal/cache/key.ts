/**
 * The response cache's one key function. A key is a SHA-256 digest over a compact canonical encoding of
 * everything that decides an answer: the scope (which, for `tenant`, cannot be made without the
 * tenant), the workflow, its policy, prompt and schema versions, the sampling options, and the
 * messages and tools. The visible key id is a 12-hex-digit prefix of the digest: no content.
 *
 * @internal
 */
import * as crypto from "node:crypto"

/** Where a cached answer may be served: to its tenant only, or to every tenant. */
export type Scope = { readonly _tag: "Tenant"; readonly tenant: string } | { readonly _tag: "Global" }

/** The tenant scope: the only way to make one is from a tenant id. */
export const tenantScope = (tenant: string): Scope => ({ _tag: "Tenant", tenant })

/** The global scope (only for workflows whose configuration allows it; checked at startup). */
export const globalScope: Scope = { _tag: "Global" }

/** What decides an answer. */
export interface KeyInput {
  readonly scope: Scope
  readonly workflow: string
  readonly policyVersion: string
  readonly promptVersion: string
  readonly schemaVersion: string | undefined
  /** Sampling and output options (temperature, top-p, max output tokens, tool choice…). */
  readonly sampling: unknown
  readonly messages: unknown
  readonly tools: unknown
}

/** A key: the digest the store is addressed by, and its short visible id. */
export interface Key {
  readonly digest: string
  readonly id: string
}

/**
 * A compact canonical encoding: object keys sorted, `undefined` members left out (so that two equal
 * values encode alike whatever their key order), every string and key prefixed with its length
 * and every array with its size (so that no two different values encode alike, with no escaping
 * to do). It is only hashed, never parsed.
 */
export const encode = (value: unknown): string => {
  switch (typeof value) {
    case "string":
      return `s${value.length}:${value}`
    case "number":
      return `n${value};`
    case "boolean":
      return value ? "t" : "f"
    case "bigint":
      return `b${value};`
    case "object":
      return value === null ? "z" : Array.isArray(value) ? encodeArray(value) : encodeObject(value)
    default:
      // `undefined` (an array member), functions and symbols: what JSON would write as `null`.
      return "z"
  }
}

const encodeArray = (value: ReadonlyArray<unknown>): string => {
  let out = `a${value.length}[`
  for (let i = 0; i < value.length; i++) out += encode(value[i])
  return `${out}]`
}

const encodeObject = (value: object): string => {
  // Own enumerable keys in code-unit order; `undefined` members left out.
  const keys = Object.keys(value)
  if (keys.length > 1) keys.sort()
  let out = "{"
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!
    const v: unknown = Reflect.get(value, k)
    if (v !== undefined) out += `${k.length}:${k}${encode(v)}`
  }
  return `${out}}`
}

/** SHA-256 in hex: the one-shot `crypto.hash` where Node has it (20.12+), else a `Hash` object. */
const sha256 = (text: string): string =>
  typeof crypto.hash === "function"
    ? crypto.hash("sha256", text, "hex")
    : crypto.createHash("sha256").update(text).digest("hex")

/** The key of `input`. */
export const keyOf = (input: KeyInput): Key => {
  const scope = input.scope._tag === "Tenant" ? `tenant${encode(input.scope.tenant)}` : "global"
  const digest = sha256(
    `modelgate.cache.v2|${scope}|${encode(input.workflow)}${encode(input.policyVersion)}${encode(input.promptVersion)}` +
      `${encode(input.schemaVersion)}${encode(input.sampling)}${encode(input.messages)}${encode(input.tools)}`
  )
  return { digest, id: digest.slice(0, 12) }
}
