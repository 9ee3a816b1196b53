/**
 * Where every CallRecord goes: exactly one per logical call, success or failure.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, LogLevel, Ref, Schema } from "effect"
import { summary, summaryMessage } from "./internal/callSummary.js"
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
 * A record's summary as one line of text, for sinks other than Effect's loggers:
 * `modelgate call workflow=… outcome=… [error=…] [target=…] [fallback=true] [retries=…]
 * [degraded=true] latencyMs=… costUsd=… callId=…` (cost without exponent). Only names from the
 * configuration, values from fixed sets, numbers and the call id: never the tenant, never content.
 * `layerLog` logs a short message (`modelgate call success via fallback`) with the fields as annotations instead.
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
 * Logs each record as one `Info` entry: a message (`modelgate call <outcome>`, and whether a
 * fallback, retries or a degraded answer were involved) with the fields of its summary as log
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
