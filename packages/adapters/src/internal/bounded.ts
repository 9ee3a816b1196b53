/**
 * Bounds on the strings a provider sends that reach records, spans, logs and errors. A provider
 * (or a proxy in front of it) may echo the prompt into any field, or send megabytes where a short
 * identifier is expected; only values of a bounded identifier shape or of a known enumeration get
 * through:
 *
 * - model versions (`model`, `modelVersion`, `system_fingerprint`) and request ids (`x-request-id`,
 *   `request-id`, body ids) must be identifier-shaped as a whole (letters, digits and `._:/@+=-`,
 *   no spaces), else they are dropped; an identifier longer than its cap is cut there and marked
 *   with {@link truncatedMark};
 * - provider error codes are the known enumeration of their wire format (or an HTTP status), else
 *   `"other"`.
 *
 * @internal
 */

/** Appended to a value cut at its cap. @internal */
export const truncatedMark = "…[truncated]"

/** Longest model name kept in a model version (characters, before {@link truncatedMark}). @internal */
export const maxModelLength = 256

/** Longest system fingerprint kept in a model version (characters, before {@link truncatedMark}). @internal */
export const maxFingerprintLength = 64

/** Longest provider request id kept (characters, before {@link truncatedMark}). @internal */
export const maxRequestIdLength = 128

/** The code recorded for a provider error code outside the known enumeration. @internal */
export const otherCode = "other"

const identifierShape = /^[A-Za-z0-9._:/@+=-]+$/

/**
 * `value` if it is identifier-shaped, cut at `max` characters (and marked) when longer; otherwise
 * `undefined`.
 *
 * @internal
 */
export const identifier = (value: string | null | undefined, max: number): string | undefined => {
  if (value == null || value.length === 0) return undefined
  if (identifierShape.test(value)) return value.length > max ? `${value.slice(0, max)}${truncatedMark}` : value
  // Already bounded (a value passed on twice keeps its mark).
  if (value.length <= max + truncatedMark.length && value.endsWith(truncatedMark)) {
    const head = value.slice(0, -truncatedMark.length)
    return head.length > 0 && identifierShape.test(head) ? value : undefined
  }
  return undefined
}

/**
 * A provider request id, bounded (see {@link identifier}).
 *
 * @internal
 */
export const requestIdOf = (value: string | null | undefined): string | undefined =>
  identifier(value, maxRequestIdLength)

/**
 * The model version a response reports: the model, with the system fingerprint after a `+` when
 * there is one; each part bounded (see {@link identifier}). An unusable model drops both.
 *
 * @internal
 */
export const modelVersionOf = (
  model: string | null | undefined,
  fingerprint?: string | null | undefined
): string | undefined => {
  const m = identifier(model, maxModelLength)
  if (m === undefined) return undefined
  const f = identifier(fingerprint, maxFingerprintLength)
  return f === undefined ? m : `${m}+${f}`
}

const httpStatusCode = /^[1-5]\d\d$/

/**
 * The first of `candidates` that is a known code (one of `known`, or an HTTP status, as vLLM and
 * llama.cpp send in `code`); `"other"` when a provider code was given but none is known;
 * `undefined` when none was given.
 *
 * @internal
 */
export const knownCode = (
  known: ReadonlySet<string>,
  ...candidates: ReadonlyArray<string | undefined>
): string | undefined => {
  let given = false
  for (const candidate of candidates) {
    if (candidate === undefined || candidate === "") continue
    given = true
    if (known.has(candidate) || httpStatusCode.test(candidate)) return candidate
  }
  return given ? otherCode : undefined
}
