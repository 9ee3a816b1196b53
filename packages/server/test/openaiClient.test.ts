/**
 * The official `openai` client (6.49, `maxRetries: 0`) against the dev server over loopback: chat
 * create and stream, tools, structured output, responses (create and the `responses.stream()`
 * helper), embeddings, and the error statuses it maps to its error classes.
 */
import { MockProviderServer } from "@modelgate/testing"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Harness, startHarness } from "./fixtures.js"

let h: Harness

beforeAll(async () => {
  h = await startHarness()
})
afterAll(async () => {
  await h.close()
})

const weather = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}

/** A raw POST to `/v1/chat/completions` with the test key and `headers` (what the SDK cannot send). */
const postChat = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${h.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: "Bearer mg-test-key-0123456789", ...headers },
    body: JSON.stringify(body)
  })

describe("chat completions", () => {
  it("create: the answer, usage, and the evidence headers and record", async () => {
    const { data, response } = await h
      .client()
      .chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hello" }] })
      .withResponse()
    expect(data.choices[0]?.message.content).toBe("Hello from the modelgate mock provider. Ask me anything.")
    expect(data.choices[0]?.finish_reason).toBe("stop")
    expect(data.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 11, total_tokens: 23 })
    const callId = response.headers.get("x-modelgate-call-id")
    expect(callId).toMatch(/^mg_/)
    expect(response.headers.get("x-modelgate-route")).toBe("model://openai/mock-chat@local")
    expect(response.headers.get("x-modelgate-fallback")).toBe("false")
    expect(response.headers.get("x-modelgate-attempts")).toBe("1")
    expect(response.headers.get("x-modelgate-policy-version")).toBe("dev-1")
    expect(response.headers.get("x-modelgate-pricing-version")).toBe("dev-prices-1")
    expect(Number(response.headers.get("x-modelgate-cost"))).toBeGreaterThan(0)
    const records = await h.run(h.recorder.records)
    const record = records.find((r) => r.evidence.callId === callId)
    expect(record).toMatchObject({ tenant: "dev", mode: "generate", outcome: "success" })
  })

  it("an alias names the workflow; the sampling options reach the provider within the workflow's bounds", async () => {
    const answer = await h.client().chat.completions.create({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hello" }
      ],
      temperature: 0.3,
      max_tokens: 50
    })
    expect(answer.model).toBe("gpt-4o-mini")
    const sent = (await h.run(h.mock.requests)).at(-1)
    expect(sent?.body).toMatchObject({ model: "mock-chat", temperature: 0.3 })
    const sentBody = JSON.stringify(sent?.body)
    expect(sentBody).not.toContain("gpt-4o-mini")
  })

  it("stream with include_usage: chunks, usage, the evidence chunk, then [DONE]", async () => {
    const stream = await h.client().chat.completions.create({
      model: "chat",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "hello" }]
    })
    let text = ""
    let usage: OpenAI.CompletionUsage | undefined | null
    let finish: string | null | undefined
    let evidence: unknown
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? ""
      finish = chunk.choices[0]?.finish_reason ?? finish
      if (chunk.usage) usage = chunk.usage
      if ("modelgate" in chunk) evidence = chunk.modelgate
    }
    expect(text).toBe("Hello from the modelgate mock provider. Ask me anything.")
    expect(finish).toBe("stop")
    expect(usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 11 })
    expect(evidence).toMatchObject({
      workflow: "chat",
      route: "model://openai/mock-chat@local",
      attempts: 1,
      fallback: false
    })
    // The stream ran vouched for the key's tenant, like a plain call.
    const streamed = (await h.run(h.recorder.records)).filter((r) => r.mode === "stream").at(-1)
    expect(streamed?.evidence.identity).toEqual({ tenant: "dev", authority: "api-key", subject: "dev" })
  })

  it("tools: proposed tool calls, in create and in the stream helper", async () => {
    const call = MockProviderServer.success({
      toolCalls: [{ id: "call_1", name: "get_weather", arguments: { city: "Paris" } }]
    })
    await h.run(h.mock.enqueue([call, call]))
    const answer = await h.client().chat.completions.create({
      model: "chat",
      tools: [weather],
      messages: [{ role: "user", content: "weather in Paris?" }]
    })
    expect(answer.choices[0]?.finish_reason).toBe("tool_calls")
    expect(answer.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      id: "call_1",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' }
    })
    const final = await h
      .client()
      .chat.completions.stream({
        model: "chat",
        tools: [weather],
        messages: [{ role: "user", content: "weather in Paris?" }]
      })
      .finalChatCompletion()
    const streamed = final.choices[0]?.message.tool_calls?.[0]
    expect(streamed?.type === "function" ? streamed.function : undefined).toMatchObject({
      name: "get_weather",
      arguments: '{"city":"Paris"}'
    })
    const [sent] = (await h.run(h.mock.requests)).slice(-1)
    expect(JSON.stringify(sent?.body)).toContain("get_weather")
  })

  it("a tool result turn maps back onto the command", async () => {
    const answer = await h.client().chat.completions.create({
      model: "chat",
      tools: [weather],
      messages: [
        { role: "user", content: "weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }
          ]
        },
        { role: "tool", tool_call_id: "call_1", content: "sunny" }
      ]
    })
    expect(answer.choices[0]?.message.content).toContain("Hello")
    const sent = (await h.run(h.mock.requests)).at(-1)
    expect(JSON.stringify(sent?.body)).toContain("sunny")
  })

  it("structured output: the workflow's schema answers, whatever schema the request names", async () => {
    const { data, response } = await h
      .client()
      .chat.completions.create({
        model: "extract",
        messages: [{ role: "user", content: "I was charged twice" }],
        response_format: { type: "json_schema", json_schema: { name: "Other", schema: { type: "object" } } }
      })
      .withResponse()
    const value: unknown = JSON.parse(data.choices[0]?.message.content ?? "null")
    expect(value).toMatchObject({ category: expect.any(String), summary: expect.any(String) })
    expect(response.headers.get("x-modelgate-schema-version")).toBe("1")
  })

  it("a JSON format on a free-text workflow is a 400", async () => {
    await expect(
      h.client().chat.completions.create({
        model: "chat",
        messages: [{ role: "user", content: "x" }],
        response_format: { type: "json_object" }
      })
    ).rejects.toMatchObject({ status: 400, code: "invalid_body" })
  })
})

