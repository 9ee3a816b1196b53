/**
 * What the adapters share for sampling and provider options: the allowlisted provider fields added
 * to a body (never replacing a field the adapter set), the refusal of an option a wire format
 * cannot carry, and the value schemas the allowlists use.
 *
 * @internal
 */
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { OptionName, ProviderOptionsAllowlist, RequestOptions } from "@modelgate/core/ModelOptions"
import { ownedFields } from "@modelgate/core/ModelOptions"
import { Schema } from "effect"
import { providerError } from "./classify.js"

/**
 * Adds the fields of `fields` that `allowlist` names to the object `place` gives for each (the body
 * by default), skipping any field the gateway owns or the adapter already set.
 *
 * @internal
 */
export const addProviderOptions = (
  fields: Readonly<Record<string, unknown>> | undefined,
  allowlist: ProviderOptionsAllowlist,
  place: (field: string) => Record<string, unknown>
): void => {
  if (fields === undefined) return
  for (const [field, value] of Object.entries(fields)) {
    if (!Object.hasOwn(allowlist, field) || ownedFields.has(field)) continue
    const into = place(field)
    if (!Object.hasOwn(into, field)) into[field] = value
  }
}

/**
 * The first option set in `options` among `unsupported`, if any: an option the wire format has no
 * field for (a target that lists it in `capabilities.options` is misdeclared).
 *
 * @internal
 */
export const firstSet = (
  options: RequestOptions | undefined,
  unsupported: ReadonlyArray<OptionName>
): OptionName | undefined => {
  if (options === undefined) return undefined
  for (const name of unsupported) if (options[name] !== undefined) return name
  return undefined
}

/**
 * The request cannot be sent as asked: an invalid request, never processed, with a value-free detail.
 *
 * @internal
 */
export const optionRefused = (provider: string, detail: string): ProviderError =>
  providerError({ kind: "invalid_request", processed: "no", detail: `${provider}: ${detail}` })

/**
 * An option the wire format has no field for.
 *
 * @internal
 */
export const unmappable = (provider: string, option: OptionName, api: string): ProviderError =>
  optionRefused(provider, `option ${option} has no ${api} field (remove it from the target's capabilities.options)`)

/** An opaque id: 1 to 128 characters of `[A-Za-z0-9._:-]` (no `/`, so never a URL). @internal */
export const OpaqueId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9._:-]{1,128}$/))

/** OpenAI-style `logit_bias`: token id → bias in −100…100, at most 300 entries. @internal */
export const LogitBias = Schema.Record({
  key: Schema.String.pipe(Schema.pattern(/^\d{1,9}$/)),
  value: Schema.Number.pipe(Schema.finite(), Schema.between(-100, 100))
}).pipe(Schema.filter((bias) => Object.keys(bias).length <= 300))
