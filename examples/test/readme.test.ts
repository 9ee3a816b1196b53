import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const read = (relative: string) => readFileSync(fileURLToPath(new URL(relative, import.meta.url)), "utf8")

describe("docs/getting-started.md", () => {
  it("shows exactly the complete program that the typecheck compiles (examples/readme/usage.ts)", () => {
    const readme = read("../../docs/getting-started.md")
    const block = /<!-- readme-usage:start -->\n```ts\n([\s\S]*?)```\n<!-- readme-usage:end -->/.exec(readme)
    expect(block).not.toBeNull()
    const source = read("../readme/usage.ts").split("\n").slice(1).join("\n")
    expect(block?.[1]).toBe(source)
  })
})
