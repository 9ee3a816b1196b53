/**
 * Tool steps in agent runs: the gateway retries model calls, never tool executions. The ledger runs
 * a side-effecting tool at most once per idempotency key, persists its result before handing it
 * back, and replays the stored result when the call is asked again (e.g. after a model call timed
 * out once the tool had already run). The tool loop keys a call by what it does
 * ({@link callKey}: run id, tool, {@link callIdentity} of its canonical arguments or declared key,
 * ordinal among identical calls), so a replay finds it at any step or position; {@link key} keys a
 * call by where it sits (run id, step, tool, index) for callers that number their own calls.
 *
 * Details
 *
 * - Tools are declared `readOnly` (run every time, safe to repeat) or `sideEffecting` (through the
 *   ledger).
 * - `runOnce(key, effect)`: claims the key atomically, runs the effect, stores its encoded result,
 *   then returns. A completed key replays its stored result without running anything. A key that
 *   was claimed and never completed (the holder crashed, was interrupted or died mid-tool) is *in
 *   doubt*: the effect may have happened, so it is refused with {@link ToolReplayRefused} rather
 *   than run a second time. A typed failure of the tool means "not done": the claim is dropped and
 *   a later attempt may run it.
 * - `checkReplay(keys)`: before replaying a step whose transcript holds side-effecting calls,
 *   refuses (typed) unless every one of them has a completed-effect record.
 * - The store is the `ToolLedgerStore` seam (module `ToolLedgerStore`): memory now; a durable
 *   store (SQL row with a unique key, Redis `SET NX`) later with the same atomic `claim`. Results
 *   are stored in their encoded (JSON) form through the tool's result Schema, so the memory store
 *   behaves like a durable one.
 *
 * What a store error does to a call (fail closed, `StoreError` with `store: "ledger"`)
 *
 * - The claim cannot be recorded: `runOnce` fails with `StoreError` and the tool does not run.
 * - The tool ran but its result cannot be stored: `runOnce` fails with `StoreError` (a result is
 *   handed back only once stored). The claim stays `started`, so the key is in doubt and the tool
 *   is never run again for it.
 * - The tool failed (typed) and its claim cannot be dropped: `runOnce` fails with the tool's own
 *   error and the release failure is logged (tool and operation only). The key stays in doubt:
 *   a retry is refused rather than run twice.
 * - `checkReplay`, `record` and `records` fail with `StoreError` when the store cannot answer.
 *
 * @example
 * ```ts
 * const createTask = ToolLedger.sideEffecting({ name: "create_follow_up_task", result: Task })
 * const task = yield* ToolLedger.runOnce(ToolLedger.key(createTask, { runId, step: 1 }), tasks.create(args))
 * ```
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Exit, Layer, type Option, Schema } from "effect"
import type { StoreError } from "./Errors.js"
import * as Store from "./ToolLedgerStore.js"
import { type IdempotencyKey, ToolRecord } from "./ToolLedgerStore.js"

// ---------------------------------------------------------------------------------------------
// Tools and keys
// ---------------------------------------------------------------------------------------------

/**
 * `readOnly`: safe to repeat. `sideEffecting`: changes the world, runs at most once per key.
 *
 * @since 0.1.0
 * @category Models
 */
const ToolKind = Schema.Literal("readOnly", "sideEffecting")
/** @since 0.1.0 */
export type ToolKind = typeof ToolKind.Type

/**
 * A tool as the ledger knows it: its name, its kind and the Schema its result is stored with.
 *
 * @since 0.1.0
 * @category Models
 */
export interface Tool<A, I = A> {
  readonly name: string
  readonly kind: ToolKind
  /** Encodes the result for the store and decodes it on replay. */
  readonly result: Schema.Schema<A, I>
  readonly description: string
  /** JSON Schema of the arguments, as offered to the model. */
  readonly parameters: Readonly<Record<string, unknown>>
}

const toolName = /^[A-Za-z0-9_-]{1,64}$/

const makeTool =
  (kind: ToolKind) =>
  <A, I>(options: {
    readonly name: string
    readonly result: Schema.Schema<A, I>
    readonly description?: string | undefined
    readonly parameters?: Readonly<Record<string, unknown>> | undefined
  }): Tool<A, I> => {
    if (!toolName.test(options.name)) throw new Error(`invalid tool name "${options.name}"`)
    return {
      name: options.name,
      kind,
      result: options.result,
      description: options.description ?? "",
      parameters: options.parameters ?? { type: "object", properties: {} }
    }
  }

/**
 * A tool that only reads: retried freely, never recorded.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const readOnly = makeTool("readOnly")

/**
 * A tool that changes the world: executed through the ledger at most once per key.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const sideEffecting = makeTool("sideEffecting")

/**
 * What a tool's definition and {@link Service.checkReplay} need of a tool (any result type).
 *
 * @since 0.1.0
 * @category Models
 */
export interface ToolInfo {
  readonly name: string
  readonly kind: ToolKind
  readonly description: string
  readonly parameters: Readonly<Record<string, unknown>>
}

