/**
 * SIGHUP end to end: `serve --config <file>` as a child process on a temporary file. A rewritten
 * file with a rotated key is applied (logged to stderr, the new key answers, the old one gets 401);
 * a file that is not JSON is rejected (logged with its problem, the running keys still answer); the
 * dev default logs that it has nothing to reload. Each wait is for a line of the child's output.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayConfig } from "../src/DevDefault.js"
import { hashKey } from "../src/Keys.js"
import { type GatedUpstream, startGatedUpstream } from "./gatedUpstream.js"

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))

/** A child's output as it comes, and a wait for the first line matching a pattern from here on. */
const lines = (stream: NodeJS.ReadableStream | null) => {
  let text = ""
  let from = 0
  const waiting: Array<() => void> = []
  stream?.on("data", (chunk: Buffer) => {
    text += chunk.toString()
    for (const check of waiting.splice(0)) check()
  })
  return (pattern: RegExp): Promise<string> =>
    new Promise((resolve) => {
      const check = () => {
        const found = text
          .slice(from)
          .split("\n")
          .find((line) => pattern.test(line))
        if (found === undefined) return void waiting.push(check)
        from = text.length
        resolve(found)
      }
      check()
    })
}

const spawnServe = (args: ReadonlyArray<string>) =>
  spawn(process.execPath, ["--conditions=source", "--import", "tsx", main, ...args], {
    stdio: ["ignore", "pipe", "pipe"]
  })

let upstream: GatedUpstream
let dir = ""
const children: Array<ChildProcess> = []
beforeAll(async () => {
  upstream = await startGatedUpstream()
  dir = mkdtempSync(join(tmpdir(), "modelgate-reload-"))
})
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL")
  rmSync(dir, { recursive: true, force: true })
  await upstream.stop()
})

const fileJson = (keyId: string) => ({
  listen: { port: 0 },
  keys: [{ id: keyId, sha256: hashKey(`key-${keyId}`), tenant: "acme", workflows: ["*"] }],
  providers: [{ id: "openai", kind: "openai", baseUrl: upstream.baseUrl }],
  gateway: { targets: [gatewayConfig.targets[0]], workflows: [gatewayConfig.workflows[0]] },
  recorder: "none"
})

const status = (base: string, keyId: string) =>
  fetch(`${base}/models`, { headers: { authorization: `Bearer key-${keyId}` } }).then((r) => r.status)

describe("serve --config and SIGHUP", () => {
  it("reloads the rewritten file, and rejects a broken one keeping the running keys", async () => {
    const file = join(dir, "server.json")
    writeFileSync(file, JSON.stringify(fileJson("before")))
    const child = spawnServe(["--config", file])
    children.push(child)
    const stdout = lines(child.stdout)
    const stderr = lines(child.stderr)
    const first = await stdout(/^modelgate server listening on /)
    const base = /(http:\/\/\S+\/v1)$/.exec(first)?.[1] ?? ""
    expect(await status(base, "before")).toBe(200)

    writeFileSync(file, JSON.stringify(fileJson("after")))
    child.kill("SIGHUP")
    expect(await stderr(/modelgate server: configuration reloaded/)).toMatch(/configVersion=cfg_/)
    expect(await status(base, "after")).toBe(200)
    expect(await status(base, "before")).toBe(401)

    writeFileSync(file, "{ not json")
    child.kill("SIGHUP")
    expect(await stderr(/modelgate server: configuration reload rejected/)).toContain("is not readable JSON")
    expect(await status(base, "after")).toBe(200)
  })

  it("the dev default logs that there is nothing to reload, and keeps serving", async () => {
    const child = spawnServe(["--port", "0"])
    children.push(child)
    const stdout = lines(child.stdout)
    const stderr = lines(child.stderr)
    const first = await stdout(/^modelgate server listening on /)
    child.kill("SIGHUP")
    expect(await stderr(/nothing to reload/)).toContain("no --config file")
    const base = /(http:\/\/\S+\/v1) /.exec(first)?.[1] ?? ""
    expect((await fetch(`${base}/models`)).status).toBe(401)
  })
})
