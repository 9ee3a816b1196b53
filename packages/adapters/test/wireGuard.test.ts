import { Arbitrary, Either, FastCheck as fc, Schema } from "effect"
import { assert, describe, it } from "vitest"
import { EventWire, MessageWire } from "../src/internal/anthropicMessages.js"
import { ChunkWire, CompletionWire } from "../src/internal/chatCompletions.js"
import { ResponseWire } from "../src/internal/geminiGenerate.js"
import { compiles, guard } from "../src/internal/wireGuard.js"

/** `value` with the slot number `at` (depth first over objects and arrays) replaced or deleted. */
const mutate = (value: unknown, at: number, replacement: unknown, remove: boolean): unknown => {
  let slot = 0
  const go = (node: unknown): unknown => {
    if (typeof node !== "object" || node === null) return node
    if (Array.isArray(node)) {
      return node.map((item) => (slot++ === at ? replacement : go(item)))
    }
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(node)) {
      if (slot++ === at) {
        if (!remove) out[key] = replacement
      } else {
        out[key] = go(item)
      }
    }
    return out
  }
  return slot === at ? replacement : go(value)
}

/** Valid values, near misses (one field replaced by any JSON value or removed), and any JSON. */
const inputs = <A>(schema: Schema.Schema<A, A>): fc.Arbitrary<unknown> => {
  const valid = Arbitrary.make(schema)
  const nearMiss = fc
    .tuple(valid, fc.nat({ max: 40 }), fc.jsonValue({ maxDepth: 2 }), fc.boolean())
    .map(([value, at, replacement, remove]) => mutate(value, at, replacement, remove))
  return fc.oneof(valid, nearMiss, nearMiss, fc.jsonValue({ maxDepth: 3 }))
}

/** The guard of `schema` answers as its decoding does, over valid values, near misses and any JSON. */
const agrees = <A>(name: string, schema: Schema.Schema<A, A>) =>
  it(`${name}: compiled, and accepts exactly what the schema decodes`, () => {
    assert.isTrue(compiles(schema))
    const is = guard(schema)
    const decode = Schema.decodeUnknownEither(schema)
    let accepted = 0
    let refused = 0
    fc.assert(
      fc.property(inputs(schema), (input) => {
        const expected = Either.isRight(decode(input))
        if (expected) accepted++
        else refused++
        assert.strictEqual(is(input), expected, JSON.stringify(input))
      }),
      { numRuns: 2_000, seed: 27 }
    )
    // Both sides of the question were asked.
    assert.isAbove(accepted, 100)
    assert.isAbove(refused, 100)
  })

describe("wire guards: the same answers as decoding the schema", () => {
  agrees("Chat Completions completion", CompletionWire)
  agrees("Chat Completions chunk", ChunkWire)
  agrees("Anthropic message", MessageWire)
  agrees("Anthropic stream event", EventWire)
  agrees("Gemini response", ResponseWire)

  it("a schema with a refinement is checked by decoding it", () => {
    const schema = Schema.Struct({ n: Schema.Int })
    assert.isFalse(compiles(schema))
    const is = guard(schema)
    assert.isTrue(is({ n: 1 }))
    assert.isFalse(is({ n: 1.5 }))
  })

  it("an absent optional key passes, an explicit undefined in it too; null only where the schema allows", () => {
    const is = guard(Schema.Struct({ a: Schema.optional(Schema.String), b: Schema.NullOr(Schema.Number) }))
    assert.isTrue(is({ b: null }))
    assert.isTrue(is({ a: undefined, b: 1 }))
    assert.isFalse(is({ a: null, b: 1 }))
    assert.isFalse(is({ a: "x" }))
    assert.isFalse(is([]))
    assert.isFalse(is(null))
  })
})
