/**
 * The Vercel AI SDK (`ai` 6 with its OpenAI-compatible provider, `@ai-sdk/openai-compatible` 2)
 * against the dev server over loopback: generateText, streamText with usage, tool calls, a
 * structured object from the workflow's schema, and the errors it surfaces (`maxRetries: 0`).
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { MockProviderServer } from "@modelgate/testing"
import { APICallError, generateObject, generateText, jsonSchema, streamText, tool } from "ai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { devKey, type Harness, startHarness } from "./fixtures.js"

let h: Harness

beforeAll(async () => {
  h = await startHarness()
})
afterAll(async () => {
  await h.close()
})

const provider = (apiKey = devKey) =>
  createOpenAICompatible({
    name: "modelgate",
    baseURL: `${h.url}/v1`,
    apiKey,
    includeUsage: true,
    supportsStructuredOutputs: true
  })

const greeting = "Hello from the modelgate mock provider. Ask me anything."

describe("Vercel AI SDK, OpenAI-compatible provider", () => {
  it("generateText: the answer, finish reason and usage of a workflow named as the model", async () => {
    const result = await generateText({ model: provider()("chat"), prompt: "hello", maxRetries: 0 })
    expect(result.text).toBe(greeting)
    expect(result.finishReason).toBe("stop")
    expect(result.usage).toMatchObject({ inputTokens: 12, outputTokens: 11, totalTokens: 23 })
    const callId = result.response.headers?.["x-modelgate-call-id"]
    expect(callId).toMatch(/^mg_/)
    const records = await h.run(h.recorder.records)
    expect(records.find((r) => r.evidence.callId === callId)).toMatchObject({ tenant: "dev", outcome: "success" })
  })

  it("streamText: the deltas add up to the answer, usage arrives at the end", async () => {
    const result = streamText({ model: provider()("chat"), prompt: "hello", maxRetries: 0 })
    let text = ""
    for await (const delta of result.textStream) text += delta
    expect(text).toBe(greeting)
    expect(await result.finishReason).toBe("stop")
    expect(await result.usage).toMatchObject({ inputTokens: 12, outputTokens: 11 })
  })

  it("tools: the proposed call reaches the SDK with its parsed input", async () => {
    await h.run(
      h.mock.enqueue([
        MockProviderServer.success({ toolCalls: [{ id: "call_7", name: "get_weather", arguments: { city: "Lima" } }] })
      ])
    )
    const result = await generateText({
      model: provider()("chat"),
      prompt: "weather in Lima?",
      maxRetries: 0,
      tools: {
        get_weather: tool({
          description: "Weather of a city",
          inputSchema: jsonSchema<{ city: string }>({
            type: "object",
            properties: { city: { type: "string" } },
            required: ["city"]
          })
        })
      }
    })
    expect(result.finishReason).toBe("tool-calls")
    expect(result.toolCalls[0]).toMatchObject({
      toolCallId: "call_7",
      toolName: "get_weather",
      input: { city: "Lima" }
    })
  })

  it("generateObject: the workflow's schema answers", async () => {
    const result = await generateObject({
      model: provider()("extract"),
      prompt: "I was charged twice",
      maxRetries: 0,
      schema: jsonSchema<{ category: string; summary: string }>({
        type: "object",
        properties: { category: { type: "string" }, summary: { type: "string" } },
        required: ["category", "summary"]
      })
    })
    expect(result.object).toMatchObject({ category: expect.any(String), summary: expect.any(String) })
  })

  it("a wrong key is a 401 APICallError; an upstream outage a 502 without the provider's body", async () => {
    const unauthorized = await generateText({ model: provider("wrong")("chat"), prompt: "x", maxRetries: 0 }).catch(
      (e: unknown) => e
    )
    expect(APICallError.isInstance(unauthorized)).toBe(true)
    expect(unauthorized).toMatchObject({ statusCode: 401 })

    const failure = MockProviderServer.failure(500, { error: { message: "provider-internal-detail" } })
    await h.run(h.mock.enqueue([failure, failure]))
    const outage = await generateText({ model: provider()("chat"), prompt: "x", maxRetries: 0 }).catch(
      (e: unknown) => e
    )
    expect(APICallError.isInstance(outage)).toBe(true)
    expect(outage).toMatchObject({ statusCode: 502 })
    expect(JSON.stringify(outage)).not.toContain("provider-internal-detail")
  })
})
