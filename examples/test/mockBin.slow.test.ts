/**
 * Wiring example: the official SDKs pointed at the `modelgate-mock` bin through the variables it
 * prints (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `GOOGLE_GEMINI_BASE_URL`), with a fault from its
 * flags. Any client that takes a base URL works the same way. Real processes and real HTTP, in the
 * `slow` project.
 */
import AnthropicSdk from "@anthropic-ai/sdk"
import { GoogleGenAI } from "@google/genai"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type MockProcess, startMock } from "./mockProcess.js"

let mock: MockProcess

beforeAll(async () => {
  mock = await startMock(["--text", "Bonjour from modelgate-mock.", "--fail", "503", "--times", "1"])
}, 60_000)

afterAll(() => mock?.stop())

describe("modelgate-mock and the official SDKs", () => {
  it("prints the OpenAI base URL first, then each SDK's variable", () => {
    expect(mock.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
    expect(mock.env.OPENAI_BASE_URL).toBe(mock.baseUrl)
    expect(mock.env.ANTHROPIC_BASE_URL).toBe(mock.baseUrl.replace(/\/v1$/, ""))
    expect(mock.env.GOOGLE_GEMINI_BASE_URL).toBe(mock.baseUrl.replace(/\/v1$/, ""))
  })

  it("openai: the scripted 503 first, then chat completions and responses", async () => {
    const client = new OpenAI({ apiKey: "sk-test", baseURL: mock.env.OPENAI_BASE_URL, maxRetries: 0 })
    const failed = await client.chat.completions
      .create({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hi" }] })
      .then(
        () => undefined,
        (error: unknown) => error
      )
    expect(failed instanceof OpenAI.APIError ? failed.status : failed).toBe(503)
    const chat = await client.chat.completions.create({
      model: "gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }]
    })
    expect(chat.choices[0]?.message.content).toBe("Bonjour from modelgate-mock.")
    const response = await client.responses.create({ model: "gpt-4.1-mini", input: "hi" })
    expect(response.output_text).toBe("Bonjour from modelgate-mock.")
    const stream = await client.chat.completions.create({
      model: "gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("Bonjour from modelgate-mock.")
  })

  it("anthropic and gemini through their own variables", async () => {
    const anthropic = new AnthropicSdk({ apiKey: "sk-test", baseURL: mock.env.ANTHROPIC_BASE_URL, maxRetries: 0 })
    const message = await anthropic.messages.create({
      model: "claude-haiku-4-5",
      max_tokens: 64,
      messages: [{ role: "user", content: "hi" }]
    })
    expect(message.content[0]?.type === "text" ? message.content[0].text : undefined).toBe(
      "Bonjour from modelgate-mock."
    )
    const gemini = new GoogleGenAI({
      apiKey: "test",
      httpOptions: { baseUrl: mock.env.GOOGLE_GEMINI_BASE_URL ?? "", apiVersion: "v1beta" }
    })
    const answer = await gemini.models.generateContent({ model: "gemini-2.5-flash", contents: "hi" })
    expect(answer.text).toBe("Bonjour from modelgate-mock.")
  })
})
