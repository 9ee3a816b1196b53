/**
 * The data types of module `ToolLoop` (re-exported there): below both `ToolLoop` and its internal
 * split (`internal/tool`, `internal/toolLoop`), so neither imports `ToolLoop` back.
 */
import type { Effect, Either, Schema } from "effect"
import type { StoreError } from "../Errors.js"
import type { ToolDefinition } from "../ModelCommand.js"
import type * as ToolLedger from "../ToolLedger.js"

/**
 * What a tool's handler knows about the call it serves.
 *
 * @since 0.2.0
 * @category Models
 */
export interface ToolContext {
  readonly runId: string
  readonly step: number
  /** The id the model gave the call. */
  readonly toolCallId: string
  /**
   * The ledger key of a side-effecting call, the same on every pass that asks for the same call
   * (pass it on so the outside system rejects duplicates).
   */
  readonly idempotencyKey: string | undefined
}

/**
 * What the loop sees of a tool (any argument and result types): its name, kind, wire definition,
 * and how to decode and run one call. Made by `ToolLoop.make`.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Any {
  readonly name: string
  readonly description: string
  readonly sideEffecting: boolean
  /** The tool as offered to the model (JSON Schema of the parameters). */
  readonly definition: ToolDefinition
  /** The tool as the ledger knows it. */
  readonly info: ToolLedger.ToolInfo
  /** Decodes arguments (parsed JSON) with the `parameters` Schema: the call, or value-free issues. */
  readonly decode: (input: unknown) => Either.Either<Prepared, ReadonlyArray<string>>
  /** Checks already decoded arguments (a `ToolLoop.Suggestion`'s) against the `parameters` type. */
  readonly validate: (value: unknown) => Either.Either<Prepared, ReadonlyArray<string>>
}

/**
 * One call whose arguments decoded: the decoded arguments and how to run it.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Prepared {
  readonly arguments: unknown
  /** What identifies a side-effecting call in its run (`undefined` for a read-only tool). */
  readonly identity: string | undefined
  /** Runs the handler (through the ledger when side-effecting): the tool message and how it ended. */
  readonly execute: (ref: CallRef) => Effect.Effect<Executed, LedgerError, ToolLedger.ToolLedger>
}

/**
 * Where a tool call sits: run, step, its ordinal among the identical calls of its pass (same tool,
 * same identity; 0 for the first), the model's call id.
 *
 * @since 0.2.0
 * @category Models
 */
export interface CallRef {
  readonly runId: string
  readonly step: number
  readonly index: number
  readonly toolCallId: string
}

/**
 * A tool call that ran: the tool message content (the encoded result as JSON) and whether the
 * ledger replayed a stored result instead of running the handler.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Executed {
  readonly content: string
  readonly replayed: boolean
  /** The tag of the handler's typed failure (sent to the model as a tool error), if it failed. */
  readonly failed: string | undefined
}

/**
 * Errors of the ledger a side-effecting call can fail with.
 *
 * @since 0.2.0
 * @category Errors
 */
export type LedgerError = ToolLedger.ToolReplayRefused | ToolLedger.ToolResultUndecodable | StoreError

/**
 * A tool declared by Schema.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Tool<Name extends string, A, I, Res, ResI, E = never> extends Any {
  readonly name: Name
  readonly parameters: Schema.Schema<A, I>
  readonly result: Schema.Schema<Res, ResI>
  readonly handler: (args: A, context: ToolContext) => Effect.Effect<Res, E>
}

/**
 * What `ToolLoop.make` takes.
 *
 * @since 0.2.0
 * @category Models
 */
export interface ToolOptions<Name extends string, A, I, Res, ResI, E, EI, R> {
  readonly name: Name
  readonly description: string
  /** Decodes the model's arguments; its JSON Schema is offered to the model. */
  readonly parameters: Schema.Schema<A, I>
  /** Encodes the result into the tool message (and the ledger). */
  readonly result: Schema.Schema<Res, ResI>
  /** Encodes a typed failure into the tool message; without it only the failure's `_tag` is sent. */
  readonly failure?: Schema.Schema<E, EI> | undefined
  readonly sideEffecting: boolean
  /**
   * What makes two calls the same effect, for a side-effecting tool (e.g. `(a) => a.ticketId`):
   * calls with the same declared key are one call whatever their other arguments. Without it, a
   * call is identified by its canonical encoded arguments.
   */
  readonly idempotencyKey?: ((args: A) => string) | undefined
  readonly handler: (args: A, context: ToolContext) => Effect.Effect<Res, E, R>
}

/**
 * Options of `ToolLoop.run`.
 *
 * @since 0.2.0
 * @category Models
 */
export interface Options {
  /** Most model calls of one pass (≥ 1). */
  readonly maxSteps: number
  /** Step number of the first model call (default 1); loops sharing a run use distinct ranges. */
  readonly firstStep?: number | undefined
  /** Times the loop starts again from its first step after `AmbiguousOutcome` (default 0). */
  readonly ambiguousRetries?: number | undefined
  /**
   * A retried pass asks for a side-effecting call no earlier pass made while earlier calls are
   * not yet asked again: `"refuse"` (default) fails with `ToolReplayRefused` (`unmatched`),
   * `"run"` runs it.
   */
  readonly onUnmatchedReplay?: "refuse" | "run" | undefined
}
