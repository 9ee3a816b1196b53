import { assert, describe, it } from "@effect/vitest"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import { ToolCall, ToolDefinition } from "@modelgate/core/ModelCommand"
import type { ProviderRequest } from "@modelgate/core/ProviderAdapter"
import { Either } from "effect"
import { hiRequest } from "./adapters-fixtures.js"
import { requestBody as anthropicBody } from "../src/internal/anthropicMessages.js"
import { requestBody as chatBody } from "../src/internal/chatCompletions.js"
import { openAiFamilies, openAiRequestId } from "../src/internal/echo.js"
import { modelPath, requestBody as geminiBody } from "../src/internal/geminiGenerate.js"

const request = (overrides: Partial<ProviderRequest>): ProviderRequest => hiRequest("m", overrides)

const dialect = (systemRole: "system" | "developer", maxTokensField: "max_tokens" | "max_completion_tokens") => ({
  provider: "openai",
  url: "http://x/v1/chat/completions",
  maxTokensField,
  systemRole,
  streamUsage: true,
  authorize: <A>(r: A) => r,
  echo: { provider: "openai", requestId: openAiRequestId, families: openAiFamilies, secrets: [] }
})

describe("request bodies", () => {
  it("chat completions: role of system messages, token field, tool choice", () => {
    const body = chatBody(
      request({
        messages: [
          { _tag: "system", content: "s" },
          { _tag: "user", content: "u" }
        ],
        toolChoice: "none"
      }),
      dialect("developer", "max_tokens"),
      false
    )
    assert.deepStrictEqual(body, {
      model: "m",
      messages: [
        { role: "developer", content: "s" },
        { role: "user", content: "u" }
      ],
      max_tokens: 64,
      tool_choice: "none"
    })
  })

  it("anthropic: system hoisted, tool results merged into one user turn, https images by URL", () => {
    const body = anthropicBody(
      request({
        messages: [
          { _tag: "system", content: "a" },
          { _tag: "system", content: "b" },
          { _tag: "user", content: [{ _tag: "image", url: "https://example.com/x.png" }] },
          {
            _tag: "assistant",
            toolCalls: [
              new ToolCall({ id: "t1", name: "f", arguments: "{}" }),
              new ToolCall({ id: "t2", name: "f", arguments: "" })
            ]
          },
          { _tag: "tool", toolCallId: "t1", name: "f", content: "1" },
          { _tag: "tool", toolCallId: "t2", name: "f", content: "2" }
        ],
        toolChoice: "none"
      }),
      "anthropic",
      true
    )
    assert.deepStrictEqual(Either.getOrThrow(body), {
      model: "m",
      max_tokens: 64,
      system: "a\n\nb",
      messages: [
        { role: "user", content: [{ type: "image", source: { type: "url", url: "https://example.com/x.png" } }] },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "t1", name: "f", input: {} },
            { type: "tool_use", id: "t2", name: "f", input: {} }
          ]
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "t1", content: "1" },
            { type: "tool_result", tool_use_id: "t2", content: "2" }
          ]
        }
      ],
      tool_choice: { type: "none" },
      stream: true
    })
  })

  it("anthropic and gemini reject assistant tool arguments that are not a JSON object, before sending", () => {
    const bad = request({
      messages: [{ _tag: "assistant", toolCalls: [new ToolCall({ id: "t", name: "f", arguments: "[1," })] }]
    })
    const a = anthropicBody(bad, "anthropic", false)
    const g = geminiBody(bad, "gemini")
    assert.isTrue(Either.isLeft(a) && a.left.kind === "invalid_request" && a.left.processed === "no")
    assert.isTrue(Either.isLeft(g) && g.left.kind === "invalid_request" && g.left.processed === "no")
  })

  it("gemini: tool results as objects, required tool choice, model path", () => {
    const body = geminiBody(
      request({
        messages: [
          { _tag: "tool", toolCallId: "c", name: "f", content: "plain text" },
          { _tag: "tool", toolCallId: "c", name: "g", content: "[1,2]" }
        ],
        toolChoice: "required"
      }),
      "gemini"
    )
    assert.deepStrictEqual(Either.getOrThrow(body), {
      contents: [
        {
          role: "user",
          parts: [
            { functionResponse: { name: "f", response: { result: "plain text" } } },
            { functionResponse: { name: "g", response: { result: [1, 2] } } }
          ]
        }
      ],
      generationConfig: { maxOutputTokens: 64 },
      toolConfig: { functionCallingConfig: { mode: "ANY" } }
    })
    assert.strictEqual(modelPath("models/gemini-x"), "gemini-x")
  })
})

