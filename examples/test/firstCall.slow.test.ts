/**
 * The README's first program, run as the README shows it: the block between
 * `<!-- first-call:start -->` and `<!-- first-call:end -->` is written to a file of the examples
 * package and run on Node (`--import tsx`, the workspace's sources) with `OPENAI_BASE_URL` set to
 * what the `modelgate-mock` bin prints on its first line. It makes one real HTTP call through the
 * OpenAI adapter and prints the answer and its cost.
 */
import { execFile } from "node:child_process"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type MockProcess, startMock } from "./mockProcess.js"
import { firstCallBlock } from "./readmeBlocks.js"

const examples = fileURLToPath(new URL("..", import.meta.url))
const artifacts = join(examples, "test-artifacts", `first-call-${process.pid}`)

let mock: MockProcess

beforeAll(async () => {
  mock = await startMock(["--text", "Bonjour !"])
}, 60_000)

afterAll(async () => {
  await mock?.stop()
  rmSync(artifacts, { recursive: true, force: true })
})

describe("README: the first program against modelgate-mock", () => {
  it("answers through OPENAI_BASE_URL and prints the text and its cost", async () => {
    const block = firstCallBlock()
    expect(block).toBeDefined()
    mkdirSync(artifacts, { recursive: true })
    const file = join(artifacts, "first-call.ts")
    writeFileSync(file, block ?? "")
    const { stdout } = await promisify(execFile)(process.execPath, ["--conditions=source", "--import", "tsx", file], {
      cwd: examples,
      env: { ...process.env, OPENAI_BASE_URL: mock.baseUrl, OPENAI_API_KEY: "sk-test", NO_COLOR: "1" },
      timeout: 90_000
    })
    // `Console.log(text, cost)`: the mock's answer, then the cost priced by the catalogue
    // (12 input and 7 output tokens of gpt-4.1-mini).
    const line = stdout.split("\n").find((l) => l.startsWith("Bonjour !"))
    expect(line, stdout).toBeDefined()
    const cost = Number(line?.slice("Bonjour !".length).trim())
    expect(cost).toBeCloseTo((12 * 0.4 + 7 * 1.6) / 1_000_000, 12)
  }, 120_000)
})
