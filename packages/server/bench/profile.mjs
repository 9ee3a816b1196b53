/**
 * Profiles the server per request: `node bench/profile.mjs [path] [connections] [seconds]` builds
 * the bench's bundles, starts the mock and the server (`--cpu-prof`), loads it with autocannon
 * (default `POST /v1/chat/completions`, c=64, 5 s) after a warm-up (4,000 requests at c=64, then 1 s
 * at the measured concurrency: a fresh process is still compiling, see `main.ts`), stops it, and prints the
 * functions with the most self time (the `.cpuprofile` stays in `bench/profiles/` for a viewer).
 */
import autocannon from "autocannon"
import { fork, spawnSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const here = (path) => fileURLToPath(new URL(path, import.meta.url))
const [path = "/v1/chat/completions", connections = "64", seconds = "5"] = process.argv.slice(2)
spawnSync(process.execPath, [here("./run.mjs"), "--build-only"], { stdio: "inherit" })
const dir = here("./profiles")
mkdirSync(dir, { recursive: true })
const before = new Set(readdirSync(dir))

const start = (role, upstream, execArgv = []) =>
  new Promise((resolve) => {
    const child = fork(here("./children.bundle.mjs"), [role, upstream], { execArgv, stdio: "inherit" })
    child.once("message", (m) => resolve({ child, port: m.port }))
  })

const mock = await start("mock", "")
// `BENCH_ROLE=fixed`: the server with a gateway answering at once (its own share; see `children.ts`).
const server = await start(process.env.BENCH_ROLE ?? "server", `http://127.0.0.1:${mock.port}`, [
  "--cpu-prof",
  `--cpu-prof-dir=${dir}`
])
const post = path !== "/healthz" && path !== "/v1/models"
const options = {
  url: `http://127.0.0.1:${server.port}${path}`,
  method: post ? "POST" : "GET",
  connections: Number(connections),
  duration: Number(seconds),
  headers: { "content-type": "application/json", authorization: "Bearer mg-bench-key" },
  body: post ? JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hello" }] }) : undefined
}
await autocannon({ ...options, connections: 64, amount: 4000 })
await autocannon({ ...options, duration: 1 })
// Samples count only inside the measured window (V8's profile clock is the monotonic clock).
const from = Number(process.hrtime.bigint() / 1000n)
const sockets = () => {
  const out = spawnSync("ss", ["-tan"], { encoding: "utf8" }).stdout ?? ""
  const lines = out.split("\n").filter((l) => l.includes(`127.0.0.1:${mock.port}`))
  return `${lines.filter((l) => l.startsWith("ESTAB")).length} established, ${lines.filter((l) => l.startsWith("TIME-WAIT")).length} time-wait`
}
const tally = setTimeout(
  () => process.stdout.write(`sockets to the mock mid-run: ${sockets()}\n`),
  (Number(seconds) * 1000) / 2
)
const result = await autocannon(options)
clearTimeout(tally)
const to = Number(process.hrtime.bigint() / 1000n)
process.stdout.write(`${result.requests.total} requests, ${result.non2xx} non-2xx, p50 ${result.latency.p50} ms\n`)
await new Promise((resolve) => {
  server.child.once("exit", resolve)
  server.child.kill("SIGTERM")
})
mock.child.kill()
const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith(".cpuprofile"))
const profile = JSON.parse(readFileSync(`${dir}/${file}`, "utf8"))
const self = new Map()
const dt = new Map()
let at = profile.startTime
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0
  if (at >= from && at <= to)
    dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0))
}
let total = 0
for (const node of profile.nodes) {
  const us = dt.get(node.id) ?? 0
  total += us
  const { functionName, url, lineNumber } = node.callFrame
  const name = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`
  self.set(name, (self.get(name) ?? 0) + us)
}
const idle = [...self].filter(([name]) => name.startsWith("(idle)")).reduce((n, [, us]) => n + us, 0)
process.stdout.write(
  `${file}: ${((total - idle) / 1000).toFixed(0)} ms busy of ${(total / 1000).toFixed(0)} sampled; busy per request ${((total - idle) / result.requests.total).toFixed(0)} µs\n`
)
process.stdout.write(`window, all samples per request ${(total / result.requests.total).toFixed(0)} µs\n`)
for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 45))
  process.stdout.write(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}\n`)

// Self time per source module: esbuild marks each module of the bundle with a `// path` comment.
const bundleLines = readFileSync(here("./children.bundle.mjs"), "utf8").split("\n")
const moduleAt = []
let current = "(bundle)"
for (const line of bundleLines) {
  const m = /^\/\/ (\S+\.(?:ts|js|mjs|cjs))$/.exec(line)
  if (m) current = m[1].replace(/^.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, "")
  moduleAt.push(current)
}
const perModule = new Map()
for (const node of profile.nodes) {
  const us = dt.get(node.id) ?? 0
  const { url, lineNumber, functionName } = node.callFrame
  const module = url.endsWith("children.bundle.mjs") ? (moduleAt[lineNumber] ?? "?") : url || functionName
  perModule.set(module, (perModule.get(module) ?? 0) + us)
}
process.stdout.write("\nself time per module:\n")
for (const [name, us] of [...perModule].sort((a, b) => b[1] - a[1]).slice(0, 40))
  process.stdout.write(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}\n`)

// The same, per owner: core, adapters, this server, the platform HTTP server, the Effect runtime…
const ownerOf = (module) =>
  module.startsWith("../core/")
    ? "core (src)"
    : module.startsWith("../adapters/")
      ? "adapters (src)"
      : module.startsWith("src/")
        ? "server (src)"
        : module.startsWith("@effect/platform")
          ? "@effect/platform(-node)"
          : module.startsWith("effect/")
            ? "effect runtime + Schema"
            : module.startsWith("undici/")
              ? "undici"
              : module.startsWith("node:") || /^[a-z_]+$/.test(module)
                ? "node internals + syscalls"
                : module
const perOwner = new Map()
for (const [module, us] of perModule) perOwner.set(ownerOf(module), (perOwner.get(ownerOf(module)) ?? 0) + us)
process.stdout.write("\nself time per owner:\n")
for (const [name, us] of [...perOwner].sort((a, b) => b[1] - a[1]).slice(0, 14))
  process.stdout.write(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}\n`)
