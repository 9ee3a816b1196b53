/**
 * Where every CallRecord goes: exactly one per logical call, success or failure.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Ref, Schema } from "effect"
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

/**
 * Logs each record as one structured `Info` line (annotation `callRecord`), encoded with its Schema.
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerLog: Layer.Layer<CallRecorder> = Layer.succeed(
  CallRecorder,
  CallRecorder.of({
    record: (record) =>
      Effect.logInfo("modelgate call").pipe(
        Effect.annotateLogs({
          callRecord: encode(record),
          workflow: record.evidence.workflow,
          outcome: record.outcome
        })
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
