/**
 * Events of `ModelGateway.stream`: the route chosen for each attempt, deltas as they arrive, the
 * usage, and the final envelope.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ModelResult, Usage } from "./ModelResult.js"
import { TargetRef } from "./ModelTarget.js"
import { RouteDecision } from "./RouteDecision.js"

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
 * Usage of the whole call (every attempt), sent before `Final`.
 *
 * @since 0.1.0
 * @category Models
 */
export class UsageReported extends Schema.TaggedClass<UsageReported>()("UsageReported", { usage: Usage }) {}

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
export type StreamEvent = RouteSelected | TextDelta | ToolCallDelta | PartialObject | UsageReported | Final

/**
 * @since 0.1.0
 * @category Models
 */
export const StreamEvent = Schema.Union(RouteSelected, TextDelta, ToolCallDelta, PartialObject, UsageReported, Final)
