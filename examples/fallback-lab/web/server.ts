/**
 * The fallback lab's local server: serves the page (its script bundled by esbuild at start-up, in
 * memory) and one endpoint, `GET /api/model?primary=…&routeTimeout=…&deadline=…&secondaryContract=…&secondary=…`,
 * which runs the real engine under TestClock (`computeScenario`) and answers the model as JSON.
 * It listens on 127.0.0.1 only and makes no other network call. It answers only requests whose
 * `Host` is `127.0.0.1:<port>` or `localhost:<port>` (a page on another origin reaching it by DNS
 * rebinding gets 403), and computes at most `maxComputations` scenarios at once: past that, a
 * scenario not computed yet is refused at once with 503 and `retry-after: 1` (the same scenario
 * asked again while it is computed shares the computation; computed ones come from the cache).
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

/** Default bound of the scenarios computed at once. */
export const defaultMaxComputations = 2

/** Starts the server on 127.0.0.1 (`port` 0: a free port). */
export const startLabServer = async (
  options: { readonly port?: number; readonly maxComputations?: number } = {}
): Promise<LabServer> => {
  const maxComputations = Math.max(1, options.maxComputations ?? defaultMaxComputations)
  const [script, html, css] = await Promise.all([
    bundlePage(),
    readFile(here("./index.html"), "utf8"),
    readFile(here("./style.css"), "utf8")
  ])
  const cache = new Map<string, string>()
  const computing = new Map<string, Promise<string>>()
  const busy = { busy: true } as const
  const modelOf = async (query: URLSearchParams): Promise<string | { readonly error: string } | typeof busy> => {
    const scenario = parseScenario(Object.fromEntries(query))
    if (typeof scenario === "string") return { error: scenario }
    const key = JSON.stringify(scenario)
    const cached = cache.get(key) ?? computing.get(key)
    if (cached !== undefined) return cached
    if (computing.size >= maxComputations) return busy
    const json = Effect.runPromise(computeScenario(scenario)).then((model: ScenarioModel) => JSON.stringify(model))
    computing.set(key, json)
    try {
      const done = await json
      cache.set(key, done)
      return done
    } finally {
      computing.delete(key)
    }
  }
  let hosts: ReadonlySet<string> = new Set()
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": type, "cache-control": "no-store", ...headers })
      res.end(body)
    }
    if (!hosts.has(req.headers.host ?? "")) return send(403, "text/plain", "forbidden host")
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
              : body === busy
                ? send(503, "application/json", JSON.stringify({ error: "busy: too many scenarios at once" }), {
                    "retry-after": "1"
                  })
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
  hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`])
  return {
    url: `http://127.0.0.1:${port}/`,
    server,
    bundleBytes: Buffer.byteLength(script),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
