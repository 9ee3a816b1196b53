/**
 * A loopback OpenAI-wire upstream for tests that need a call held in flight: every request is
 * answered with one chat completion, but while the gate is closed the answer waits until
 * `open()` (no timers). `received()` resolves when the next request arrives.
 */
import * as Http from "node:http"

export interface GatedUpstream {
  /** `http://127.0.0.1:<port>/v1` */
  readonly baseUrl: string
  /** Holds the answers of requests from now on until {@link open}. */
  readonly close: () => void
  /** Answers every held request, and later ones at once. */
  readonly open: () => void
  /** Resolves when the next request has arrived. */
  readonly received: () => Promise<void>
  readonly stop: () => Promise<void>
}

const completion = (model: string) =>
  JSON.stringify({
    id: "chatcmpl-gated",
    object: "chat.completion",
    created: 1,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: "held answer" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }
  })

export const startGatedUpstream = async (): Promise<GatedUpstream> => {
  let held: Array<() => void> | undefined
  let arrivals: Array<() => void> = []
  const server = Http.createServer((req, res) => {
    let text = ""
    req.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8")
    })
    req.on("end", () => {
      const body: unknown = JSON.parse(text)
      const model =
        typeof body === "object" && body !== null && "model" in body && typeof body.model === "string"
          ? body.model
          : "unknown"
      const answer = () => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(completion(model))
      }
      if (held === undefined) answer()
      else held.push(answer)
      const waiting = arrivals
      arrivals = []
      for (const arrived of waiting) arrived()
    })
  })
  await new Promise<void>((resolve) => server.listen({ host: "127.0.0.1", port: 0 }, resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () => {
      held ??= []
    },
    open: () => {
      const waiting = held ?? []
      held = undefined
      for (const answer of waiting) answer()
    },
    received: () => new Promise<void>((resolve) => arrivals.push(resolve)),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