/**
 * Where a tool call sits in an agent run.
 *
 * @since 0.1.0
 * @category Models
 */
export interface StepRef {
  readonly runId: string
  readonly step: number
  /** Which call of this tool within the step, when a step calls it more than once. Default 0. */
  readonly index?: number | undefined
}

/**
 * A call key of any result type (what {@link Service.checkReplay} reads).
 *
 * @since 0.1.0
 * @category Models
 */
export interface KeyInfo {
  readonly id: IdempotencyKey
  readonly runId: string
  readonly step: number
  readonly tool: ToolInfo
}

/**
 * One tool call's key: the stable id plus the tool (for its kind and result Schema).
 *
 * @since 0.1.0
 * @category Models
 */
export interface CallKey<A, I = A> {
  readonly id: IdempotencyKey
  readonly runId: string
  readonly step: number
  readonly index: number
  readonly tool: Tool<A, I>
}

/**
 * The stable id of a call: `tool/v1/<runId>/<step>/<tool>[/<index>]`, the run id URI-encoded so
 * that no two (run, step, tool, index) tuples share an id. The same inputs always give the same id,
 * in any process.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const idempotencyKey = (runId: string, step: number, tool: string, index = 0): IdempotencyKey => {
  if (!Number.isInteger(step) || step < 0) throw new Error(`step must be an integer ≥ 0, got ${step}`)
  if (!Number.isInteger(index) || index < 0) throw new Error(`index must be an integer ≥ 0, got ${index}`)
  const base = `tool/v1/${encodeURIComponent(runId)}/${step}/${encodeURIComponent(tool)}`
  return Store.IdempotencyKey.make(index === 0 ? base : `${base}/${index}`)
}

/**
 * The key of `tool` at `ref`.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const key = <A, I>(tool: Tool<A, I>, ref: StepRef): CallKey<A, I> => ({
  id: idempotencyKey(ref.runId, ref.step, tool.name, ref.index ?? 0),
  runId: ref.runId,
  step: ref.step,
  index: ref.index ?? 0,
  tool
})

// ---------------------------------------------------------------------------------------------
// Records and errors
// ---------------------------------------------------------------------------------------------

/**
 * A step (or one call) may not be replayed: a side-effecting call has no completed-effect record.
 *
 * - `missing`: the ledger never saw the call, so nothing proves whether it ran.
 * - `in_doubt`: the call was started and never completed (crash, interruption, defect); it may
 *   have happened. Resolve by hand (check the outside system), then record or forget it.
 * - `unmatched`: a replayed pass of `ToolLoop.run` asks for a side-effecting call that no earlier
 *   pass made while some call an earlier pass made is not yet asked again: the model re-planned,
 *   and the new call may duplicate the old one's effect (`ToolLoop.Options.onUnmatchedReplay`).
 *
 * @since 0.1.0
 * @category Errors
 */
export class ToolReplayRefused extends Schema.TaggedError<ToolReplayRefused>()("ToolReplayRefused", {
  key: Store.IdempotencyKey,
  runId: Schema.String,
  step: Schema.Int,
  tool: Schema.String,
  reason: Schema.Literal("missing", "in_doubt", "unmatched")
}) {
  override get message(): string {
    return `refusing to replay ${this.tool} at run ${this.runId} step ${this.step}: ${
      this.reason === "missing"
        ? "no record of its effect"
        : this.reason === "in_doubt"
          ? "started but never completed, its effect is in doubt"
          : "a replayed pass asks for a side-effecting call no earlier pass made, while earlier calls are unmatched"
    }`
  }
}

/**
 * A stored result no longer decodes with the tool's result Schema (it changed incompatibly).
 *
 * @since 0.1.0
 * @category Errors
 */
export class ToolResultUndecodable extends Schema.TaggedError<ToolResultUndecodable>()("ToolResultUndecodable", {
  key: Store.IdempotencyKey,
  tool: Schema.String,
  detail: Schema.String
}) {}

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/**
 * @since 0.1.0
 * @category Models
 */
