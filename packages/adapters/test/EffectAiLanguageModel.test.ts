/**
 * `EffectAi.languageModel`: code written against `@effect/ai`'s `LanguageModel` runs through a
 * gateway workflow — here over modelgate's own OpenAI (primary) and Anthropic (fallback) adapters,
 * real HTTP to the mock server. `generateObject` and `streamText` fall back on a 503 primary; the
 * typed gateway error (Refusal vs RateLimited vs ProviderUnavailable) is reachable from the
 * `AiError`; per-call schemas are checked against the workflow's before any provider call; tool
 * calls round-trip through a `Toolkit`; prompts map onto the wire.
 */
import { AiError, LanguageModel, Prompt, Tool, Toolkit } from "@effect/ai"
import { assert, describe, it } from "@effect/vitest"
import * as Anthropic from "@modelgate/adapters/anthropic"
import * as EffectAi from "@modelgate/adapters/effect-ai"
import * as OpenAi from "@modelgate/adapters/openai"
import { ModelCommand, ToolLedger, ToolLoop } from "@modelgate/core"
import type { RecordedRequest } from "@modelgate/testing/MockProviderServer"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Chunk, Effect, Layer, Schema, Stream } from "effect"
import { apiKey, mockGateway, targetJson, workflowJson } from "./adapters-fixtures.js"

const Answer = Schema.Struct({ category: Schema.Literal("billing", "other"), confidence: Schema.Number })

const openAiRef = "model://openai/gpt-4.1-mini@eu"
const anthropicRef = "model://anthropic/claude-haiku@eu"

const target = (ref: string) =>
  targetJson(ref, {
    pricing: { inputPerMillion: 1, outputPerMillion: 2 },
    capabilities: {
      contextWindow: 128_000,
      maxOutputTokens: 4096,
      tools: true,
      vision: true,
      structuredOutput: { mode: "json_schema" }
    }
  })

const config = {
  targets: [target(openAiRef), target(anthropicRef)],
  workflows: [
    workflowJson("ticket.classify", [openAiRef, anthropicRef], "Answer"),
    workflowJson("ticket.reply", [openAiRef, anthropicRef])
  ]
}

const GatewayLayer = mockGateway(config, { schemas: { Answer } }, (mock) =>
  Layer.merge(
    OpenAi.layer({ baseUrl: mock.baseUrl("openai"), apiKey }),
    Anthropic.layer({ baseUrl: mock.baseUrl("anthropic"), apiKey })
  )
)

/** `@effect/ai`'s LanguageModel served by workflow `workflow`, over the gateway above. */
const served = (workflow: string) =>
  EffectAi.languageModel({ workflow, tenant: "acme" }).pipe(Layer.provideMerge(GatewayLayer))

const down = MockProviderServer.failure(503, { error: { type: "server_error", message: "down" } })

/** An answer that only calls tools (no text), streamed in chunks of `chunkSize` when given. */
const callsTools = (
  toolCalls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: Record<string, unknown> }>,
  chunkSize?: number
) => MockProviderServer.success({ text: "", toolCalls, ...(chunkSize !== undefined ? { chunkSize } : {}) })

const bodyOf = (request: RecordedRequest | undefined): Record<string, unknown> => {
  const body = request?.body
  return typeof body === "object" && body !== null && !Array.isArray(body)
    ? Object.fromEntries(Object.entries(body))
    : {}
}

