/**
 * The `modelgate-mock` bin as a user runs it: its own process (from the workspace's source, as the
 * root `mock` script runs it), read up to its banner — the OpenAI base URL on the first line, then
 * one `NAME=url` line per SDK variable — and stopped with SIGTERM.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const examples = fileURLToPath(new URL("..", import.meta.url))
const bin = fileURLToPath(new URL("../../packages/testing/src/bin/modelgate-mock.ts", import.meta.url))

/** A running mock: its first line, its variables, and how to stop it. */
export interface MockProcess {
  readonly baseUrl: string
  readonly env: Readonly<Record<string, string>>
  readonly stop: () => Promise<void>
}

/** Starts the bin with `args` and resolves once its banner (five lines) is printed. */
export const startMock = (args: ReadonlyArray<string>): Promise<MockProcess> =>
  new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ["--conditions=source", "--import", "tsx", bin, ...args], {
      cwd: examples,
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    const stop = () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done()
        child.once("exit", () => done())
        child.kill("SIGTERM")
      })
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString()
    })
    child.once("exit", (code) => reject(new Error(`modelgate-mock exited (${code}) before its banner: ${err}`)))
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const lines = out.split("\n")
      if (lines.length < 6) return
      const [baseUrl = "", ...rest] = lines.slice(0, 5)
      const env = Object.fromEntries(
        rest.map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)])
      )
      resolve({ baseUrl, env, stop })
    })
  })
