/**
 * The chat body's fast path gives exactly what the Schema decodes, or leaves the body to it.
 */
import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { chatRequest } from "../src/internal/chatFast.js"
import { ChatRequest } from "../src/internal/chatWire.js"

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
