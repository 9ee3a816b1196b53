/**
 * The check on what an upstream echoes into the fields that reach records, spans, logs and
 * evidence (`modelVersion`, `providerRequestId`). A provider (or a proxy in front of it) may put
 * anything there, the prompt included; {@link bounded} only bounds the shape. On top of it:
 *
 * - the configured API key is never kept (a value holding it, or a long enough piece of it);
 * - nothing holding an e-mail address or a card number (13–19 digits passing the Luhn check, or a
 *   longer run of digits) is kept;
 * - a model version is kept only when it is of the target's model family: it starts with the
 *   requested model id, or with one of the provider's documented family prefixes that the
 *   requested model also starts with (`gemini-`, `claude-`, …);
 * - a request id is kept only when it has the provider's documented shape (`req_…`, `msg_…`,
 *   `chatcmpl-…`, …).
 *
 * A value that fails is dropped and counted in {@link echoDropped} (tags `provider`, `field`).
 *
 * @internal
 */
import type { ProviderError as ProviderErrorType } from "@modelgate/core/ProviderAdapter"
import { ProviderError } from "@modelgate/core/ProviderAdapter"
import { Metric, MetricLabel, Redacted } from "effect"
import { truncatedMark } from "./bounded.js"

/** Values dropped by the echo check, tagged `provider` and `field` (`model_version`, `request_id`). @internal */
export const echoDropped = Metric.counter("modelgate.adapter.echo_dropped", {
  description: "Model versions and request ids an upstream sent that failed the echo check and were dropped",
  incremental: true
})

/** What a provider's echoes are checked against. @internal */
export interface EchoRules {
  /** Provider id (the metric's tag). */
  readonly provider: string
  /** The shape a request id of this provider has, as a whole (a bounded id's mark is ignored). */
  readonly requestId: RegExp
  /** Documented model family prefixes (a version is of the family when both start with one). */
  readonly families: ReadonlyArray<string>
  /** The configured credentials: never kept. */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string> | undefined>
}