describe("responses", () => {
  it("create: text, usage and evidence", async () => {
    const { data, response } = await h
      .client()
      .responses.create({ model: "chat", input: "hello", instructions: "be brief" })
      .withResponse()
    expect(data.output_text).toBe("Hello from the modelgate mock provider. Ask me anything.")
    expect(data.status).toBe("completed")
    expect(data.usage).toMatchObject({ input_tokens: 12, output_tokens: 11 })
    expect(response.headers.get("x-modelgate-call-id")).toMatch(/^mg_/)
  })

  it("the responses.stream() helper accumulates the streamed events into the final response", async () => {
    const stream = h.client().responses.stream({ model: "chat", input: [{ role: "user", content: "hello" }] })
    const types: Array<string> = []
    stream.on("event", (e) => types.push(e.type))
    const final = await stream.finalResponse()
    expect(final.output_text).toBe("Hello from the modelgate mock provider. Ask me anything.")
    expect(types[0]).toBe("response.created")
    expect(types).toContain("response.output_text.delta")
    expect(types.at(-1)).toBe("response.completed")
  })

  it("tools: function calls in create and in the stream", async () => {
    const call = MockProviderServer.success({
      toolCalls: [{ id: "call_9", name: "get_weather", arguments: { city: "Oslo" } }]
    })
    await h.run(h.mock.enqueue([call, call]))
    const tool = {
      type: "function" as const,
      name: "get_weather",
      parameters: weather.function.parameters,
      strict: false
    }
    const created = await h.client().responses.create({ model: "chat", input: "weather?", tools: [tool] })
    expect(created.output.find((o) => o.type === "function_call")).toMatchObject({
      type: "function_call",
      call_id: "call_9",
      name: "get_weather",
      arguments: '{"city":"Oslo"}'
    })
    const final = await h
      .client()
      .responses.stream({ model: "chat", input: "weather?", tools: [tool] })
      .finalResponse()
    expect(final.output.find((o) => o.type === "function_call")).toMatchObject({
      name: "get_weather",
      arguments: '{"city":"Oslo"}'
    })
  })

  it("structured output with text.format", async () => {
    const answer = await h.client().responses.create({
      model: "extract",
      input: "I was charged twice",
      text: { format: { type: "json_schema", name: "Ticket", schema: { type: "object" } } }
    })
    expect(JSON.parse(answer.output_text)).toMatchObject({ category: expect.any(String) })
  })
})

describe("embeddings", () => {
  it("vectors in order, decoded by the client from base64", async () => {
    const answer = await h.client().embeddings.create({ model: "embed", input: ["a", "b"] })
    expect(answer.data.map((d) => d.index)).toEqual([0, 1])
    expect(answer.data[0]?.embedding).toHaveLength(8)
  })

  it("an embedding workflow is not a chat model, and the other way round", async () => {
    await expect(h.client().embeddings.create({ model: "chat", input: "a" })).rejects.toMatchObject({ status: 404 })
    await expect(
      h.client().chat.completions.create({ model: "embed", messages: [{ role: "user", content: "x" }] })
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError)
  })
})