describe("request bodies: sampling options and their provider constraints", () => {
  const tool = new ToolDefinition({ name: "f", description: "d", parameters: { type: "object" } })
  const refusal = (body: Either.Either<Record<string, unknown>, ProviderError>) =>
    Either.isLeft(body)
      ? { kind: body.left.kind, processed: body.left.processed, detail: body.left.detail }
      : body.right

  it("chat completions: parallel_tool_calls only with tools; userId as safety_identifier or user", () => {
    const openai = chatBody(
      request({ options: { parallelToolCalls: false, userId: "u-1" } }),
      dialect("system", "max_completion_tokens"),
      false
    )
    assert.notProperty(openai, "parallel_tool_calls")
    assert.strictEqual(openai.safety_identifier, "u-1")
    const local = chatBody(
      request({ tools: [tool], options: { parallelToolCalls: false, userId: "u-1" } }),
      { ...dialect("system", "max_tokens"), userField: "user" },
      false
    )
    assert.deepInclude(local, { parallel_tool_calls: false, user: "u-1" })
    assert.notProperty(local, "safety_identifier")
  })

  it("anthropic: a thinking budget stays below max_tokens, at least 1024; 0 turns thinking off", () => {
    const big = anthropicBody(
      request({ maxOutputTokens: 4096, options: { reasoningBudget: 100_000 } }),
      "anthropic",
      false
    )
    assert.deepInclude(Either.getOrThrow(big), { max_tokens: 4096, thinking: { type: "enabled", budget_tokens: 4095 } })
    const small = anthropicBody(
      request({ maxOutputTokens: 4096, options: { reasoningBudget: 10 } }),
      "anthropic",
      false
    )
    assert.deepInclude(Either.getOrThrow(small), { thinking: { type: "enabled", budget_tokens: 1024 } })
    const off = anthropicBody(request({ options: { reasoningBudget: 0, temperature: 0.2 } }), "anthropic", false)
    assert.deepInclude(Either.getOrThrow(off), { thinking: { type: "disabled" }, temperature: 0.2 })
    const nucleus = anthropicBody(
      request({ maxOutputTokens: 4096, options: { reasoningBudget: 2048, topP: 0.96 } }),
      "anthropic",
      false
    )
    assert.deepInclude(Either.getOrThrow(nucleus), { top_p: 0.96, thinking: { type: "enabled", budget_tokens: 2048 } })
  })

  it.each([
    [
      { maxOutputTokens: 1024, options: { reasoningBudget: 2048 } },
      "a thinking budget needs an output cap above 1024 tokens"
    ],
    [{ options: { temperature: 1.5 } }, "temperature above 1 is not accepted"],
    [{ options: { temperature: 0.5, topP: 0.9 } }, "temperature and topP cannot both be set"],
    [
      { maxOutputTokens: 4096, options: { reasoningBudget: 2048, temperature: 0.2 } },
      "a temperature other than 1 cannot be combined with a thinking budget"
    ],
    [
      { maxOutputTokens: 4096, options: { reasoningBudget: 2048, topP: 0.5 } },
      "topP below 0.95 cannot be combined with a thinking budget"
    ],
    [
      { maxOutputTokens: 4096, tools: [tool], toolChoice: "required" as const, options: { reasoningBudget: 2048 } },
      "forced tool use cannot be combined with a thinking budget"
    ],
    [
      { maxOutputTokens: 4096, options: { reasoningBudget: 2048 }, providerOptions: { top_k: 5 } },
      "top_k cannot be combined with a thinking budget"
    ],
    [
      { options: { seed: 1 } },
      "option seed has no Messages API field (remove it from the target's capabilities.options)"
    ]
  ] satisfies ReadonlyArray<readonly [Partial<ProviderRequest>, string]>)(
    "anthropic refuses before sending: %j",
    (overrides, detail) => {
      assert.deepStrictEqual(refusal(anthropicBody(request(overrides), "anthropic", false)), {
        kind: "invalid_request",
        processed: "no",
        detail: `anthropic: ${detail}`
      })
    }
  )

  it("gemini: reasoning effort as thinkingLevel; effort and budget together are refused", () => {
    const level = geminiBody(request({ options: { reasoningEffort: "low" } }), "gemini")
    assert.deepStrictEqual(Either.getOrThrow(level).generationConfig, {
      maxOutputTokens: 64,
      thinkingConfig: { thinkingLevel: "LOW" }
    })
    assert.deepStrictEqual(
      refusal(geminiBody(request({ options: { reasoningEffort: "high", reasoningBudget: 1000 } }), "gemini")),
      {
        kind: "invalid_request",
        processed: "no",
        detail: "gemini: reasoningEffort and reasoningBudget cannot be combined"
      }
    )
  })
})
