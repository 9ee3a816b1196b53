/**
 * The README's first program: the block between `<!-- first-call:start -->` and
 * `<!-- first-call:end -->` is `examples/readme/first-call.ts` (which the typecheck compiles), and
 * it is a complete program of at most 15 non-blank lines, imports included.
 * `firstCall.slow.test.ts` runs it against `modelgate-mock`.
 */
import { describe, expect, it } from "vitest"
import { firstCallBlock, read } from "./readmeBlocks.js"

describe("README: the first program", () => {
  it("is examples/readme/first-call.ts, exactly", () => {
    expect(firstCallBlock()).toBe(read("../readme/first-call.ts"))
  })

  it("has at most 15 non-blank lines, imports included, and runs itself", () => {
    const lines = (firstCallBlock() ?? "").split("\n").filter((line) => line.trim() !== "")
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.length).toBeLessThanOrEqual(15)
    expect(lines[0]).toMatch(/^import /)
    expect(lines.at(-1)).toMatch(/^NodeRuntime\.runMain\(/)
  })
})
