/**
 * Where every CallRecord goes: exactly one per logical call, success or failure.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, LogLevel, Ref, Schema } from "effect"
import { CallRecord } from "./ModelResult.js"

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  readonly record: (record: CallRecord) => Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class CallRecorder extends Context.Tag("@modelgate/core/CallRecorder")<CallRecorder, Service>() {}

const encode = Schema.encodeSync(CallRecord)

/** Whole milliseconds. */
const ms = (n: number): string => String(Math.round(n))

/** Up to nine decimals (amounts are kept as integer billionths), no exponent, no trailing zeros. */
const amount = (n: number): string => {
  const fixed = n.toFixed(9).replace(/0+$/, "")
  return fixed.endsWith(".") ? fixed.slice(0, -1) : fixed
}

/**
 * The fields of a record's `Info` line, logged as annotations: `workflow`, `outcome`, `error` and
 * `reason` (failures), `target` (the one that answered), `fallback`, `retries`, `degraded`,
 * `attempts`, `latencyMs` (whole), `costUsd`, `callId`. Only names from the configuration, values
 * from closed sets, numbers and the call id: never the tenant, never content.
 *
 * @since 0.2.0
 * @category Formatting
 */
export type Summary = {
  readonly workflow: string
  readonly outcome: CallRecord["outcome"]
  readonly error?: string
  readonly reason?: string
  readonly target?: string
  /** The answer came from a later target of the route, or the call tried one. */
  readonly fallback: boolean
  /** Retries on the same target (after a backoff). */
  readonly retries: number
  readonly degraded: boolean
  readonly attempts: number
  readonly latencyMs: number
  readonly costUsd: number
  readonly callId: string
}

/**
 * The annotations of a record's `Info` line ({@link Summary}).
 *
 * @since 0.2.0
 * @category Formatting
 */
export const summary = (record: CallRecord): Summary => {
  const e = record.evidence
  return {
    workflow: e.workflow,
    outcome: record.outcome,
    ...(record.errorTag !== undefined ? { error: record.errorTag } : {}),
    ...(record.errorReason !== undefined ? { reason: record.errorReason } : {}),
    ...(e.target !== undefined ? { target: e.target } : {}),
    fallback: e.fallbackUsed,
    retries: e.retryCount,
    degraded: e.degraded,
    attempts: e.attempts.length,
    latencyMs: Math.round(e.totalLatencyMs),
    costUsd: e.cost.actual,
    callId: e.callId
  }
}

/**
 * The message of a record's `Info` line: `modelgate call <outcome>`, then what was not a clean call
 * — the error tag, a fallback, retries, a degraded answer, an exhausted retry budget:
 *
 * - `modelgate call success`
 * - `modelgate call success via fallback after 2 retries` (an outage served by the fallback)
 * - `modelgate call degraded (ProviderUnavailable) via fallback`
 * - `modelgate call failed (BudgetExceeded)`
 *
 * @since 0.2.0
 * @category Formatting
 */
export const summaryMessage = (record: CallRecord): string => {
  const e = record.evidence
  let line = `modelgate call ${record.outcome}`
  // A degraded answer stands in for a failure: the record keeps the failure's tag.
  if (record.errorTag !== undefined) line += ` (${record.errorTag})`
  if (e.fallbackUsed) line += " via fallback"
  if (e.retryCount > 0) line += ` after ${e.retryCount} ${e.retryCount === 1 ? "retry" : "retries"}`
  if (e.degraded && record.outcome !== "degraded") line += ", degraded"
  if (e.retryBudgetExhausted) line += ", retry budget exhausted"
  return line
}

/**
 * A record's summary as one line of text, for sinks other than Effect's loggers:
 * `modelgate call workflow=… outcome=… [error=…] [target=…] [fallback=true] [retries=…]
 * [degraded=true] latencyMs=… costUsd=… callId=…` (cost without exponent). Only names from the
 * configuration, values from fixed sets, numbers and the call id: never the tenant, never content.
 * `layerLog` logs {@link summaryMessage} with the fields as annotations instead.
 *
 * @since 0.2.0
 * @category Formatting
 */
export const summaryLine = (record: CallRecord): string => {
  const e = record.evidence
  const error = record.errorTag !== undefined ? ` error=${record.errorTag}` : ""
  const target = e.target !== undefined ? ` target=${e.target}` : ""
  const path = `${e.fallbackUsed ? " fallback=true" : ""}${e.retryCount > 0 ? ` retries=${e.retryCount}` : ""}${e.degraded ? " degraded=true" : ""}`
  return `modelgate call workflow=${e.workflow} outcome=${record.outcome}${error}${target}${path} latencyMs=${ms(e.totalLatencyMs)} costUsd=${amount(e.cost.actual)} callId=${e.callId}`
}

/**
 * Logs each record as one `Info` entry: the message {@link summaryMessage} (outcome, and whether a
 * fallback, retries or a degraded answer were involved) with the fields of {@link summary} as log
 * annotations — structured under `Logger.json` / `Logger.logFmt`, `key=value` pairs on the default
 * logger's one line (under `Logger.pretty`, one line per annotation). When `Debug` is enabled, the
 * full record encoded with its Schema follows as the annotation `callRecord` of a `Debug` entry
 * (`modelgate call record`; encoded only when it will be logged). A CallRecord holds no content;
 * its tenant id appears only at `Debug`.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerLog: Layer.Layer<CallRecorder> = Layer.succeed(
  CallRecorder,
  CallRecorder.of({
    record: (record) =>
      Effect.zipRight(
        Effect.logInfo(summaryMessage(record)).pipe(Effect.annotateLogs(summary(record))),
        Effect.asVoid(
          Effect.whenLogLevel(
            Effect.suspend(() =>
              Effect.logDebug("modelgate call record").pipe(Effect.annotateLogs("callRecord", encode(record)))
            ),
            LogLevel.Debug
          )
        )
      )
  })
)

/**
 * Keeps records in memory, for tests.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Memory extends Service {
  readonly records: Effect.Effect<ReadonlyArray<CallRecord>>
  readonly clear: Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class MemoryRecorder extends Context.Tag("@modelgate/core/CallRecorder/Memory")<MemoryRecorder, Memory>() {}

/**
 * @since 0.1.0
 * @category Constructors
 */
export const makeMemory: Effect.Effect<Memory> = Effect.map(Ref.make<ReadonlyArray<CallRecord>>([]), (ref) => ({
  record: (record) => Ref.update(ref, (all) => [...all, record]),
  records: Ref.get(ref),
  clear: Ref.set(ref, [])
}))

/**
 * An in-memory recorder, provided both as `CallRecorder` and as `MemoryRecorder` (to read records).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<CallRecorder | MemoryRecorder> = Layer.effectContext(
  Effect.map(makeMemory, (memory) => Context.make(MemoryRecorder, memory).pipe(Context.add(CallRecorder, memory)))
)
