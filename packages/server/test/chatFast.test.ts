/**
 * The chat body's fast path gives exactly what the Schema decodes, or leaves the body to it; so
 * does the fast path of its command (against `ModelCommand.decodeUnknown`).
 */
import { ModelCommand, Tenancy, Workflow } from "@modelgate/core"
import { Arbitrary, Effect, Either, FastCheck as fc, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { chatRequest, command } from "../src/internal/chatFast.js"
import { ChatRequest, commandOf } from "../src/internal/chatWire.js"

const decode = Schema.decodeUnknownEither(ChatRequest, { errors: "all" })
const encode = Schema.encodeSync(ChatRequest)

/** The fast path either declines or agrees with the schema, value for value; true when it answered. */
const agrees = (json: unknown): boolean => {
  const fast = chatRequest(json)
  if (fast === undefined) return false
  const slow = decode(json)
  expect(Either.isRight(slow)).toBe(true)
  if (Either.isRight(slow)) expect(fast).toStrictEqual(slow.right)
  return true
}

const roles = fc.constantFrom("system", "developer", "user", "assistant", "user", "tool")
const scalar = fc.oneof(
  { weight: 12, arbitrary: fc.constant(undefined) },
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string()
)
/** Bodies near the fast path's shape: right and wrong roles, scalars of every type, stray fields. */
const nearBody = fc.record(
  {
    model: fc.oneof(fc.string({ maxLength: 210 }), fc.integer()),
    messages: fc.array(
      fc.oneof(
        { weight: 8, arbitrary: fc.record({ role: roles, content: fc.string() }) },
        { weight: 1, arbitrary: fc.record({ role: roles, content: fc.constant(null) }) },
        { weight: 1, arbitrary: fc.record({ role: roles, content: fc.string(), name: fc.string() }) }
      ),
      { minLength: 1, maxLength: 3 }
    ),
    stream: scalar,
    temperature: scalar,
    top_p: scalar,
    max_tokens: scalar,
    max_completion_tokens: scalar,
    seed: scalar,
    presence_penalty: scalar,
    frequency_penalty: scalar,
    user: scalar,
    n: fc.oneof(fc.constant(undefined), scalar),
    stream_options: fc.constantFrom(undefined, { include_usage: true })
  },
  { requiredKeys: ["model", "messages"] }
)

describe("the chat body's fast path", () => {
  it("answers the common body, the same value as the schema", () => {
    const body = {
      model: "chat",
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hello" }
      ],
      stream: false,
      temperature: 0.2,
      max_tokens: 64,
      user: "u-1"
    }
    const fast = chatRequest(body)
    expect(fast).toBeDefined()
    agrees(body)
  })

  it("leaves every other shape to the schema", () => {
    const base = { model: "chat", messages: [{ role: "user", content: "hi" }] }
    for (const json of [
      null,
      [],
      "text",
      { ...base, model: "" },
      { ...base, model: "m".repeat(201) },
      { ...base, messages: [] },
      { ...base, messages: [{ role: "tool", content: "x" }] },
      { ...base, messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
      { ...base, messages: [{ role: "user", content: "hi", name: "x" }] },
      { ...base, n: 2 },
      { ...base, tools: [] },
      { ...base, stream: "yes" },
      { ...base, max_tokens: 1.5 },
      { ...base, seed: 2 ** 60 },
      JSON.parse('{"model":"chat","messages":[{"role":"user","content":"hi"}],"__proto__":{"x":1}}')
    ])
      expect(chatRequest(json)).toBeUndefined()
  })

  it("agrees with the schema on bodies generated near its shape", () => {
    let answered = 0
    fc.assert(
      fc.property(nearBody, (json) => {
        if (agrees(JSON.parse(JSON.stringify(json)))) answered++
      }),
      { numRuns: 3000 }
    )
    // The agreement is checked on bodies the fast path answers, so enough of them must be answered.
    expect(answered).toBeGreaterThan(40)
  })

  it("agrees with the schema on bodies generated from the schema", () => {
    fc.assert(
      fc.property(Arbitrary.make(ChatRequest), (value) => {
        agrees(JSON.parse(JSON.stringify(encode(value))))
      }),
      { numRuns: 500 }
    )
  })
})

const workflow = Schema.decodeSync(Workflow.Workflow.fields.name)("chat")
const tenant = Schema.decodeSync(Tenancy.TenantId)("acme")

/** The command's fast path either declines or gives what core decodes; true when it answered. */
const commandAgrees = (body: ChatRequest): boolean => {
  const fast = command(body, workflow, tenant)
  if (fast === undefined) return false
  const slow = Effect.runSync(Effect.either(ModelCommand.decodeUnknown({ ...commandOf(body), workflow, tenant })))
  expect(Either.isRight(slow)).toBe(true)
  if (Either.isRight(slow)) expect(fast).toStrictEqual(slow.right)
  return true
}

const decoded = (json: unknown): ChatRequest => Schema.decodeUnknownSync(ChatRequest)(json)

describe("the chat command's fast path", () => {
  it("builds the common command, the same value as core's decode", () => {
    const body = decoded({
      model: "chat",
      messages: [
        { role: "developer", content: "be brief" },
        { role: "user", content: "hello" },
        { role: "assistant", content: "hi" },
        { role: "user", content: "again" }
      ],
      max_tokens: 64,
      stream: true,
      temperature: 0.2,
      top_p: 1,
      seed: 7,
      presence_penalty: -2,
      frequency_penalty: 0.5,
      user: "u-1"
    })
    expect(commandAgrees(body)).toBe(true)
    expect(commandAgrees(decoded({ model: "chat", messages: [{ role: "user", content: "hello" }] }))).toBe(true)
  })

  it("leaves every other command to core's decode", () => {
    const base = { model: "chat", messages: [{ role: "user", content: "hi" }] }
    for (const json of [
      { ...base, temperature: 2.5 },
      { ...base, top_p: 1.5 },
      { ...base, seed: -1 },
      { ...base, presence_penalty: -3 },
      { ...base, frequency_penalty: 2.1 },
      { ...base, user: "u 1" },
      { ...base, user: "" },
      { ...base, stop: "x" },
      { ...base, parallel_tool_calls: true },
      { ...base, reasoning_effort: "low" },
      { ...base, max_tokens: 0 },
      { ...base, max_completion_tokens: 100_000_001 },
      { ...base, tools: [{ type: "function", function: { name: "f" } }] },
      { ...base, tool_choice: "auto" },
      { ...base, messages: [{ role: "user", content: "x".repeat(2_000_001) }] },
      { ...base, messages: Array.from({ length: 10_001 }, () => ({ role: "user", content: "x" })) },
      { ...base, messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] },
      { ...base, messages: [{ role: "assistant", content: null }] },
      { ...base, messages: [{ role: "assistant", content: "a", tool_calls: [] }] },
      { ...base, messages: [{ role: "tool", tool_call_id: "c", content: "x" }] }
    ])
      expect(command(decoded(json), workflow, tenant)).toBeUndefined()
  })

  it("agrees with core's decode where core refuses: the fast path never answers those", () => {
    const base = { model: "chat", messages: [{ role: "user", content: "hi" }] }
    for (const json of [
      { ...base, max_tokens: -1 },
      { ...base, temperature: 2.5 },
      { ...base, seed: 2_147_483_648 },
      { ...base, user: "u 1" },
      { ...base, messages: [{ role: "user", content: "x".repeat(2_000_001) }] }
    ]) {
      const body = decoded(json)
      const slow = Effect.runSync(Effect.either(ModelCommand.decodeUnknown({ ...commandOf(body), workflow, tenant })))
      expect(Either.isLeft(slow)).toBe(true)
      expect(command(body, workflow, tenant)).toBeUndefined()
    }
  })

  it("agrees with core's decode on bodies generated near its shape", () => {
    let answered = 0
    fc.assert(
      fc.property(nearBody, (json) => {
        const body = Schema.decodeUnknownEither(ChatRequest)(JSON.parse(JSON.stringify(json)))
        if (Either.isRight(body) && commandAgrees(body.right)) answered++
      }),
      { numRuns: 3000 }
    )
    expect(answered).toBeGreaterThan(20)
  })

  it("agrees with core's decode on sampling options at and past their ranges", () => {
    const near = (...edges: Array<number>) =>
      fc.oneof(
        fc.constant(undefined),
        fc.constant(null),
        fc.constantFrom(...edges.flatMap((e) => [e, e + 1e-9, e - 1e-9, e + 0.5, e - 0.5]))
      )
    const sampled = fc.record({
      temperature: near(0, 2),
      top_p: near(0, 1),
      seed: fc.oneof(fc.constant(undefined), fc.constantFrom(-1, 0, 1, 2_147_483_647, 2_147_483_648)),
      presence_penalty: near(-2, 2),
      frequency_penalty: near(-2, 2),
      user: fc.oneof(fc.constant(undefined), fc.stringMatching(/^[A-Za-z0-9._: -]{0,130}$/))
    })
    let answered = 0
    let refused = 0
    fc.assert(
      fc.property(sampled, (options) => {
        const body = decoded(
          JSON.parse(JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }], ...options }))
        )
        if (commandAgrees(body)) answered++
        else refused++
      }),
      { numRuns: 2000 }
    )
    expect(answered).toBeGreaterThan(20)
    expect(refused).toBeGreaterThan(20)
  })

  it("agrees with core's decode on bodies generated from the schema", () => {
    fc.assert(
      fc.property(Arbitrary.make(ChatRequest), (value) => {
        commandAgrees(decoded(JSON.parse(JSON.stringify(encode(value)))))
      }),
      { numRuns: 500 }
    )
  })
})
