/**
 * The fallback lab's local server: serves the page (its script bundled by esbuild at start-up, in
 * memory) and one endpoint, `GET /api/model?primary=…&routeTimeout=…&deadline=…&secondaryContract=…&secondary=…`,
 * which runs the real engine under TestClock (`computeScenario`) and answers the model as JSON.
 * It listens on 127.0.0.1 only and makes no other network call.
 */
import { readFile } from "node:fs/promises"
import { createServer, type Server } from "node:http"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import * as esbuild from "esbuild"
import { computeScenario, parseScenario, type ScenarioModel } from "../model.js"

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))

/** The page's script: `app.ts` and the pure modules it imports, bundled for the browser (no engine). */
export const bundlePage = async (): Promise<string> => {
  const result = await esbuild.build({
    entryPoints: [here("./app.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    minify: true,
    write: false,
    logLevel: "silent"
  })
  const out = result.outputFiles[0]
  if (out === undefined) throw new Error("esbuild produced no output")
  return out.text
}

export interface LabServer {
  readonly url: string
  readonly server: Server
  /** Bytes of the page's script. */
  readonly bundleBytes: number
  readonly close: () => Promise<void>
}

/** Starts the server on 127.0.0.1 (`port` 0: a free port). */
export const startLabServer = async (options: { readonly port?: number } = {}): Promise<LabServer> => {
  const [script, html, css] = await Promise.all([
    bundlePage(),
    readFile(here("./index.html"), "utf8"),
    readFile(here("./style.css"), "utf8")
  ])
  const cache = new Map<string, string>()
  const modelOf = async (query: URLSearchParams): Promise<string | { readonly error: string }> => {
    const scenario = parseScenario(Object.fromEntries(query))
    if (typeof scenario === "string") return { error: scenario }
    const key = JSON.stringify(scenario)
    const cached = cache.get(key)
    if (cached !== undefined) return cached
    const model: ScenarioModel = await Effect.runPromise(computeScenario(scenario))
    const json = JSON.stringify(model)
    cache.set(key, json)
    return json
  }
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store" })
      res.end(body)
    }
    if (req.method !== "GET") return send(405, "text/plain", "method not allowed")
    switch (url.pathname) {
      case "/":
      case "/index.html":
        return send(200, "text/html; charset=utf-8", html)
      case "/app.js":
        return send(200, "text/javascript; charset=utf-8", script)
      case "/style.css":
        return send(200, "text/css; charset=utf-8", css)
      case "/api/model":
        modelOf(url.searchParams).then(
          (body) =>
            typeof body === "string"
              ? send(200, "application/json", body)
              : send(400, "application/json", JSON.stringify(body)),
          (error: unknown) => send(500, "application/json", JSON.stringify({ error: String(error) }))
        )
        return
      default:
        return send(404, "text/plain", "not found")
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("the lab server has no TCP address")
  const port = address.port
  return {
    url: `http://127.0.0.1:${port}/`,
    server,
    bundleBytes: Buffer.byteLength(script),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
