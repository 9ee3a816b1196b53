/**
 * `serve` as a user runs it: the first line it prints, the official client with the printed dev
 * key, a wrong key, `curl` (when installed) for a plain call and a stream, and SIGTERM.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
const firstLine = /^modelgate server listening on (http:\/\/127\.0\.0\.1:\d+\/v1) \(dev key: (\S+)\)$/

let child: ChildProcess
let baseURL = ""
let key = ""
let line = ""

const hasCurl = (() => {
  try {
    execFileSync("curl", ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
})()

beforeAll(async () => {
  child = spawn(process.execPath, ["--conditions=source", "--import", "tsx", main, "--port", "0"], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  line = await new Promise<string>((resolve) => {
    let out = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const end = out.indexOf("\n")
      if (end !== -1) resolve(out.slice(0, end))
    })
  })
  const match = firstLine.exec(line)
  baseURL = match?.[1] ?? ""
  key = match?.[2] ?? ""
}, 60_000)

afterAll(() => {
  child.kill("SIGKILL")
})

describe("serve", () => {
  it("prints the address and a dev key as its first line", () => {
    expect(line).toMatch(firstLine)
  })

  it("answers the official client with the printed key, and refuses a wrong one with 401", async () => {
    const client = new OpenAI({ apiKey: key, baseURL, maxRetries: 0 })
    const answer = await client.chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hi" }] })
    expect(answer.choices[0]?.message.content).toContain("Hello")
    let text = ""
    for await (const chunk of await client.chat.completions.create({
      model: "gpt-4o-mini",
      stream: true,
      messages: [{ role: "user", content: "hi" }]
    }))
      text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toContain("Hello")
    await expect(new OpenAI({ apiKey: "wrong", baseURL, maxRetries: 0 }).models.list()).rejects.toMatchObject({
      status: 401
    })
  })

  it.runIf(hasCurl)("curl: a call with its evidence headers, and a stream ending in [DONE]", () => {
    const body = JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }] })
    const plain = execFileSync(
      "curl",
      ["-s", "-i", "-H", `authorization: Bearer ${key}`, "-d", body, `${baseURL}/chat/completions`],
      {
        encoding: "utf8"
      }
    )
    expect(plain).toMatch(/^HTTP\/1\.1 200/)
    expect(plain).toMatch(/x-modelgate-call-id: mg_/i)
    const streamBody = JSON.stringify({ model: "chat", stream: true, messages: [{ role: "user", content: "hi" }] })
    const streamed = execFileSync(
      "curl",
      ["-s", "-N", "-H", `authorization: Bearer ${key}`, "-d", streamBody, `${baseURL}/chat/completions`],
      {
        encoding: "utf8"
      }
    )
    expect(streamed.trim().endsWith("data: [DONE]")).toBe(true)
    expect(streamed).toContain('"modelgate":{')
  })

  it("SIGTERM drains and exits", async () => {
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    child.kill("SIGTERM")
    expect(await exited).toBe(0)
  })
})
