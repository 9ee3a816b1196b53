/**
 * The mock server's OpenAI Responses API (`POST /v1/responses`, provider `openai-responses`):
 * the response object, the `event:` SSE frames in order with their sequence numbers, the error
 * envelope with retry headers, and an `error` event after HTTP 200.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { MockProviderServer } from "../src/MockProviderServer.js"

const Live = Layer.merge(MockProviderServer.layer(), NodeHttpClient.layerUndici)

const responses = (body: Record<string, unknown>) =>
  Effect.gen(function* () {
    const mock = yield* MockProviderServer
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(
      HttpClientRequest.post(`${mock.baseUrl("openai-responses")}/responses`).pipe(
        HttpClientRequest.bodyUnsafeJson({ model: "gpt-x", input: "Hi", ...body })
      )
    )
    return { status: response.status, headers: response.headers, text: yield* response.text }
  })

/** Enqueues `behaviors` as the next answers of the Responses API. */
const enqueue = (...behaviors: ReadonlyArray<MockProviderServer.Behavior>) =>
  Effect.flatMap(MockProviderServer, (mock) => mock.enqueue(behaviors, { provider: "openai-responses" }))

/** `[event name, data]` of each SSE frame. */
const frames = (text: string): Array<[string, Record<string, unknown>]> =>
  text
    .split("\n\n")
    .filter((frame) => frame !== "")
    .map((frame) => {
      const [event, data] = frame.split("\n")
      return [event?.replace("event: ", "") ?? "", JSON.parse(data?.replace("data: ", "") ?? "null")]
    })

describe("MockProviderServer: OpenAI Responses API", () => {
  it.effect(
    "a JSON answer: message and function_call items, status, usage; a request for text.format gets a value of its schema",
    () =>
      Effect.gen(function* () {
        yield* enqueue(
          MockProviderServer.success({
            text: "Hello",
            toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "x" } }],
            usage: { input: 20, output: 5, cached: 4, reasoning: 2 }
          })
        )
        const answer = yield* responses({})
        assert.strictEqual(answer.status, 200)
        assert.strictEqual(answer.headers["x-request-id"], "req_mock_1")
        const body = JSON.parse(answer.text)
        assert.deepInclude(body, { id: "resp_mock_1", object: "response", status: "completed", model: "gpt-x" })
        assert.deepStrictEqual(body.output, [
          {
            id: "msg_resp_mock_1_0",
            type: "message",
            role: "assistant",
            status: "completed",
            content: [{ type: "output_text", text: "Hello", annotations: [], logprobs: [] }]
          },
          {
            id: "fc_resp_mock_1_0",
            type: "function_call",
            call_id: "call_1",
            name: "lookup",
            arguments: '{"q":"x"}',
            status: "completed"
          }
        ])
        assert.deepStrictEqual(body.usage, {
          input_tokens: 20,
          input_tokens_details: { cached_tokens: 4 },
          output_tokens: 5,
          output_tokens_details: { reasoning_tokens: 2 },
          total_tokens: 25
        })

        const structured = yield* responses({
          text: {
            format: {
              type: "json_schema",
              name: "answer",
              schema: { type: "object", properties: { a: { type: "string" } }, required: ["a"] }
            }
          }
        })
        const item = JSON.parse(structured.text).output[0]
        assert.deepStrictEqual(JSON.parse(item.content[0].text), { a: "example" })
        const mock = yield* MockProviderServer
        assert.deepStrictEqual(
          (yield* mock.requests).map((r) => [r.provider, r.url, r.model]),
          [
            ["openai-responses", "/v1/responses", "gpt-x"],
            ["openai-responses", "/v1/responses", "gpt-x"]
          ]
        )
      }).pipe(Effect.provide(Live))
  )

  it.effect(
    "an SSE answer: created, item added, content part added, deltas, done events, item done, completed — numbered in order",
    () =>
      Effect.gen(function* () {
        yield* enqueue(
          MockProviderServer.success({
            text: "Hello there",
            chunkSize: 6,
            toolCalls: [{ id: "call_1", name: "lookup", arguments: '{"q":1}' }]
          })
        )
        const answer = yield* responses({ stream: true })
        assert.strictEqual(answer.headers["content-type"], "text/event-stream")
        const events = frames(answer.text)
        assert.deepStrictEqual(
          events.map(([name, data]) => [name, data.type === name, data.sequence_number]),
          [
            ["response.created", true, 0],
            ["response.in_progress", true, 1],
            ["response.output_item.added", true, 2],
            ["response.content_part.added", true, 3],
            ["response.output_text.delta", true, 4],
            ["response.output_text.delta", true, 5],
            ["response.output_text.done", true, 6],
            ["response.content_part.done", true, 7],
            ["response.output_item.done", true, 8],
            ["response.output_item.added", true, 9],
            ["response.function_call_arguments.delta", true, 10],
            ["response.function_call_arguments.delta", true, 11],
            ["response.function_call_arguments.done", true, 12],
            ["response.output_item.done", true, 13],
            ["response.completed", true, 14]
          ]
        )
        assert.deepStrictEqual(
          events.flatMap(([, data]) => (typeof data.delta === "string" ? [data.delta] : [])),
          ["Hello ", "there", '{"q":1', "}"]
        )
        const completed = events.at(-1)?.[1].response
        assert.deepInclude(completed, { status: "completed" })
      }).pipe(Effect.provide(Live))
  )

  it.effect("a refusal is a refusal content part; max_output_tokens makes the response incomplete", () =>
    Effect.gen(function* () {
      yield* enqueue(
        MockProviderServer.success({ refusal: "No." }),
        MockProviderServer.success({ finishReason: "max_output_tokens" })
      )
      const refused = JSON.parse((yield* responses({})).text)
      assert.deepStrictEqual(refused.output[0].content, [{ type: "refusal", refusal: "No." }])
      const cut = JSON.parse((yield* responses({})).text)
      assert.deepInclude(cut, { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } })
    }).pipe(Effect.provide(Live))
  )

  it.effect("errors: the OpenAI envelope with retry headers, and an error event after HTTP 200", () =>
    Effect.gen(function* () {
      yield* enqueue(
        MockProviderServer.failure(429, { headers: { "retry-after": "2" } }),
        MockProviderServer.success({
          text: "abcdefgh",
          chunkSize: 4,
          streamEnd: { _tag: "Error", afterChunks: 1, error: { code: "server_error", message: "boom" } }
        })
      )
      const limited = yield* responses({})
      assert.strictEqual(limited.status, 429)
      assert.strictEqual(limited.headers["retry-after"], "2")
      assert.deepStrictEqual(JSON.parse(limited.text), {
        error: { message: "mock error", type: "requests", param: null, code: "rate_limit_exceeded" }
      })
      const streamed = frames((yield* responses({ stream: true })).text)
      assert.deepStrictEqual(streamed.at(-1), [
        "error",
        { type: "error", code: "server_error", message: "boom", param: null, sequence_number: 0 }
      ])
      assert.notInclude(
        streamed.map(([name]) => name),
        "response.completed"
      )
    }).pipe(Effect.provide(Live))
  )
})