describe("EffectAi.languageModel: @effect/ai served by a gateway workflow", () => {
  it.effect("generateObject: 503 on the primary, the fallback answers; the evidence rides on the finish part", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(down, { provider: "openai" })
      yield* mock.enqueue(MockProviderServer.success({ json: { category: "billing", confidence: 0.9 } }), {
        provider: "anthropic"
      })
      const response = yield* LanguageModel.generateObject({ prompt: "I was charged twice", schema: Answer })
      assert.deepStrictEqual(response.value, { category: "billing", confidence: 0.9 })
      assert.strictEqual(response.finishReason, "stop")
      assert.deepStrictEqual([response.usage.inputTokens, response.usage.outputTokens], [12, 7])
      const evidence = EffectAi.evidence(response)
      assert.isTrue(evidence?.fallbackUsed)
      assert.deepStrictEqual(
        evidence?.attempts.map((a) => [String(a.target), a.outcome, a.httpStatus]),
        [
          [openAiRef, "unavailable", 503],
          [anthropicRef, "success", 200]
        ]
      )
      assert.deepStrictEqual(
        (yield* mock.requests).map((r) => r.provider),
        ["openai", "anthropic"]
      )
    }).pipe(Effect.provide(served("ticket.classify")))
  )

  it.effect("streamText: 503 on the primary, the fallback streams text deltas and a finish with the evidence", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(down, { provider: "openai" })
      yield* mock.enqueue(MockProviderServer.success({ text: "We will refund the charge.", chunkSize: 10 }), {
        provider: "anthropic"
      })
      const parts = Chunk.toReadonlyArray(yield* Stream.runCollect(LanguageModel.streamText({ prompt: "Refund?" })))
      assert.deepStrictEqual(
        parts.map((p) => (p.type === "text-delta" ? `delta:${p.delta}` : p.type)),
        [
          "text-start",
          "delta:We will re",
          "delta:fund the c",
          "delta:harge.",
          "response-metadata",
          "text-end",
          "finish"
        ]
      )
      const finish = parts.at(-1)
      assert.strictEqual(finish?.type === "finish" ? finish.reason : undefined, "stop")
      const evidence = finish === undefined ? undefined : EffectAi.evidence(finish)
      assert.isTrue(evidence?.fallbackUsed)
      assert.strictEqual(evidence?.target === undefined ? undefined : String(evidence.target), anthropicRef)
    }).pipe(Effect.provide(served("ticket.reply")))
  )

  it.effect("the typed gateway error is the AiError's cause: Refusal is not RateLimited", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      // A refusal: no fallback (another model would be asked the same thing).
      yield* mock.enqueue(MockProviderServer.success({ refusal: "I can't help with that." }), { provider: "openai" })
      const refused = yield* Effect.flip(LanguageModel.generateObject({ prompt: "x", schema: Answer }))
      assert.isTrue(AiError.isAiError(refused))
      assert.strictEqual(refused._tag, "UnknownError")
      assert.strictEqual(EffectAi.gatewayError(refused)?._tag, "Refusal")
      assert.strictEqual((yield* mock.requests).length, 1)

      yield* mock.reset
      const limited = MockProviderServer.failure(429, {
        headers: { "retry-after": "30" },
        error: { code: "rate_limit_exceeded" }
      })
      yield* mock.enqueue(limited, { provider: "openai" })
      yield* mock.enqueue(
        MockProviderServer.failure(429, { headers: { "retry-after": "30" }, error: { type: "rate_limit_error" } }),
        { provider: "anthropic" }
      )
      const rateLimited = yield* Effect.flip(LanguageModel.generateObject({ prompt: "x", schema: Answer }))
      const cause = EffectAi.gatewayError(rateLimited)
      assert.strictEqual(cause?._tag, "RateLimited")
      assert.match(rateLimited.message, /^ModelGateway\.generateText: RateLimited: /)
    }).pipe(Effect.provide(served("ticket.classify")))
  )

  it.effect("streamText: a stream whose every route is down fails with ProviderUnavailable as the cause", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(down, { provider: "openai" })
      yield* mock.enqueue(down, { provider: "anthropic" })
      const error = yield* Effect.flip(Stream.runDrain(LanguageModel.streamText({ prompt: "Refund?" })))
      assert.strictEqual(EffectAi.gatewayError(error)?._tag, "ProviderUnavailable")
    }).pipe(Effect.provide(served("ticket.reply")))
  )

  it.effect("per-call schemas: the same JSON Schema is served; a different one fails before any provider call", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      // Declared again, with documentation only: the same JSON Schema once `description` is set aside.
      const SameShape = Schema.Struct({
        category: Schema.Literal("billing", "other").annotations({ description: "ticket kind" }),
        confidence: Schema.Number
      })
      yield* mock.enqueue(MockProviderServer.success({ json: { category: "other", confidence: 0.4 } }), {
        provider: "openai"
      })
      const same = yield* LanguageModel.generateObject({ prompt: "x", schema: SameShape })
      assert.deepStrictEqual(same.value, { category: "other", confidence: 0.4 })

      const Different = Schema.Struct({ category: Schema.String })
      const error = yield* Effect.flip(LanguageModel.generateObject({ prompt: "x", schema: Different }))
      assert.strictEqual(error._tag, "MalformedInput")
      const mismatch = EffectAi.schemaMismatch(error)
      assert.deepStrictEqual([mismatch?.workflow, mismatch?.reason], ["ticket.classify", "different_schema"])
      assert.strictEqual((yield* mock.requests).length, 1)
    }).pipe(Effect.provide(served("ticket.classify")))
  )

  it.effect("per-call schemas: a workflow without an output schema serves no generateObject", () =>
    Effect.gen(function* () {
      const mock = yield* MockProviderServer
      const error = yield* Effect.flip(LanguageModel.generateObject({ prompt: "x", schema: Answer }))
      assert.strictEqual(EffectAi.schemaMismatch(error)?.reason, "no_output_schema")
      assert.strictEqual((yield* mock.requests).length, 0)
      // generateText on the same workflow is served.
      yield* mock.enqueue(MockProviderServer.success({ text: "hello" }), { provider: "openai" })
      assert.strictEqual((yield* LanguageModel.generateText({ prompt: "x" })).text, "hello")
    }).pipe(Effect.provide(served("ticket.reply")))
  )

  it.effect(
    "tool calls round-trip through a Toolkit, and the prompt (system, image, tool result) maps onto the wire",
    () => {
      const LookupOrder = Tool.make("lookup_order", {
        description: "Find an order by id.",
        parameters: { id: Schema.String },
        success: Schema.Struct({ charged: Schema.Number })
      }).annotate(Tool.Readonly, true)
      const Tools = Toolkit.make(LookupOrder)
      const ToolsLive = Tools.toLayer({ lookup_order: ({ id }) => Effect.succeed({ charged: id === "A-1" ? 2 : 0 }) })
      return Effect.gen(function* () {
        const mock = yield* MockProviderServer
        yield* mock.enqueue(
          [
            callsTools([{ id: "call_1", name: "lookup_order", arguments: { id: "A-1" } }]),
            MockProviderServer.success({ text: "You were charged twice; refunded." })
          ],
          { provider: "openai" }
        )
        const prompt = Prompt.make([
          { role: "system", content: "Be terse." },
          {
            role: "user",
            content: [
              { type: "text", text: "Why two charges?" },
              { type: "file", mediaType: "image/png", data: new Uint8Array([1, 2, 3]) }
            ]
          }
        ])
        const first = yield* LanguageModel.generateText({ prompt, toolkit: Tools })
        assert.strictEqual(first.finishReason, "tool-calls")
        assert.deepStrictEqual(
          first.toolCalls.map((c) => [c.id, c.name, c.params]),
          [["call_1", "lookup_order", { id: "A-1" }]]
        )
        assert.deepStrictEqual(
          first.toolResults.map((r) => [r.id, r.result]),
          [["call_1", { charged: 2 }]]
        )
        const second = yield* LanguageModel.generateText({
          prompt: Prompt.merge(prompt, Prompt.fromResponseParts(first.content)),
          toolkit: Tools
        })
        assert.strictEqual(second.text, "You were charged twice; refunded.")

        const [out, back] = (yield* mock.requests).map(bodyOf)
        assert.deepStrictEqual(out?.tools, [
          {
            type: "function",
            function: {
              name: "lookup_order",
              description: "Find an order by id.",
              parameters: {
                type: "object",
                required: ["id"],
                properties: { id: { type: "string" } },
                additionalProperties: false
              }
            }
          }
        ])
        assert.deepStrictEqual(back?.messages, [
          { role: "system", content: "Be terse." },
          {
            role: "user",
            content: [
              { type: "text", text: "Why two charges?" },
              { type: "image_url", image_url: { url: "data:image/png;base64,AQID" } }
            ]
          },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "lookup_order", arguments: '{"id":"A-1"}' } }
            ]
          },
          { role: "tool", tool_call_id: "call_1", content: '{"charged":2}' }
        ])
      }).pipe(Effect.provide(Layer.merge(served("ticket.reply"), ToolsLive)))
    }
  )
  it.effect(
    "a Toolkit tool without Tool.Readonly is side-effecting: a maybe-processed 500 stops with AmbiguousOutcome",
    () => {
      const Refund = Tool.make("refund", { parameters: { orderId: Schema.String }, success: Schema.Boolean })
      const Lookup = Tool.make("lookup", { parameters: { orderId: Schema.String }, success: Schema.Boolean }).annotate(
        Tool.Readonly,
        true
      )
      const ToolsLive = Layer.merge(
        Toolkit.make(Refund).toLayer({ refund: () => Effect.succeed(true) }),
        Toolkit.make(Lookup).toLayer({ lookup: () => Effect.succeed(true) })
      )
      return Effect.gen(function* () {
        const mock = yield* MockProviderServer
        const failed = MockProviderServer.failure(500, { error: { type: "server_error" } })
        yield* mock.enqueue(failed, { provider: "openai" })
        const error = yield* Effect.flip(
          LanguageModel.generateText({ prompt: "Refund A-1", toolkit: Toolkit.make(Refund) })
        )
        assert.strictEqual(EffectAi.gatewayError(error)?._tag, "AmbiguousOutcome")
        assert.deepStrictEqual(
          (yield* mock.requests).map((r) => r.provider),
          ["openai"]
        )

        // The same failure with a read-only tool falls back.
        yield* mock.reset
        yield* mock.enqueue(failed, { provider: "openai" })
        yield* mock.enqueue(MockProviderServer.success({ text: "Found it." }), { provider: "anthropic" })
        const answer = yield* LanguageModel.generateText({ prompt: "Find A-1", toolkit: Toolkit.make(Lookup) })
        assert.strictEqual(answer.text, "Found it.")
        assert.deepStrictEqual(
          (yield* mock.requests).map((r) => r.provider),
          ["openai", "anthropic"]
        )
      }).pipe(Effect.provide(Layer.merge(served("ticket.reply"), ToolsLive)))
    }
  )

  it.effect("streamText with a Toolkit: tool-call deltas, the call, and its result from the handler", () => {
    const LookupOrder = Tool.make("lookup_order", {
      parameters: { id: Schema.String },
      success: Schema.Struct({ charged: Schema.Number })
    }).annotate(Tool.Readonly, true)
    const Tools = Toolkit.make(LookupOrder)
    const ToolsLive = Tools.toLayer({ lookup_order: () => Effect.succeed({ charged: 2 }) })
    return Effect.gen(function* () {
      const mock = yield* MockProviderServer
      yield* mock.enqueue(callsTools([{ id: "call_3", name: "lookup_order", arguments: { id: "A-1" } }], 5), {
        provider: "openai"
      })
      const parts = Chunk.toReadonlyArray(
        yield* Stream.runCollect(LanguageModel.streamText({ prompt: "Why two charges?", toolkit: Tools }))
      )
      assert.deepStrictEqual(
        parts.flatMap((p) =>
          p.type === "tool-params-start"
            ? [`start:${p.id}:${p.name}`]
            : p.type === "tool-params-delta"
              ? [`delta:${p.delta}`]
              : p.type === "tool-params-end"
                ? [`end:${p.id}`]
                : p.type === "tool-call"
                  ? [`call:${p.id}:${JSON.stringify(p.params)}`]
                  : p.type === "tool-result"
                    ? [`result:${p.id}:${JSON.stringify(p.result)}`]
                    : p.type === "finish"
                      ? [`finish:${p.reason}`]
                      : []
        ),
        [
          "start:call_3:lookup_order",
          'delta:{"id"',
          'delta::"A-1',
          'delta:"}',
          "end:call_3",
          'call:call_3:{"id":"A-1"}',
          "finish:tool-calls",
          'result:call_3:{"charged":2}'
        ]
      )
    }).pipe(Effect.provide(Layer.merge(served("ticket.reply"), ToolsLive)))
  })
})

