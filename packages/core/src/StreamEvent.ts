/**
 * Events of `ModelGateway.stream`: the route chosen for each attempt, the route that serves (at
 * the commit point), deltas and usage updates as they arrive, the usage of the call, and the final
 * envelope.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ModelResult, Usage } from "./ModelResult.js"
import { TargetRef } from "./ModelTarget.js"
import { RouteDecision } from "./RouteDecision.js"

const Count = Schema.Int.pipe(Schema.nonNegative())

/**
 * An attempt starts on `target`. Before the first delta a failed attempt may be followed by another
 * `RouteSelected` (retry or fallback); after it, never.
 *
 * @since 0.1.0
 * @category Models
 */
export class RouteSelected extends Schema.TaggedClass<RouteSelected>()("RouteSelected", {
  target: TargetRef,
  attempt: Schema.Int,
  fallback: Schema.Boolean,
  decision: RouteDecision
}) {}

/**
 * The attempt that serves the stream, sent once, at the commit point: right before its first
 * delta. Every `RouteSelected` before it described an attempt that failed before its first byte
 * (a retry or fallback); this one describes the attempt whose deltas follow. `model` is the pinned
 * model version of the target, `position` its index in the route (0: the first target), `fallback`
 * whether a target before it was passed over, `policyVersion` the workflow's. Not sent for an answer
 * served from the response cache (no attempt is made).
 *
 * @since 0.2.0
 * @category Models
 */
export class RouteCommitted extends Schema.TaggedClass<RouteCommitted>()("RouteCommitted", {
  target: TargetRef,
  model: Schema.String,
  provider: Schema.String,
  position: Count,
  attempt: Schema.Int,
  fallback: Schema.Boolean,
  policyVersion: Schema.String,
  routeId: Schema.optional(Schema.String)
}) {}

/**
 * Usage of the serving attempt so far, with its cost at the target's prices, sent after
 * `RouteCommitted` each time it changes: when the provider reports usage mid-stream (Anthropic
 * `message_start` and `message_delta`, Gemini `usageMetadata` on each chunk) and at the end of
 * the attempt (OpenAI's usage chunk before `[DONE]`, Responses `response.completed`). Cumulative:
 * each update replaces the previous one. `estimated` is `true` only for the last update of a stream
 * whose provider reported no usage: the gateway's own count (input as routed, output as delivered).
 *
 * @since 0.2.0
 * @category Models
 */
export class UsageUpdate extends Schema.TaggedClass<UsageUpdate>()("UsageUpdate", {
  target: TargetRef,
  usage: Usage,
  cost: Schema.Number,
  estimated: Schema.Boolean
}) {}

/**
 * @since 0.1.0
 * @category Models
 */
export class TextDelta extends Schema.TaggedClass<TextDelta>()("TextDelta", { text: Schema.String }) {}

/**
 * @since 0.1.0
 * @category Models
 */
export class ToolCallDelta extends Schema.TaggedClass<ToolCallDelta>()("ToolCallDelta", {
  index: Schema.Int,
  id: Schema.optional(Schema.String),
  name: Schema.optional(Schema.String),
  argumentsDelta: Schema.String
}) {}

/**
 * The best-effort parse of the structured output received so far (workflows with an output schema
 * only), sent after a text delta once the text has grown by an eighth since the last parse. Not
 * validated: a string or array may still be cut short, numbers and booleans appear once complete.
 * Each value extends the previous one; `Final` carries the validated value.
 *
 * @since 0.2.0
 * @category Models
 */
export class PartialObject extends Schema.TaggedClass<PartialObject>()("PartialObject", { value: Schema.Unknown }) {}

/**
 * Usage of the whole call (every attempt), sent before `Final`, with its actual cost (`cost`).
 *
 * @since 0.1.0
 * @category Models
 */
export class UsageReported extends Schema.TaggedClass<UsageReported>()("UsageReported", {
  usage: Usage,
  cost: Schema.optional(Schema.Number)
}) {}

/**
 * The envelope, with the full content and the evidence. Always the last event of a successful stream.
 *
 * @since 0.1.0
 * @category Models
 */
export class Final extends Schema.TaggedClass<Final>()("Final", { result: ModelResult }) {}

/**
 * @since 0.1.0
 * @category Models
 */
export type StreamEvent =
  | RouteSelected
  | RouteCommitted
  | TextDelta
  | ToolCallDelta
  | PartialObject
  | UsageUpdate
  | UsageReported
  | Final

/**
 * @since 0.1.0
 * @category Models
 */
export const StreamEvent = Schema.Union(
  RouteSelected,
  RouteCommitted,
  TextDelta,
  ToolCallDelta,
  PartialObject,
  UsageUpdate,
  UsageReported,
  Final
)
