import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const read = (relative: string) => readFileSync(fileURLToPath(new URL(relative, import.meta.url)), "utf8")

describe("docs/effect-ai.md", () => {
  it("shows exactly the example that the typecheck compiles (examples/readme/effectAi.ts)", () => {
    const readme = read("../../docs/effect-ai.md")
    const block = /<!-- readme-effect-ai:start -->\n```ts\n([\s\S]*?)```\n<!-- readme-effect-ai:end -->/.exec(readme)
    expect(block).not.toBeNull()
    const source = read("../readme/effectAi.ts").split("\n").slice(1).join("\n")
    expect(block?.[1]).toBe(source)
  })
})
