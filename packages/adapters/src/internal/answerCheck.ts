/**
 * The checks every adapter makes on a whole answer before calling it a success (providers.md §9):
 * tool-call arguments parse as a JSON object and satisfy the tool's parameter schema; an answer
 * stopped at the output-token limit is not a success when it cannot be used — a tool call cut
 * mid-way, a structured answer, an empty answer in a tool workflow. A truncated text answer stays a
 * success with `finishReason: "length"`.
 *
 * @internal
 */
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { FinishReason } from "@modelgate/core/ModelResult"
import type { ProviderRequest, ProviderStreamEvent } from "@modelgate/core/ProviderAdapter"
import { Either } from "effect"
import type { Meta } from "./classify.js"
import { invalidOutput, isRecord } from "./classify.js"
import { parseJson } from "./http.js"

/** What is checked of an answer. @internal */
export interface Answer {
  readonly text: string | undefined
  readonly toolCalls: ReadonlyArray<{ readonly name: string; readonly arguments: string }>
  readonly finishReason: FinishReason
}

/** The text and tool calls of a stream so far, folded from its deltas (tool calls by index). @internal */
export class AnswerSoFar {
  text = ""
  readonly calls = new Map<number, { name: string; arguments: string }>()
  /** Folds in a text or tool-call delta; other events change nothing. */
  add(event: ProviderStreamEvent): void {
    if (event._tag === "TextDelta") this.text += event.text
    else if (event._tag === "ToolCallDelta") {
      const call = this.calls.get(event.index) ?? { name: "", arguments: "" }
      if (call.name === "" && event.name) call.name = event.name
      call.arguments += event.argumentsDelta
      this.calls.set(event.index, call)
    }
  }
}

const typeMatches = (type: unknown, value: unknown): boolean => {
  if (Array.isArray(type)) return type.some((t) => typeMatches(t, value))
  switch (type) {
    case "object":
      return isRecord(value)
    case "array":
      return Array.isArray(value)
    case "string":
      return typeof value === "string"
    case "integer":
      return typeof value === "number" && Number.isInteger(value)
    case "number":
      return typeof value === "number"
    case "boolean":
      return typeof value === "boolean"
    case "null":
      return value === null
    default:
      return true
  }
}

/**
 * The first path where `value` breaks `schema`, for the JSON Schema keywords a tool's parameters
 * use (`type`, `enum`, `const`, `required`, `properties`, `additionalProperties: false`, `items`);
 * other keywords are not checked. `undefined` when it holds.
 *
 * @internal
 */
export const schemaProblem = (schema: unknown, value: unknown, path = "$", depth = 0): string | undefined => {
  if (!isRecord(schema) || depth > 32) return undefined
  if (schema.type !== undefined && !typeMatches(schema.type, value))
    return `${path}: not of type ${String(schema.type)}`
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => JSON.stringify(option) === JSON.stringify(value)))
    return `${path}: not one of the allowed values`
  if ("const" in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) return `${path}: not the constant`
  if (isRecord(value)) {
    const properties = isRecord(schema.properties) ? schema.properties : {}
    if (Array.isArray(schema.required)) {
      for (const key of schema.required) {
        if (typeof key === "string" && !(key in value)) return `${path}.${key}: missing`
      }
    }
    for (const [key, child] of Object.entries(value)) {
      if (key in properties) {
        const problem = schemaProblem(properties[key], child, `${path}.${key}`, depth + 1)
        if (problem !== undefined) return problem
      } else if (schema.additionalProperties === false) return `${path}.${key}: not allowed`
    }
  }
  if (Array.isArray(value) && isRecord(schema.items)) {
    for (const [i, item] of value.entries()) {
      const problem = schemaProblem(schema.items, item, `${path}[${i}]`, depth + 1)
      if (problem !== undefined) return problem
    }
  }
  return undefined
}

/**
 * Why an answer cannot be a success for `request`, as an `invalid_output` error; `undefined` when
 * it can. Details are content-free: no tool names, keys or values from the answer.
 *
 * @internal
 */
export const checkAnswer = (
  provider: string,
  request: ProviderRequest,
  answer: Answer,
  meta: Meta,
  usage: Parameters<typeof invalidOutput>[3]
): ProviderError | undefined => {
  const fail = (what: string) => invalidOutput(provider, what, meta, usage)
  const length = answer.finishReason === "length"
  if (length && answer.toolCalls.length > 0) return fail("stopped at the output-token limit inside a tool call")
  if (length && request.output !== undefined) return fail("structured answer stopped at the output-token limit")
  if (length && request.tools.length > 0 && !answer.text) return fail("empty answer at the output-token limit")
  for (const call of answer.toolCalls) {
    const parsed = parseJson(call.arguments === "" ? "{}" : call.arguments)
    if (Either.isLeft(parsed) || !isRecord(parsed.right)) return fail("tool-call arguments are not a JSON object")
    const tool = request.tools.find((t) => t.name === call.name)
    if (tool !== undefined && schemaProblem(tool.parameters, parsed.right) !== undefined)
      return fail("tool-call arguments do not match the tool's parameter schema")
  }
  return undefined
}
