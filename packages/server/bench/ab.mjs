/**
 * An interleaved A/B of the server's CPU per request against another checkout of the repository:
 * `node bench/ab.mjs <other-repo-root> [rounds] [seconds]` builds the bench bundles in both
 * (`bench/run.mjs --build-only`), starts one mock and one bare proxy (this tree's), and the
 * `server` (over the mock) and `fixed` (a gateway answering at once: the server's own share)
 * roles of both trees, warms each with 4,000 unmeasured requests at c=64 (a fresh process is still
 * compiling), then loads them in turn at c=64 (`AB_CONNECTIONS=1` for c=1) — bare proxy, A, B,
 * bare `/fixed`, A fixed, B fixed, alternating which of A and B goes first — for `rounds` rounds of
 * `seconds` (after 1 s of warm-up each). CPU per request is the process's user + system time (`/proc/<pid>/stat`) over
 * the window; prints each window and the medians. A is the other tree (the baseline), B this one.
 * `AB_STREAM=1` sends `stream: true` and loads only the two servers.
 */
import autocannon from "autocannon"
import { fork, spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { loadavg } from "node:os"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"

const here = fileURLToPath(new URL(".", import.meta.url))
const [other, roundsArg = "3", secondsArg = "4"] = process.argv.slice(2)
if (other === undefined) throw new Error("usage: node bench/ab.mjs <other-repo-root> [rounds] [seconds]")
const rounds = Number(roundsArg)
const seconds = Number(secondsArg)
const benchDirs = { A: resolve(other, "packages/server/bench"), B: here }
for (const dir of Object.values(benchDirs))
  spawnSync(process.execPath, [resolve(dir, "run.mjs"), "--build-only"], { stdio: "inherit" })

const children = []
const start = (dir, role, upstream = "") =>
  new Promise((done) => {
    const child = fork(resolve(dir, "children.bundle.mjs"), [role, upstream], {
      stdio: ["ignore", "ignore", "inherit", "ipc"]
    })
    children.push(child)
    child.once("message", (m) => done({ pid: child.pid, url: `http://127.0.0.1:${m.port}` }))
  })
const cpuMicros = (pid) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100
}
// `AB_STREAM=1`: the request streams (`stream: true`), and only the server rows run.
const stream = process.env.AB_STREAM === "1"
const body = JSON.stringify({
  model: "chat",
  messages: [{ role: "user", content: "hello" }],
  ...(stream ? { stream } : {})
})
const connections = Number(process.env.AB_CONNECTIONS ?? "64")
const optionsOf = (system, c) => ({
  url: `${system.url}${system.path}`,
  method: "POST",
  connections: c,
  headers: { "content-type": "application/json", authorization: "Bearer mg-bench-key" },
  body
})
const load = async (system) => {
  const options = optionsOf(system, connections)
  await autocannon({ ...options, duration: 1 })
  const before = cpuMicros(system.pid)
  const result = await autocannon({ ...options, duration: seconds })
  const n = result.requests.total
  return {
    us: (cpuMicros(system.pid) - before) / n,
    rps: n / result.duration,
    p50: result.latency.p50,
    bad: result.non2xx + result.errors
  }
}

try {
  const mock = await start(here, "mock")
  const proxy = await start(here, "proxy", mock.url)
  const systems = {}
  for (const side of ["A", "B"]) {
    systems[`server${side}`] = { ...(await start(benchDirs[side], "server", mock.url)), path: "/v1/chat/completions" }
    systems[`fixed${side}`] = { ...(await start(benchDirs[side], "fixed", mock.url)), path: "/v1/chat/completions" }
  }
  systems.bareProxy = { ...proxy, path: "/" }
  systems.bareFixed = { ...proxy, path: "/fixed" }
  for (const system of Object.values(systems)) await autocannon({ ...optionsOf(system, 64), amount: 4000 })
  const seen = {}
  for (let round = 0; round < rounds; round++) {
    const [first, second] = round % 2 === 0 ? ["A", "B"] : ["B", "A"]
    const order = stream
      ? [`server${first}`, `server${second}`]
      : ["bareProxy", `server${first}`, `server${second}`, "bareFixed", `fixed${first}`, `fixed${second}`]
    for (const name of order) {
      const row = await load(systems[name])
      if (seen[name] === undefined) seen[name] = []
      seen[name].push(row)
      process.stdout.write(
        `round ${round + 1} ${name.padEnd(10)} ${row.us.toFixed(0).padStart(6)} µs/req ${row.rps.toFixed(0).padStart(6)} req/s p50 ${row.p50} ms${row.bad ? ` (${row.bad} bad)` : ""} load ${loadavg()[0].toFixed(1)}\n`
      )
    }
  }
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b)
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
  }
  process.stdout.write(`\nmedians, c=${connections} (A = baseline, B = this tree):\n`)
  for (const [name, rows] of Object.entries(seen))
    process.stdout.write(
      `${name.padEnd(10)} ${median(rows.map((r) => r.us))
        .toFixed(0)
        .padStart(6)} µs/req ${median(rows.map((r) => r.rps))
        .toFixed(0)
        .padStart(6)} req/s p50 ${median(rows.map((r) => r.p50))} ms\n`
    )
  const m = (name) => median(seen[name].map((r) => r.us))
  if (!stream)
    process.stdout.write(
      `server.cpu.addedUs: A ${(m("serverA") - m("bareProxy")).toFixed(0)}, B ${(m("serverB") - m("bareProxy")).toFixed(0)}; own share (fixed − bare fixed): A ${(m("fixedA") - m("bareFixed")).toFixed(0)}, B ${(m("fixedB") - m("bareFixed")).toFixed(0)}\n`
    )
} finally {
  for (const child of children) child.kill()
}
