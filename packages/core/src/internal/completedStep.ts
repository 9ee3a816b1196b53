/**
 * The schema of `ModelResult.CompletedStep` (a step of a run that completed: its call and how it
 * ended), decoded as a field of `Errors.RunExhausted`; its type stays public in `ModelResult`.
 */
import { Schema } from "effect"
import * as Literals from "./literals.js"

/** The schema of `ModelResult.CompletedStep`. */
export const CompletedStep = Schema.Struct({
  step: Schema.optional(Schema.Int),
  callId: Literals.CallId,
  outcome: Literals.CallOutcome,
  errorTag: Schema.optional(Schema.String),
  /** Actual cost of the call. */
  cost: Schema.Number
}).annotations({ identifier: "@modelgate/core/AgentRun/CompletedStep" })
