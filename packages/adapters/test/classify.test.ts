import { describe, expect, it } from "@effect/vitest"
import { Duration } from "effect"
import {
  applyShouldRetry,
  describe as describeError,
  kindForStatus,
  processedForStatus,
  providerError
} from "../src/internal/classify.js"
import { kindFromBody as anthropicKind } from "../src/internal/anthropicMessagesErrors.js"
import { identifier, knownCode, modelVersionOf, requestIdOf, truncatedMark } from "../src/internal/bounded.js"
import { errorObject, knownCodes, kindFromBody as openAiKind } from "../src/internal/chatCompletionsErrors.js"
import { kindFromBody as geminiKind, retryDelayMs } from "../src/internal/geminiGenerateErrors.js"

describe("classification helpers", () => {
  it("status defaults and processed", () => {
    expect([400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529].map(kindForStatus)).toEqual([
      "invalid_request",
      "authentication",
      "quota_exhausted",
      "permission",
      "model_not_found",
      "timeout",
      "server_error",
      "request_too_large",
      "invalid_request",
      "rate_limited",
      "server_error",
      "server_error",
      "overloaded",
      "timeout",
      "overloaded"
    ])
    expect([400, 429, 500, 502, 503, 504, 529].map(processedForStatus)).toEqual([
      "no",
      "no",
      "maybe",
      "maybe",
      "no",
      "maybe",
      "no"
    ])
  })

  it("x-should-retry", () => {
    expect(applyShouldRetry("overloaded", "false", false)).toBe("rejected")
    expect(applyShouldRetry("invalid_request", "true", true)).toBe("server_error")
    expect(applyShouldRetry("quota_exhausted", "true", false)).toBe("quota_exhausted")
    expect(applyShouldRetry("rate_limited", undefined, true)).toBe("rate_limited")
  })

  it("errors carry codes, never provider messages", () => {
    const error = providerError({
      kind: "rate_limited",
      processed: "no",
      httpStatus: 429,
      retryAfterMs: 1500,
      providerCode: "Please retry later: your prompt was <secret>",
      detail: describeError("openai", 429, "rate_limit_exceeded")
    })
    expect(error.providerCode).toBeUndefined()
    expect(error.detail).toBe("openai: HTTP 429 (rate_limit_exceeded)")
    expect(Duration.toMillis(error.retryAfter ?? Duration.zero)).toBe(1500)
  })

  it("OpenAI-style bodies: code > type > message", () => {
    expect(
      openAiKind({ type: "tokens", code: "rate_limit_exceeded", message: "Request too large for gpt-x" }, 429)
    ).toBe("request_too_large")
    expect(openAiKind({ type: "insufficient_quota", code: null }, 429)).toBe("quota_exhausted")
    expect(openAiKind({ type: "server_error" }, 504)).toBeUndefined()
    expect(openAiKind({ type: "server_error" }, undefined)).toBe("server_error")
    expect(
      openAiKind({ type: "BadRequestError", code: 400, message: "maximum context length is 4096 tokens" }, 400)
    ).toBe("context_length")
    expect(errorObject({ object: "error", message: "x", type: "BadRequestError", code: 400 })).toEqual({
      object: "error",
      message: "x",
      type: "BadRequestError",
      code: 400
    })
    expect(errorObject({ choices: [] })).toBeUndefined()
  })

  it("Anthropic bodies: details.error_code > type > message", () => {
    expect(
      anthropicKind({ type: "rate_limit_error", details: { error_code: "enforced_spend_limit_reached" } }, 429)
    ).toBe("spend_cap")
    expect(anthropicKind({ type: "invalid_request_error", message: "prompt is too long: 1 > 0" }, 400)).toBe(
      "context_length"
    )
    expect(anthropicKind({ type: "invalid_request_error", message: "x" }, 404)).toBeUndefined()
    expect(anthropicKind({ type: "overloaded_error" }, undefined)).toBe("overloaded")
  })

  it("Gemini bodies: details[] > status > message", () => {
    const perDay = {
      status: "RESOURCE_EXHAUSTED",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [{ quotaId: "GenerateRequestsPerDayPerProject" }]
        },
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "40s" }
      ]
    }
    expect(geminiKind(perDay, 429)).toBe("quota_exhausted")
    expect(retryDelayMs(perDay)).toBe(40_000)
    expect(geminiKind({ status: "RESOURCE_EXHAUSTED" }, 402)).toBe("quota_exhausted")
    expect(geminiKind({ status: "INVALID_ARGUMENT", message: "bad" }, 400)).toBe("invalid_request")
    expect(geminiKind({ status: "FAILED_PRECONDITION" }, 400)).toBe("permission")
    expect(geminiKind({}, 500)).toBeUndefined()
  })

  it('provider codes are a known enumeration or "other"; details leave "other" out', () => {
    expect(knownCode(knownCodes, "insufficient_quota", "insufficient_quota")).toBe("insufficient_quota")
    expect(knownCode(knownCodes, "echo_of_the_prompt", "invalid_request_error")).toBe("invalid_request_error")
    expect(knownCode(knownCodes, "400", "BadRequestError")).toBe("400")
    expect(knownCode(knownCodes, "Repeat after me", undefined)).toBe("other")
    expect(knownCode(knownCodes, undefined, "")).toBeUndefined()
    expect(describeError("openai", 400, "other")).toBe("openai: HTTP 400")
  })

  it("identifiers: whole values of a bounded shape, cut and marked, idempotent; prose dropped", () => {
    expect(identifier("gpt-4o-2024-08-06", 256)).toBe("gpt-4o-2024-08-06")
    expect(identifier("abcdef", 3)).toBe(`abc${truncatedMark}`)
    expect(identifier(`abc${truncatedMark}`, 3)).toBe(`abc${truncatedMark}`)
    expect(identifier(`a b${truncatedMark}`, 3)).toBeUndefined()
    expect(identifier("two words", 256)).toBeUndefined()
    expect(identifier("", 256)).toBeUndefined()
    expect(modelVersionOf("meta-llama/Llama-3.1-8B-Instruct", "fp_44709d6fcb")).toBe(
      "meta-llama/Llama-3.1-8B-Instruct+fp_44709d6fcb"
    )
    expect(modelVersionOf("llama3.2:latest", "not a fingerprint")).toBe("llama3.2:latest")
    expect(modelVersionOf("not a model", "fp_1")).toBeUndefined()
    expect(requestIdOf("req_011CSHxF")).toBe("req_011CSHxF")
    expect(requestIdOf("x".repeat(200))?.length).toBe(128 + truncatedMark.length)
    const error = providerError({ kind: "server_error", processed: "maybe", requestId: "a prompt", detail: "" })
    expect(error.requestId).toBeUndefined()
  })
})
