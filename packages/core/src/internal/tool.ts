/**
 * A tool declared by Schema (`ToolLoop.make`): its ledger entry, argument decoding, and how one
 * call runs (through the ledger when side-effecting) and becomes a tool message.
 */
import { Effect, Either, Option, Schema } from "effect"
import * as ToolLedger from "../ToolLedger.js"
import { callKey, toolDefinition } from "./toolCallKey.js"
import type { Executed, Prepared, Tool, ToolContext, ToolOptions } from "./toolTypes.js"
import { callIdentity } from "./callIdentity.js"
import { issueLines } from "./issues.js"
import * as Loop from "./toolLoop.js"

/** `ToolLoop.make`, with the JSON Schema of the parameters already derived. */
export const make = <const Name extends string, A, I, Res, ResI, E = never, EI = never>(
  options: ToolOptions<Name, A, I, Res, ResI, E, EI, never>,
  jsonSchema: Record<string, unknown>
): Tool<Name, A, I, Res, ResI, E> => {
  if (!Loop.toolName.test(options.name)) throw new Error(`invalid tool name "${options.name}"`)
  const ledgerTool = (options.sideEffecting ? ToolLedger.sideEffecting : ToolLedger.readOnly)({
    name: options.name,
    result: options.result,
    description: options.description,
    parameters: jsonSchema
  })
  const decodeArgs = Schema.decodeUnknownEither(options.parameters, { errors: "all", onExcessProperty: "error" })
  const validateArgs = Schema.validateEither(options.parameters, { errors: "all", onExcessProperty: "error" })
  const encodeResult = Schema.encode(options.result)
  const encodeFailure = options.failure === undefined ? undefined : Schema.encodeOption(options.failure)
  /** The tool message of a typed failure: its tag, and its encoded form when a failure Schema is given. */
  const failedContent = (e: E): Executed => {
    const tag = Loop.errorTagOf(e) ?? "ToolFailure"
    const encoded = encodeFailure === undefined ? Option.none() : encodeFailure(e)
    return {
      content: JSON.stringify({
        error: "tool failed",
        tag,
        ...(Option.isSome(encoded) ? { failure: encoded.value } : {})
      }),
      replayed: false,
      failed: tag
    }
  }
  const encodeArgs = Schema.encodeSync(options.parameters)
  /** A side-effecting call's identity: its declared key, else its canonical encoded arguments. */
  const identityOf = (args: A): string | undefined =>
    options.sideEffecting ? callIdentity(encodeArgs(args), options.idempotencyKey?.(args)) : undefined
  const prepare = (args: A): Prepared => ({
    arguments: args,
    identity: identityOf(args),
    execute: (ref) =>
      Effect.suspend(() => {
        const key = callKey(ledgerTool, {
          runId: ref.runId,
          step: ref.step,
          identity: identityOf(args) ?? "",
          ordinal: ref.index
        })
        const context: ToolContext = {
          runId: ref.runId,
          step: ref.step,
          toolCallId: ref.toolCallId,
          idempotencyKey: options.sideEffecting ? key.id : undefined
        }
        let ran = false
        const work = Effect.suspend(() => {
          ran = true
          return options.handler(args, context)
        })
        const value = options.sideEffecting ? ToolLedger.runOnce(key, work) : work
        // A value the tool's own result Schema cannot encode is a bug of the tool: a defect.
        const done = Effect.flatMap(value, (v) =>
          Effect.map(
            Effect.orDie(encodeResult(v)),
            (encoded): Executed => ({ content: JSON.stringify(encoded) ?? "null", replayed: !ran, failed: undefined })
          )
        )
        // The handler's own failure becomes a tool message; the ledger's fail the loop.
        return Effect.catchIf(
          done,
          (e): e is E => ran && !Loop.isLedgerError(e),
          (e) => Effect.succeed(failedContent(e))
        )
      })
  })
  return {
    name: options.name,
    description: options.description,
    sideEffecting: options.sideEffecting,
    parameters: options.parameters,
    result: options.result,
    handler: options.handler,
    definition: toolDefinition(ledgerTool),
    info: ledgerTool,
    decode: (input) => Either.mapLeft(Either.map(decodeArgs(input), prepare), issueLines),
    validate: (value) => Either.mapLeft(Either.map(validateArgs(value), prepare), issueLines)
  }
}
