import { assert, describe, it } from "@effect/vitest"
import { ToolCall } from "@modelgate/core/ModelCommand"
import { Capabilities, ModelTarget, Pricing, ProviderId, TargetRef } from "@modelgate/core/ModelTarget"
import type { ProviderRequest } from "@modelgate/core/ProviderAdapter"
import { Duration, Either } from "effect"
import { requestBody as anthropicBody } from "../src/internal/anthropicMessages.js"
import { requestBody as chatBody } from "../src/internal/chatCompletions.js"
import { modelPath, requestBody as geminiBody } from "../src/internal/geminiGenerate.js"

const request = (overrides: Partial<ProviderRequest>): ProviderRequest => ({
  target: new ModelTarget({
    ref: TargetRef.make("model://x/m"),
    provider: ProviderId.make("x"),
    model: "m",
    capabilities: new Capabilities({ contextWindow: 1000, maxOutputTokens: 100 }),
    regions: ["eu"],
    dataClasses: ["public"],
    pricing: new Pricing({ inputPerMillion: 1, outputPerMillion: 1, pricingVersion: "1" })
  }),
  messages: [{ _tag: "user", content: "hi" }],
  tools: [],
  toolChoice: undefined,
  output: undefined,
  maxOutputTokens: 64,
  timeout: Duration.seconds(1),
  ...overrides
})

const dialect = (systemRole: "system" | "developer", maxTokensField: "max_tokens" | "max_completion_tokens") => ({
  provider: "openai",
  url: "http://x/v1/chat/completions",
  maxTokensField,
  systemRole,
  streamUsage: true,
  authorize: <A>(r: A) => r
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
