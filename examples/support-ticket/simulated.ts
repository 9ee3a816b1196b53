/**
 * The demo's simulated OpenAI endpoints (the canary and scored-routing scenes): their targets (EU,
 * internal data, strict JSON schema, one attempt), their answers (JSON text, stop, the usage given,
 * the target's model as the version); they do not stream.
 */
import { Usage } from "@modelgate/core/ModelResult"
import type { ProviderRequest, ProviderResponse } from "@modelgate/core/ProviderAdapter"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { Stream } from "effect"

/** A simulated endpoint's answer to `request`. */
export const answer = (
  request: ProviderRequest,
  text: string,
  usage: { readonly inputTokens: number; readonly outputTokens: number }
): ProviderResponse => ({
  text,
  toolCalls: [],
  finishReason: "stop",
  refusal: false,
  usage: new Usage({ ...usage, cachedInputTokens: 0, reasoningTokens: 0 }),
  modelVersion: request.target.model,
  requestId: undefined,
  httpStatus: 200
})

/** The simulated endpoints do not stream. */
export const noStream = () => Stream.fail(new ProviderError({ kind: "invalid_request", processed: "no" }))

/** A simulated OpenAI target of `model` at `price` (input, output USD per million tokens). */
export const target = (ref: string, model: string, price: readonly [number, number]) => ({
  ref,
  provider: "openai",
  model,
  capabilities: {
    structuredOutput: { mode: "json_schema_strict" },
    contextWindow: 128_000,
    maxOutputTokens: 4096
  },
  regions: ["eu"],
  dataClasses: ["internal"],
  pricing: { inputPerMillion: price[0], outputPerMillion: price[1], currency: "USD", pricingVersion: "2026-11" },
  limits: { maxAttempts: 1, perAttemptTimeout: 2000, minimumAttemptTime: 100 }
})
