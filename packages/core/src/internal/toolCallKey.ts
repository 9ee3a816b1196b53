/**
 * The tool ledger's helpers for `ToolLoop`: a tool's definition as offered to a model, and the
 * keys of calls by what they do (`callIdentity`, then `callIdempotencyKey`).
 */
import { ToolDefinition } from "../ModelCommand.js"
import type { CallKey, Tool, ToolInfo } from "../ToolLedger.js"
import { IdempotencyKey } from "../ToolLedgerStore.js"

/**
 * The tool as offered to a model in a `ModelCommand` (`sideEffecting` set from its kind, so the
 * gateway never retries an ambiguous model call that offers it).
 */
export const toolDefinition = (tool: ToolInfo): ToolDefinition =>
  new ToolDefinition({
    name: tool.name,
    description: tool.description,
    parameters: { ...tool.parameters },
    sideEffecting: tool.kind === "sideEffecting"
  })

/**
 * Which call of a run, by what it does: the tool's identity of the call (from `callIdentity`:
 * hash of its canonical arguments, or of the key the tool declares) and its ordinal among the
 * identical calls of its pass (0 for the first). `step` is where it is asked now (recorded with a
 * first execution, not part of the id).
 */
export interface CallRef {
  readonly runId: string
  readonly step: number
  readonly identity: string
  readonly ordinal: number
}

/**
 * The stable id of a call by what it does: `tool/v2/<runId>/<tool>/<identity>[/<ordinal>]`. The
 * same call gets the same id whatever step or position it is asked at, in any process.
 */
export const callIdempotencyKey = (runId: string, tool: string, identity: string, ordinal = 0): IdempotencyKey => {
  if (!Number.isInteger(ordinal) || ordinal < 0) throw new Error(`ordinal must be an integer ≥ 0, got ${ordinal}`)
  const base = `tool/v2/${encodeURIComponent(runId)}/${encodeURIComponent(tool)}/${encodeURIComponent(identity)}`
  return IdempotencyKey.make(ordinal === 0 ? base : `${base}/${ordinal}`)
}

/**
 * The key of `tool` for the call `ref` (see `callIdempotencyKey`).
 */
export const callKey = <A, I>(tool: Tool<A, I>, ref: CallRef): CallKey<A, I> => ({
  id: callIdempotencyKey(ref.runId, tool.name, ref.identity, ref.ordinal),
  runId: ref.runId,
  step: ref.step,
  index: ref.ordinal,
  tool
})
