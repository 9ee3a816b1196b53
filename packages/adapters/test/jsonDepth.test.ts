import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { maxJsonDepth, parseJson } from "../src/internal/http.js"

describe("provider JSON is bounded", () => {
  it("a JSON bomb nested a million levels deep is refused as malformed, not a crash later", () => {
    const depth = 1_000_000
    const bomb = `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"t","args":${"[".repeat(depth)}${"]".repeat(depth)}}}]}}]}`
    expect(Either.isLeft(parseJson(bomb))).toBe(true)
  })

  it("ordinary responses, up to the depth limit, parse", () => {
    const ok = `${"[".repeat(maxJsonDepth - 1)}1${"]".repeat(maxJsonDepth - 1)}`
    expect(Either.isRight(parseJson(ok))).toBe(true)
    expect(parseJson('{"a":{"b":[1,2,{"c":null}]}}')).toStrictEqual(Either.right({ a: { b: [1, 2, { c: null }] } }))
    expect(Either.isLeft(parseJson("{not json"))).toBe(true)
  })
})
