/**
 * The bench's mock provider server (`mockServer.ts`) started in a child process, so that
 * `process.cpuUsage()` in the bench's process counts the client side only.
 */
import { Schema } from "effect"
import { spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"

/** A running mock server: its OpenAI base URL, and `stop` (resolves when the child has exited). */
export interface MockProcess {
  readonly baseUrl: string
  readonly stop: () => Promise<void>
}

/** Starts `mockServer.ts` in a child process; resolves once it listens. */
export const startMock = async (): Promise<MockProcess> => {
  const script = fileURLToPath(new URL("./mockServer.ts", import.meta.url))
  const cwd = fileURLToPath(new URL("..", import.meta.url))
  const child = spawn(process.execPath, ["--conditions=source", "--import", "tsx", script], {
    cwd,
    stdio: ["pipe", "pipe", "inherit"]
  })
  const lines = createInterface({ input: child.stdout })
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve)
    child.once("exit", (code) => reject(new Error(`mock server exited with ${code}`)))
  })
  const info = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ openai: Schema.String })))(first)
  return {
    baseUrl: info.openai,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve())
        child.stdin?.end()
        setTimeout(() => child.kill("SIGTERM"), 2_000).unref()
      })
  }
}
