/**
 * The persistence seam of `ToolLedger`: one record per side-effecting tool call, claimed atomically
 * before the tool runs and completed with the tool's encoded result. The memory store lives here;
 * a durable store (a SQL row with a unique key, Redis `SET NX`) implements the same operations,
 * each one round trip.
 *
 * Details
 *
 * - `claim` is atomic per key: of two concurrent claims of one key, exactly one gets `Claimed`.
 * - `complete` is durable before it returns: the ledger hands a tool's result back only after it.
 * - Results are stored in their encoded (JSON) form, so the memory store behaves like a durable one.
 * - Every operation fails with `StoreError` (`store: "ledger"`) when the store cannot answer, and
 *   must bound its own wait (a network store times out its round trip): the ledger fails closed on
 *   it.
 *
 * @since 0.2.0
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { StoreError } from "./Errors.js"

/**
 * The stable idempotency key of one tool call, as stored (built by `ToolLedger.idempotencyKey`).
 *
 * @since 0.1.0
 * @category Models
 */
export const IdempotencyKey = Schema.String.pipe(Schema.brand("@modelgate/core/ToolLedger/IdempotencyKey"))
/** @since 0.1.0 */
export type IdempotencyKey = typeof IdempotencyKey.Type

/**
 * What the ledger knows of one side-effecting call. `started` without `completed` is in doubt.
 *
 * @since 0.1.0
 * @category Models
 */
export class ToolRecord extends Schema.Class<ToolRecord>("@modelgate/core/ToolLedger/ToolRecord")({
  key: IdempotencyKey,
  runId: Schema.String,
  step: Schema.Int,
  index: Schema.Int,
  tool: Schema.String,
  status: Schema.Literal("started", "completed"),
  /** Clock millis the claim was taken. */
  startedAt: Schema.Number,
  completedAt: Schema.optional(Schema.Number),
  /** The result in its encoded (JSON) form; set once completed. */
  result: Schema.optional(Schema.Unknown)
}) {}

/**
 * Result of `claim`: the key was free and is now claimed, or it already had a record.
 *
 * @since 0.2.0
 * @category Models
 */
export type ClaimOutcome = { readonly _tag: "Claimed" } | { readonly _tag: "Existing"; readonly record: ToolRecord }

/**
 * The operations of a tool ledger store.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Service {
  /** Inserts `record` (status `started`) if the key is free, else returns the existing record. */
  readonly claim: (record: ToolRecord) => Effect.Effect<ClaimOutcome, StoreError>
  /** Marks a claimed key completed with its encoded result. Durable before it returns. */
  readonly complete: (key: IdempotencyKey, result: unknown, completedAt: number) => Effect.Effect<void, StoreError>
  /** Drops a `started` claim whose tool definitely did not take effect (a typed failure). */
  readonly release: (key: IdempotencyKey) => Effect.Effect<void, StoreError>
  /** The record of one key, if any. */
  readonly get: (key: IdempotencyKey) => Effect.Effect<Option.Option<ToolRecord>, StoreError>
  /** Every record of a run, in claim order. */
  readonly list: (runId: string) => Effect.Effect<ReadonlyArray<ToolRecord>, StoreError>
}

/**
 * @since 0.2.0
 * @category Context
 */
export class ToolLedgerStore extends Context.Tag("@modelgate/core/ToolLedgerStore")<ToolLedgerStore, Service>() {}

/**
 * A store in this process's memory (records live as long as the process). Every operation is
 * synchronous, hence atomic, and never fails.
 *
 * @since 0.2.0
 * @category Constructors
 */
export const makeMemory: Effect.Effect<Service> = Effect.sync(() => {
  const records = new Map<string, ToolRecord>()
  return ToolLedgerStore.of({
    claim: (record) =>
      Effect.sync((): ClaimOutcome => {
        const existing = records.get(record.key)
        if (existing !== undefined) return { _tag: "Existing", record: existing }
        records.set(record.key, record)
        return { _tag: "Claimed" }
      }),
    complete: (key, result, completedAt) =>
      Effect.sync(() => {
        const r = records.get(key)
        if (r !== undefined) records.set(key, new ToolRecord({ ...r, status: "completed", completedAt, result }))
      }),
    release: (key) =>
      Effect.sync(() => {
        if (records.get(key)?.status === "started") records.delete(key)
      }),
    get: (key) => Effect.sync(() => Option.fromNullable(records.get(key))),
    list: (runId) => Effect.sync(() => [...records.values()].filter((r) => r.runId === runId))
  })
})

/**
 * @since 0.2.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<ToolLedgerStore> = Layer.effect(ToolLedgerStore, makeMemory)
