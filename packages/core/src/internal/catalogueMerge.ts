/**
 * A catalogue reference resolved under a target in encoded form (`GatewayConfig` decodes targets
 * that name `catalogue: "<id>"` through it).
 */
import { entries, type Id, version } from "../Catalogue.js"

/**
 * The target fields an entry supplies, in encoded (JSON) form: `provider`, `model`,
 * `capabilities`, `pricing` (versioned `Catalogue.version`), `tokenizerSafetyFactor`, and the
 * `catalogue` / `catalogueVersion` it was resolved from.
 */
const targetFields = (id: Id) => {
  const e = entries[id]
  const c = e.capabilities
  return {
    provider: e.provider,
    model: e.model,
    capabilities: {
      vision: c.vision,
      tools: c.tools,
      streaming: c.streaming,
      structuredOutput: c.structuredOutput,
      contextWindow: c.contextWindow,
      maxOutputTokens: c.maxOutputTokens,
      options: c.options
    },
    pricing: { ...e.pricing, pricingVersion: version },
    tokenizerSafetyFactor: e.tokenizerSafetyFactor,
    catalogue: id,
    catalogueVersion: version
  }
}

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * A target in encoded form with the entry `id` merged under it: the target's own fields win,
 * `capabilities` merge key by key, `pricing` and `structuredOutput` are replaced as a whole, and
 * `catalogue` / `catalogueVersion` are set to the entry and this `Catalogue.version`. The result is
 * still to be decoded as a `ModelTarget` (which checks every field).
 */
export const merge = (id: Id, target: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const fields = targetFields(id)
  const own = (key: string): unknown => (Object.hasOwn(target, key) ? target[key] : undefined)
  const capabilities = own("capabilities")
  return {
    ...fields,
    ...target,
    capabilities: isRecord(capabilities)
      ? { ...fields.capabilities, ...capabilities }
      : capabilities === undefined
        ? fields.capabilities
        : capabilities,
    catalogue: id,
    catalogueVersion: version
  }
}