/** OpenAI: `req_…` (the `x-request-id` header), `chatcmpl-…` (body ids), and the UUIDs of Azure-style proxies. @internal */
export const openAiRequestId =
  /^(?:req_[A-Za-z0-9_]+|chatcmpl-[A-Za-z0-9_-]+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/

/** Anthropic: `req_…` (the `request-id` header, `request_id` in error bodies) and `msg_…` (message ids). @internal */
export const anthropicRequestId = /^(?:req|msg)_[A-Za-z0-9_]+$/

/** Gemini's opaque `responseId` (base64url characters, no `.`, `@` or `:`). @internal */
export const opaqueRequestId = /^[A-Za-z0-9_-]+$/

/** vLLM, Ollama, llama.cpp: `chatcmpl-…` / `cmpl-…` body ids, `req_…`, hex or UUID request ids. @internal */
export const compatibleRequestId =
  /^(?:(?:chatcmpl|cmpl|embd)-[A-Za-z0-9_-]+|req_[A-Za-z0-9_]+|[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/

/** OpenAI's documented model families. @internal */
export const openAiFamilies: ReadonlyArray<string> = ["gpt-", "chatgpt-", "o1", "o3", "o4", "text-embedding-"]

/** Anthropic's documented model family. @internal */
export const anthropicFamilies: ReadonlyArray<string> = ["claude-"]

/** Gemini's documented model families. @internal */
export const geminiFamilies: ReadonlyArray<string> = ["gemini-", "gemma-", "text-embedding-", "embedding-"]

const email = /[A-Za-z0-9._%+-]@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/

/** Shortest piece of a secret that counts as holding it. */
const minSecretPiece = 8

const luhn = (digits: string): boolean => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** Whether `value` holds a card-number-like run: 13–19 digits (single `-` or space between them) passing Luhn, or more. */
const holdsCardNumber = (value: string): boolean => {
  let run = ""
  for (let i = 0; i <= value.length; i++) {
    const c = value.charCodeAt(i)
    if (c >= 48 && c <= 57) {
      run += value[i]
      continue
    }
    // A single separator between two digits continues the run.
    const next = value.charCodeAt(i + 1)
    if ((c === 45 || c === 32) && run.length > 0 && next >= 48 && next <= 57) continue
    if (run.length > 19 || (run.length >= 13 && luhn(run))) return true
    run = ""
  }
  return false
}

const holdsSecret = (value: string, secrets: EchoRules["secrets"]): boolean => {
  for (const secret of secrets) {
    if (secret === undefined) continue
    const key = Redacted.value(secret)
    // (A key of a few characters, e.g. a local server's placeholder, guards nothing.)
    if (key.length < 4) continue
    if (value.includes(key)) return true
    if (value.length >= minSecretPiece && key.includes(value)) return true
    // A piece of the key inside the value.
    if (key.length >= minSecretPiece) {
      for (let i = 0; i + minSecretPiece <= key.length; i++) {
        if (value.includes(key.slice(i, i + minSecretPiece))) return true
      }
    }
  }
  return false
}

/** Whether `value` holds the key, an e-mail address or a card number. @internal */
export const leaks = (value: string, secrets: EchoRules["secrets"]): boolean =>
  email.test(value) || holdsCardNumber(value) || holdsSecret(value, secrets)

const dropped = (rules: EchoRules, field: "model_version" | "request_id"): undefined => {
  echoDropped.unsafeUpdate(1, [MetricLabel.make("provider", rules.provider), MetricLabel.make("field", field)])
  return undefined
}

const unmarked = (value: string): string =>
  value.endsWith(truncatedMark) ? value.slice(0, -truncatedMark.length) : value

/**
 * A request id, kept when it has the provider's shape and leaks nothing; else `undefined` (counted).
 *
 * @internal
 */
export const checkRequestId = (rules: EchoRules, id: string | undefined): string | undefined => {
  if (id === undefined) return undefined
  return rules.requestId.test(unmarked(id)) && !leaks(id, rules.secrets) ? id : dropped(rules, "request_id")
}

const withoutModelsPrefix = (model: string): string => (model.startsWith("models/") ? model.slice(7) : model)

/** Whether `version` is of the family of the requested `model`. */
const ofFamily = (rules: EchoRules, model: string, version: string): boolean => {
  const requested = withoutModelsPrefix(model)
  const reported = withoutModelsPrefix(version)
  if (requested.length > 0 && reported.startsWith(requested)) return true
  for (const family of rules.families) if (requested.startsWith(family) && reported.startsWith(family)) return true
  return false
}

/**
 * A model version, kept when it is of the requested model's family and leaks nothing; else
 * `undefined` (counted).
 *
 * @internal
 */
export const checkModelVersion = (rules: EchoRules, model: string, version: string | undefined): string | undefined => {
  if (version === undefined) return undefined
  return ofFamily(rules, model, version) && !leaks(version, rules.secrets) ? version : dropped(rules, "model_version")
}

/**
 * An answer's `modelVersion` and `requestId` checked; the same object when both pass.
 *
 * @internal
 */
export const checkAnswer = <
  A extends { readonly modelVersion?: string | undefined; readonly requestId?: string | undefined }
>(
  rules: EchoRules,
  model: string,
  answer: A
): A => {
  const modelVersion = checkModelVersion(rules, model, answer.modelVersion)
  const requestId = checkRequestId(rules, answer.requestId)
  return modelVersion === answer.modelVersion && requestId === answer.requestId
    ? answer
    : { ...answer, modelVersion, requestId }
}

/**
 * A provider error with its request id checked; the same error when it passes.
 *
 * @internal
 */
export const checkError = (rules: EchoRules, error: ProviderErrorType): ProviderErrorType => {
  const requestId = checkRequestId(rules, error.requestId)
  if (requestId === error.requestId) return error
  return new ProviderError(
    {
      kind: error.kind,
      processed: error.processed,
      httpStatus: error.httpStatus,
      retryAfter: error.retryAfter,
      requestId,
      providerCode: error.providerCode,
      usage: error.usage,
      detail: error.detail
    },
    { disableValidation: true }
  )
}
