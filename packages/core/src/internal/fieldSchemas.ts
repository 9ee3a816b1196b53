/**
 * Field schemas shared by configuration and commands (targets, workflows, health, embeddings,
 * quality signals): a bounded duration written as milliseconds, and a bounded name. Below
 * `ModelTarget` and the modules that use them, so that the internal sub-schemas of a target
 * (`targetSchemas`) need not import `ModelTarget` back.
 */
import { Duration, Schema } from "effect"

/**
 * Longest duration any configuration field or command accepts: 24 hours. Timeouts, retry delays,
 * breaker cool-downs and health windows are finite and at most this long (`1e309`, which
 * `JSON.parse` reads as `Infinity`, is refused).
 */
export const maxDuration: Duration.Duration = Duration.hours(24)

const maxDurationMillis = Duration.toMillis(maxDuration)

/**
 * A duration in configuration, written as milliseconds: finite, between 0 and {@link maxDuration}.
 * Checked on both sides, so a class built in code refuses `Duration.infinity` too.
 */
export const Millis = Schema.transform(
  Schema.Number.pipe(
    Schema.finite(),
    Schema.between(0, maxDurationMillis, { description: `milliseconds between 0 and ${maxDurationMillis} (24 h)` })
  ),
  Schema.DurationFromSelf.pipe(
    Schema.lessThanOrEqualToDuration(maxDuration, {
      description: "a finite duration of at most 24 h",
      arbitrary: () => (fc) => fc.integer({ min: 0, max: maxDurationMillis }).map(Duration.millis)
    })
  ),
  { strict: true, decode: (ms) => Duration.millis(ms), encode: (d) => Duration.toMillis(d) }
)

/**
 * Longest name or version string in configuration (model id, prompt id, schema or handler name,
 * price-list version).
 */
const maxNameLength = 200

/**
 * A name or version in configuration: trimmed, 1 to 200 characters.
 */
export const Name = Schema.NonEmptyTrimmedString.pipe(Schema.maxLength(maxNameLength))
