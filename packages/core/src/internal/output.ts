/**
 * The workflow's structured output on the wire and back: the request's output format for a target,
 * and the validation of an answer against the workflow's schema. Shared by the pipeline and the
 * shadow runner, so that a shadow answer is judged exactly as a production one.
 */
import { Either } from "effect"
import type { Failure } from "../Errors.js"
import type { CompiledWorkflow } from "../GatewayConfig.js"
import type { ModelTarget } from "../ModelTarget.js"
import type { OutputFormat, ProviderResponse } from "../ProviderAdapter.js"
import { issuesOf } from "./issues.js"

/** The structured-output part of a provider request. */
export const outputFormatOf = (compiled: CompiledWorkflow, target: ModelTarget): OutputFormat | undefined =>
  compiled.jsonSchema === undefined
    ? undefined
    : {
        name: compiled.workflow.name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64),
        jsonSchema: compiled.jsonSchema,
        strict: target.capabilities.structuredOutput.mode === "json_schema_strict"
      }

/** Validates a provider answer against the workflow's output schema. */
export const validateOutput = (
  compiled: CompiledWorkflow,
  target: ModelTarget,
  response: ProviderResponse
): Either.Either<{ readonly value: unknown; readonly valid: boolean | undefined }, Failure> => {
  if (compiled.decode === undefined || response.toolCalls.length > 0) {
    return Either.right({ value: undefined, valid: undefined })
  }
  if (response.finishReason === "length") {
    return Either.left({ _tag: "InvalidOutput", target: target.ref, issues: ["truncated at the output-token limit"] })
  }
  let json: unknown
  try {
    json = JSON.parse(response.text ?? "")
  } catch {
    return Either.left({ _tag: "InvalidOutput", target: target.ref, issues: ["not valid JSON"] })
  }
  return Either.match(compiled.decode(json), {
    onLeft: (e) => Either.left({ _tag: "InvalidOutput", target: target.ref, issues: issuesOf(e) }),
    onRight: (value) => Either.right({ value, valid: true })
  })
}