describe("EffectAi.toolLoopTool: one @effect/ai Tool definition, used by ToolLoop", () => {
  it.effect(
    "schemas, readonly annotation and handler carry over; the side-effecting call goes through the ledger",
    () => {
      const Refund = Tool.make("issue_refund", {
        description: "Refunds an order.",
        parameters: { orderId: Schema.String.pipe(Schema.pattern(/^A-\d$/)) },
        success: Schema.Struct({ refundId: Schema.String })
      })
      const Lookup = Tool.make("lookup_order", {
        parameters: { orderId: Schema.String },
        success: Schema.Struct({ charged: Schema.Number })
      }).annotate(Tool.Readonly, true)
      const refunded: Array<string> = []
      const refund = EffectAi.toolLoopTool(Refund, ({ orderId }, context) =>
        Effect.sync(() => {
          refunded.push(`${orderId}@${context.idempotencyKey ?? "none"}`)
          return { refundId: `R-${refunded.length}` }
        })
      )
      const lookup = EffectAi.toolLoopTool(Lookup, ({ orderId }) =>
        Effect.succeed({ charged: orderId === "A-1" ? 2 : 0 })
      )
      assert.deepStrictEqual([refund.definition.sideEffecting, lookup.definition.sideEffecting], [true, false])
      assert.deepStrictEqual([refund.info.description, lookup.info.description], ["Refunds an order.", "lookup_order"])
      return Effect.gen(function* () {
        const mock = yield* MockProviderServer
        yield* mock.enqueue(
          [
            // A bad argument first: it goes back to the model as a tool error and runs nothing.
            callsTools([{ id: "c1", name: "issue_refund", arguments: { orderId: "nope" } }]),
            callsTools([
              { id: "c2", name: "lookup_order", arguments: { orderId: "A-1" } },
              { id: "c3", name: "issue_refund", arguments: { orderId: "A-1" } }
            ]),
            MockProviderServer.success({ text: "Refunded." })
          ],
          { provider: "openai" }
        )
        const command = ModelCommand.decodeUnknown({
          workflow: "ticket.reply",
          tenant: "acme",
          runId: "run-effect-ai",
          messages: [{ _tag: "user", content: "I was charged twice for A-1" }]
        })
        const outcome = yield* ToolLoop.run(yield* command, [refund, lookup], { maxSteps: 4 })
        assert.strictEqual(outcome._tag, "Completed")
        assert.strictEqual(outcome._tag === "Completed" ? outcome.result.content.text : undefined, "Refunded.")
        assert.strictEqual(refunded.length, 1)
        assert.match(refunded[0] ?? "", /^A-1@/)
        const ledger = yield* ToolLedger.ToolLedger
        assert.deepStrictEqual(
          (yield* ledger.records("run-effect-ai")).map((r) => [r.tool, r.status]),
          [["issue_refund", "completed"]]
        )
        // The model was offered both tools with the Tool's own parameters.
        const offered = Schema.decodeUnknownSync(
          Schema.Array(Schema.Struct({ function: Schema.Struct({ name: Schema.String, parameters: Schema.Unknown }) }))
        )(bodyOf((yield* mock.requests)[0]).tools)
        assert.deepStrictEqual(
          offered.map((t) => t.function.name),
          ["issue_refund", "lookup_order"]
        )
        assert.deepStrictEqual(offered[0]?.function.parameters, ToolLoop.parametersJsonSchema(Refund.parametersSchema))
      }).pipe(Effect.provide(Layer.merge(GatewayLayer, ToolLedger.layerMemory)))
    }
  )
})