export interface Service {
  /**
   * Runs a side-effecting call at most once per key: the first caller runs `effect` and its encoded
   * result is stored before it is returned; later callers get the stored result. Read-only tools
   * run `effect` every time. Fails with `StoreError` when the claim or the result cannot be
   * recorded (see the module's notes on store errors).
   */
  readonly runOnce: <A, I, E, R>(
    key: CallKey<A, I>,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | ToolReplayRefused | ToolResultUndecodable | StoreError, R>
  /**
   * Before replaying a step: succeeds with the completed records of its side-effecting calls, or
   * refuses when one of them has no completed-effect record. Read-only calls are not checked.
   */
  readonly checkReplay: (
    keys: ReadonlyArray<KeyInfo>
  ) => Effect.Effect<ReadonlyArray<ToolRecord>, ToolReplayRefused | StoreError>
  /** The stored record of one call, if any. */
  readonly record: (key: IdempotencyKey) => Effect.Effect<Option.Option<ToolRecord>, StoreError>
  /** Every record of a run. */
  readonly records: (runId: string) => Effect.Effect<ReadonlyArray<ToolRecord>, StoreError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class ToolLedger extends Context.Tag("@modelgate/core/ToolLedger")<ToolLedger, Service>() {}

const refused = (key: KeyInfo, reason: "missing" | "in_doubt") =>
  new ToolReplayRefused({ key: key.id, runId: key.runId, step: key.step, tool: key.tool.name, reason })

/**
 * The ledger over the `ToolLedgerStore` in the context.
 *
 * @since 0.1.0
 * @category Constructors
 */
export const make: Effect.Effect<Service, never, Store.ToolLedgerStore> = Effect.map(Store.ToolLedgerStore, (store) => {
  const replay = <A, I>(key: CallKey<A, I>, record: ToolRecord) =>
    Schema.decodeUnknown(key.tool.result)(record.result).pipe(
      Effect.mapError(
        (e) => new ToolResultUndecodable({ key: key.id, tool: key.tool.name, detail: e.message.slice(0, 500) })
      )
    )

  const runOnce = <A, I, E, R>(
    key: CallKey<A, I>,
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E | ToolReplayRefused | ToolResultUndecodable | StoreError, R> => {
    if (key.tool.kind === "readOnly") return effect
    const encode = Schema.encode(key.tool.result)
    // The claim, the tool and the write of its result form one uninterruptible unit except for the
    // tool itself: once the tool has returned, its result is stored even if the caller is interrupted.
    return Effect.uninterruptibleMask((restore) =>
      Effect.gen(function* () {
        const startedAt = yield* Clock.currentTimeMillis
        // Fail closed: a claim that cannot be recorded fails the call before the tool runs.
        const claim = yield* store.claim(
          new ToolRecord({
            key: key.id,
            runId: key.runId,
            step: key.step,
            index: key.index,
            tool: key.tool.name,
            status: "started",
            startedAt
          })
        )
        if (claim._tag === "Existing") {
          if (claim.record.status === "completed") return yield* replay(key, claim.record)
          return yield* refused(key, "in_doubt")
        }
        const exit = yield* Effect.exit(restore(effect))
        if (Exit.isSuccess(exit)) {
          const encoded = yield* Effect.orDie(encode(exit.value))
          // A result that cannot be stored is not handed back; the claim stays and the key is in doubt.
          yield* store.complete(key.id, encoded, yield* Clock.currentTimeMillis)
          return exit.value
        }
        // A typed failure means the tool did not take effect; a defect or an interruption may have
        // happened after it did, so the claim stays and the call is in doubt.
        if (exit.cause._tag === "Fail") {
          // If the claim cannot be dropped the key stays in doubt (refused, never run twice); the
          // caller still gets the tool's own failure.
          yield* Effect.catchAll(store.release(key.id), () =>
            Effect.annotateLogs(Effect.logWarning("tool ledger could not drop the claim of a failed tool"), {
              tool: key.tool.name,
              operation: "release"
            })
          )
        }
        return yield* exit
      })
    )
  }

  const checkReplay = (keys: ReadonlyArray<KeyInfo>) =>
    Effect.forEach(
      keys.filter((k) => k.tool.kind === "sideEffecting"),
      (k) =>
        Effect.flatMap(
          store.get(k.id),
          (found): Effect.Effect<ToolRecord, ToolReplayRefused> =>
            found._tag === "None"
              ? Effect.fail(refused(k, "missing"))
              : found.value.status === "completed"
                ? Effect.succeed(found.value)
                : Effect.fail(refused(k, "in_doubt"))
        )
    )

  return ToolLedger.of({ runOnce, checkReplay, record: store.get, records: store.list })
})

/**
 * The ledger over the `ToolLedgerStore` in the context (in memory: {@link layerMemory}).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layer: Layer.Layer<ToolLedger, never, Store.ToolLedgerStore> = Layer.effect(ToolLedger, make)

/**
 * The ledger in this process's memory (over `ToolLedgerStore.layerMemory`).
 *
 * @since 0.1.0
 * @category Layers
 */
export const layerMemory: Layer.Layer<ToolLedger> = Layer.provide(layer, Store.layerMemory)

/**
 * Runs `effect` through the ledger in the context (see {@link Service.runOnce}).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const runOnce = <A, I, E, R>(
  key: CallKey<A, I>,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | ToolReplayRefused | ToolResultUndecodable | StoreError, R | ToolLedger> =>
  Effect.flatMap(ToolLedger, (ledger) => ledger.runOnce(key, effect))

/**
 * Checks a step before replaying it with the ledger in the context (see {@link Service.checkReplay}).
 *
 * @since 0.1.0
 * @category Accessors
 */
export const checkReplay = (
  keys: ReadonlyArray<KeyInfo>
): Effect.Effect<ReadonlyArray<ToolRecord>, ToolReplayRefused | StoreError, ToolLedger> =>
  Effect.flatMap(ToolLedger, (ledger) => ledger.checkReplay(keys))