describe("errors", () => {
  it("a wrong or missing key is a 401", async () => {
    await expect(h.client("wrong").models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError)
    const bare = await fetch(`${h.url}/v1/models`)
    expect(bare.status).toBe(401)
    expect(await bare.json()).toMatchObject({ error: { code: "invalid_api_key", type: "invalid_request_error" } })
  })

  it("models lists the workflows and aliases of the key", async () => {
    const models = await h.client().models.list()
    expect(models.data.map((m) => m.id).sort()).toEqual(["chat", "embed", "extract", "gpt-4o-mini"])
  })

  it("models.retrieve: a workflow or alias of the key, else 404", async () => {
    expect(await h.client().models.retrieve("gpt-4o-mini")).toMatchObject({ id: "gpt-4o-mini", object: "model" })
    await expect(h.client().models.retrieve("nope")).rejects.toBeInstanceOf(OpenAI.NotFoundError)
  })

  it("an unknown model is a 404", async () => {
    await expect(
      h.client().chat.completions.create({ model: "nope", messages: [{ role: "user", content: "x" }] })
    ).rejects.toBeInstanceOf(OpenAI.NotFoundError)
  })

  it("an invalid body is a 400 naming paths, never values", async () => {
    const response = await postChat(
      { model: "chat", messages: [{ role: "wizard", content: "secret-prompt-text" }] },
      { "content-type": "application/json" }
    )
    expect(response.status).toBe(400)
    const text = await response.text()
    expect(text).toContain("$.messages[0]")
    expect(text).not.toContain("secret-prompt-text")
    expect(text).not.toContain("wizard")
  })

  it("x-request-id reaches the record (plain and streamed); a malformed one is a 400 naming the header only", async () => {
    const { response } = await h
      .client()
      .chat.completions.create(
        { model: "chat", messages: [{ role: "user", content: "hello" }] },
        { headers: { "x-request-id": "req_7f3a-1" } }
      )
      .withResponse()
    const callId = response.headers.get("x-modelgate-call-id")
    const record = (await h.run(h.recorder.records)).find((r) => r.evidence.callId === callId)
    expect(record?.evidence.requestId).toBe("req_7f3a-1")
    const stream = await h
      .client()
      .chat.completions.create(
        { model: "chat", stream: true, messages: [{ role: "user", content: "hello" }] },
        { headers: { "x-request-id": "req_7f3a-2" } }
      )
    for await (const _ of stream) {
      // drain
    }
    const streamed = (await h.run(h.recorder.records)).filter((r) => r.mode === "stream").at(-1)
    expect(streamed?.evidence.requestId).toBe("req_7f3a-2")
    const bad = await postChat(
      { model: "chat", messages: [{ role: "user", content: "x" }] },
      { "content-type": "application/json", "x-request-id": "secret value with spaces" }
    )
    expect(bad.status).toBe(400)
    const text = await bad.text()
    expect(text).toContain("x-request-id")
    expect(text).not.toContain("secret value")
  })

  it("a field the command cannot take (a target, a key) cannot reach the gateway", async () => {
    // Not OpenAI fields: ignored, never a route.
    const smuggled = { target: "model://evil/x@us", base_url: "http://evil.example" }
    await h.client().chat.completions.create({ ...smuggled, model: "chat", messages: [{ role: "user", content: "x" }] })
    const sent = (await h.run(h.mock.requests)).at(-1)
    expect(JSON.stringify(sent?.body)).not.toContain("evil")
  })

  it("every route unavailable is a 502 without the provider's body", async () => {
    await h.run(
      h.mock.enqueue([
        MockProviderServer.failure(500, { error: { message: "provider-internal-detail" } }),
        MockProviderServer.failure(500, { error: { message: "provider-internal-detail" } })
      ])
    )
    const error = await h
      .client()
      .chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.InternalServerError)
    expect(error).toMatchObject({ status: 502, code: "upstream_unavailable" })
    expect(JSON.stringify(error)).not.toContain("provider-internal-detail")
  })

  it("an upstream 429 on every attempt is a 429 with retry-after", async () => {
    const limited = MockProviderServer.failure(429, { headers: { "retry-after": "0" } })
    await h.run(h.mock.enqueue([limited, limited]))
    const error = await h
      .client()
      .chat.completions.create({ model: "chat", messages: [{ role: "user", content: "x" }] })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(OpenAI.RateLimitError)
    expect(error instanceof OpenAI.APIError ? error.headers?.get("retry-after") : undefined).toMatch(/^\d+$/)
  })

  it("a stream whose every attempt fails before content is an HTTP error, not a 200", async () => {
    await h.run(h.mock.enqueue([MockProviderServer.failure(503), MockProviderServer.failure(503)]))
    await expect(
      h.client().chat.completions.create({ model: "chat", stream: true, messages: [{ role: "user", content: "x" }] })
    ).rejects.toMatchObject({ status: 503, code: "upstream_unavailable" })
  })

  it("a malformed per-call limit header is a 400", async () => {
    const response = await postChat(
      { model: "chat", messages: [{ role: "user", content: "x" }] },
      { "x-modelgate-max-cost": "lots" }
    )
    expect(response.status).toBe(400)
    expect(await response.text()).toContain("x-modelgate-max-cost")
  })

  it("health and readiness need no key", async () => {
    expect((await fetch(`${h.url}/healthz`)).status).toBe(200)
    expect(await (await fetch(`${h.url}/readyz`)).json()).toEqual({ status: "ready" })
    expect((await fetch(`${h.url}/nope`)).status).toBe(404)
  })
})
