/**
 * The server benchmark (`npx -y pnpm@10.34.8 --filter @modelgate/server bench`): requests/s, p50
 * latency and CPU per request at concurrency 1 and 64, in one run, for
 *   (a) the modelgate server over the loopback mock provider,
 *   (b) a bare `node:http` proxy forwarding the same request to the same mock with `undici.request`
 *       on a keep-alive pool (the floor of a hand-written proxy; also reported: the same proxy
 *       forwarding with global `fetch`, `fetchProxy`),
 *   (c) Portkey's open-source gateway (`@portkey-ai/gateway`, `--headless`) forwarding to the same
 *       mock (`x-portkey-provider: openai`, `x-portkey-custom-host`),
 * each in its own process; the load generator (autocannon) runs here and the mock in a fourth
 * process, so a process's CPU (user + system, from `/proc/<pid>/stat`) is its own. Memory per
 * connection: the heap + external growth (after GC) of the server with 1,000 idle keep-alive
 * connections, per connection (the median of three open/close rounds; `--only-memory` measures only
 * that, for the server and the bare proxy). Also: `GET /healthz` on both (the HTTP layer alone), the server's own
 * share (the server with a gateway answering at once against a bare handler with a fixed answer),
 * and the gateway alone in a process (no HTTP).
 *
 * Also the p50 below saturation (`fixedRate.ts`): the server and the bare proxy at one fixed offered
 * load on 64 connections (`server.p50.addedMs.atRate`, reported; `--only-latency` runs only that, at
 * 200, 500 and 900 requests/s).
 *
 * Writes `bench/results.json` and prints the verdicts (`server.cpu.addedUs`, `server.rps.vsPortkey`,
 * `server.p50.addedMs`, `server.memory.perConnection`) and the ceiling of `server.rps.vsPortkey` on
 * this machine (the bare proxy's requests/s over Portkey's: no proxy in front of the same mock does
 * better, so a target above it cannot be met here). `--duration <s>` (default 4) per window, each
 * after 1 s of warm-up at its concurrency; before its first window each process answers `--warmup
 * <requests>` (default 4,000) unmeasured requests at c=64, so no row measures a process still
 * compiling. At c=64 the server, the bare proxy and Portkey run `--rounds <n>` (default 3) rounds,
 * one after another in each: each verdict is the median of its per-round values (the server's CPU
 * per request minus the bare proxy's a few seconds apart, not across the whole run), each row the
 * median of its rounds (`results.json` keeps every round in `c64Rounds`). The upstream is the mock
 * provider's answer replayed by a bare `node:http` handler (`children.ts`, role `mock`): the same
 * bytes as the mock provider, at a fraction of its CPU, since it shares the machine's cores with
 * the systems measured; `--mock-effect` runs the mock provider itself, as before wave 13. Each row
 * also reports the mock's and the load generator's CPU per request over its window.
 */
import autocannon from "autocannon"
import { type ChildProcess, fork, spawn } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as Net from "node:net"
import * as Os from "node:os"
import { fileURLToPath } from "node:url"
import { benchKey } from "./children.js"
import { type FixedRateRun, fixedRate } from "./fixedRate.js"
import { durationArg, median, medianRow, pairedMedian, roundsArg, type Run, rowOf, warmupArg } from "./row.js"

const duration = durationArg(process.argv)
const warmup = warmupArg(process.argv)
const roundCount = roundsArg(process.argv)
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url))
const ticksPerSecond = 100
/** Under `bench/run.mjs` this module is a bundle and forks the children's bundle; else tsx. */
const bundled = import.meta.url.endsWith(".bundle.mjs")
const childEntry = here(bundled ? "./children.bundle.mjs" : "./children.ts")
const childArgv = bundled ? ["--enable-source-maps"] : ["--conditions=source", "--import", "tsx"]

const cpuMicros = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / ticksPerSecond
}

const children: Array<ChildProcess> = []

/** The gateway alone in a child process (see `children.ts`, role `inprocess`). */
const gatewayInProcess = (mockUrl: string) =>
  new Promise<unknown>((resolve) => {
    const child = fork(childEntry, ["inprocess", mockUrl, "3000"], {
      execArgv: childArgv,
      stdio: ["ignore", "ignore", "inherit", "ipc"]
    })
    children.push(child)
    child.on("message", (m) => {
      if (typeof m === "object" && m !== null && "inProcess" in m) {
        resolve(m.inProcess)
        child.kill()
      }
    })
  })

const startChild = (role: string, upstream = "") =>
  new Promise<{ child: ChildProcess; port: number }>((resolve, reject) => {
    const child = fork(childEntry, [role, upstream], {
      execArgv: [...childArgv, "--expose-gc"],
      stdio: ["ignore", "ignore", "inherit", "ipc"]
    })
    children.push(child)
    child.once("message", (m) => {
      const port = typeof m === "object" && m !== null && "port" in m ? Number(m.port) : 0
      resolve({ child, port })
    })
    child.once("exit", (code) => reject(new Error(`${role} exited (${code})`)))
  })

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = Net.createServer().listen(0, "127.0.0.1", () => {
      const address = s.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      s.close(() => resolve(port))
    })
  })

const startPortkey = async (): Promise<{ child: ChildProcess; port: number } | { skipped: string }> => {
  let entry: string
  try {
    entry = createRequire(import.meta.url).resolve("@portkey-ai/gateway/build/start-server.js")
  } catch {
    return { skipped: "@portkey-ai/gateway is not installed" }
  }
  const port = await freePort()
  const child = spawn(process.execPath, [entry, `--port=${port}`, "--headless"], {
    stdio: "ignore",
    env: { ...process.env, NODE_ENV: "production" }
  })
  children.push(child)
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/`).then(
      (r) => r.ok,
      () => false
    )
    if (ok) return { child, port }
    await new Promise((r) => setTimeout(r, 100))
  }
  return { skipped: "Portkey did not answer within 20 s" }
}

/** The bench's chat request. */
const chatBody = JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hello" }] })

/** The load of one system at `connections` (a POST of the bench's chat request, or `GET /healthz`). */
const loadOptions = (url: string, headers: Record<string, string>, connections: number, path: string) =>
  path !== "/healthz"
    ? {
        url: `${url}${path}`,
        method: "POST" as const,
        connections,
        headers: { "content-type": "application/json", ...headers },
        body: chatBody
      }
    : { url: `${url}${path}`, method: "GET" as const, connections }

/** `--warmup` unmeasured requests at c=64: the process compiles its hot paths first. */
const warm = (url: string, headers: Record<string, string>, path = "/v1/chat/completions") =>
  autocannon({ ...loadOptions(url, headers, 64, path), amount: warmup })

/** One fixed-rate window of the chat request on 64 connections, after 1 s at the same rate (`fixedRate.ts`). */
const atFixedRate = async (url: string, headers: Record<string, string>, rate: number): Promise<FixedRateRun> => {
  const options = { url: `${url}/v1/chat/completions`, headers, body: chatBody, rate, connections: 64 }
  await fixedRate({ ...options, seconds: 1 })
  return fixedRate({ ...options, seconds: duration })
}

const load = async (
  pid: number,
  url: string,
  headers: Record<string, string>,
  connections: number,
  path = "/v1/chat/completions",
  mockPid?: number
): Promise<Run> => {
  const options = loadOptions(url, headers, connections, path)
  await autocannon({ ...options, duration: 1 })
  const before = cpuMicros(pid)
  const mockBefore = mockPid === undefined ? 0 : cpuMicros(mockPid)
  const generatorBefore = process.cpuUsage()
  const result = await autocannon({ ...options, duration })
  const row = rowOf(result, cpuMicros(pid) - before)
  const generator = process.cpuUsage(generatorBefore)
  const perRequest = (micros: number) => (row.requests === 0 ? Number.NaN : micros / row.requests)
  return {
    ...row,
    ...(mockPid === undefined ? {} : { mockCpuUsPerRequest: perRequest(cpuMicros(mockPid) - mockBefore) }),
    loadGeneratorCpuUsPerRequest: perRequest(generator.user + generator.system)
  }
}

/** The child's heap and external memory after a full GC (it answers the `memory` message). */
const memoryAfterGc = (child: ChildProcess) =>
  new Promise<number>((resolve) => {
    const on = (m: unknown) => {
      if (typeof m === "object" && m !== null && "memory" in m && typeof m.memory === "object" && m.memory !== null) {
        child.off("message", on)
        const usage = m.memory
        const heap = "heapUsed" in usage ? Number(usage.heapUsed) : Number.NaN
        const external = "external" in usage ? Number(usage.external) : Number.NaN
        resolve(heap + external)
      }
    }
    child.on("message", on)
    child.send("memory")
  })

/** Opens `n` keep-alive connections to `port`, each after one answered `GET /healthz`. */
const openIdle = (port: number, n: number) =>
  Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Net.Socket>((resolve) => {
          const s = Net.connect(port, "127.0.0.1", () => {
            s.write("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
            s.once("data", () => resolve(s))
          })
        })
    )
  )

const settle = () => new Promise((r) => setTimeout(r, 500))

/**
 * Heap + external memory (after a full GC) per idle keep-alive connection: three rounds of opening
 * `n` connections and closing them again, each round's figure the memory with them open less the
 * mean of the memory just before and just after (so memory the process frees or takes for other
 * reasons during the round, such as its own upstream pool's idle sockets expiring, mostly cancels);
 * the median round. Native socket memory (libuv handles, kernel buffers) is not in this figure.
 */
const memoryPerConnection = async (child: ChildProcess, port: number, n = 1000): Promise<number> => {
  const rounds: Array<number> = []
  await settle()
  let closed = await memoryAfterGc(child)
  for (let round = 0; round < 3; round++) {
    const sockets = await openIdle(port, n)
    await settle()
    const open = await memoryAfterGc(child)
    for (const s of sockets) s.destroy()
    await settle()
    const closedAfter = await memoryAfterGc(child)
    rounds.push((open - (closed + closedAfter) / 2) / n)
    closed = closedAfter
  }
  rounds.sort((a, b) => a - b)
  return rounds[1] ?? Number.NaN
}

const main = async () => {
  const mockKind = process.argv.includes("--mock-effect") ? "effect" : "replay"
  const mock = await startChild("mock", mockKind)
  const mockUrl = `http://127.0.0.1:${mock.port}`
  const server = await startChild("server", mockUrl)
  const proxy = await startChild("proxy", mockUrl)
  if (process.argv.includes("--only-memory")) {
    const memory = {
      server: await memoryPerConnection(server.child, server.port),
      bareProxy: await memoryPerConnection(proxy.child, proxy.port)
    }
    process.stdout.write(`${JSON.stringify({ memory })}\n`)
    for (const child of [mock.child, server.child, proxy.child]) child.kill()
    return
  }
  if (process.argv.includes("--only-latency")) {
    // Latency below saturation at several offered loads, for the server and the bare proxy.
    const pairs = [
      { name: "server", url: `http://127.0.0.1:${server.port}`, headers: { authorization: `Bearer ${benchKey}` } },
      { name: "bareProxy", url: `http://127.0.0.1:${proxy.port}`, headers: {} }
    ]
    for (const s of pairs) await warm(s.url, s.headers)
    for (const rate of [200, 500, 900]) {
      for (const s of pairs) {
        process.stdout.write(`${JSON.stringify({ system: s.name, ...(await atFixedRate(s.url, s.headers, rate)) })}\n`)
      }
    }
    for (const child of [mock.child, server.child, proxy.child]) child.kill()
    return
  }
  const portkey = await startPortkey()
  const systems: Array<{
    name: string
    pid: number
    url: string
    headers: Record<string, string>
    path?: string
  }> = [
    {
      name: "server",
      pid: server.child.pid ?? 0,
      url: `http://127.0.0.1:${server.port}`,
      headers: { authorization: `Bearer ${benchKey}` }
    },
    { name: "bareProxy", pid: proxy.child.pid ?? 0, url: `http://127.0.0.1:${proxy.port}`, headers: {} },
    {
      name: "fetchProxy",
      pid: proxy.child.pid ?? 0,
      url: `http://127.0.0.1:${proxy.port}`,
      headers: {},
      path: "/fetch"
    }
  ]
  if ("port" in portkey)
    systems.push({
      name: "portkey",
      pid: portkey.child.pid ?? 0,
      url: `http://127.0.0.1:${portkey.port}`,
      headers: {
        authorization: "Bearer upstream",
        "x-portkey-provider": "openai",
        "x-portkey-custom-host": `${mockUrl}/v1`
      }
    })
  for (const s of systems) await warm(s.url, s.headers, s.path)
  const runs: Record<string, Record<string, Run>> = {}
  const record = (name: string, connections: number, run: Run) => {
    runs[name] = { ...runs[name], [`c${connections}`]: run }
    process.stderr.write(`${name} c=${connections}: ${JSON.stringify(run)}\n`)
  }
  for (const s of systems) record(s.name, 1, await load(s.pid, s.url, s.headers, 1, s.path, mock.child.pid))
  // c=64: the systems the verdicts compare run in `rounds` rounds, one after another in each (the
  // order turned by one each round); each row is the median of its rounds, each verdict the median
  // of its per-round values. `fetchProxy` (reported, no verdict) runs once.
  const compared = systems.filter((s) => s.name !== "fetchProxy")
  const rounds: Record<string, Array<Run>> = {}
  for (let round = 0; round < roundCount; round++) {
    for (let i = 0; i < compared.length; i++) {
      const s = compared[(i + round) % compared.length]
      if (s === undefined) continue
      const run = await load(s.pid, s.url, s.headers, 64, s.path, mock.child.pid)
      rounds[s.name] = [...(rounds[s.name] ?? []), run]
      process.stderr.write(`${s.name} c=64 round ${round + 1}: ${JSON.stringify(run)}\n`)
    }
  }
  for (const [name, rows] of Object.entries(rounds)) record(name, 64, medianRow(rows))
  for (const s of systems)
    if (s.name === "fetchProxy") record(s.name, 64, await load(s.pid, s.url, s.headers, 64, s.path, mock.child.pid))
  // Latency below saturation: the server and the bare proxy at the same fixed offered load (half
  // the server's requests/s at c=64 in this run) on 64 connections, open loop (`fixedRate.ts`);
  // three alternating rounds after the others have drained, the median of each.
  const rate = Math.max(50, Math.round((runs.server?.c64?.rps ?? 0) / 2 / 50) * 50)
  await new Promise((r) => setTimeout(r, 2000))
  const serverSystem = systems.find((s) => s.name === "server")
  const bareSystem = systems.find((s) => s.name === "bareProxy")
  const serverRounds: Array<FixedRateRun> = []
  const bareRounds: Array<FixedRateRun> = []
  for (let round = 0; round < 3 && serverSystem !== undefined && bareSystem !== undefined; round++) {
    serverRounds.push(await atFixedRate(serverSystem.url, serverSystem.headers, rate))
    bareRounds.push(await atFixedRate(bareSystem.url, bareSystem.headers, rate))
  }
  const medianOf = (runs: ReadonlyArray<FixedRateRun>) => ({
    rate,
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    rounds: runs
  })
  const atRate = { server: medianOf(serverRounds), bareProxy: medianOf(bareRounds) }
  process.stderr.write(`fixed rate ${rate}/s, 64 connections: ${JSON.stringify(atRate)}\n`)
  // The HTTP layer alone: `GET /healthz` on the platform server vs a bare node:http answer.
  const httpOnly = {
    server: await load(server.child.pid ?? 0, `http://127.0.0.1:${server.port}`, {}, 64, "/healthz"),
    bareNode: await load(proxy.child.pid ?? 0, `http://127.0.0.1:${proxy.port}`, {}, 64, "/healthz")
  }
  process.stderr.write(`healthz c=64: ${JSON.stringify(httpOnly)}\n`)
  // The server's own share: the server with a gateway answering at once, against a bare node:http
  // handler that parses the body and answers a fixed completion (neither calls the mock).
  const fixed = await startChild("fixed", mockUrl)
  await warm(`http://127.0.0.1:${fixed.port}`, { authorization: `Bearer ${benchKey}` })
  await warm(`http://127.0.0.1:${proxy.port}`, {}, "/fixed")
  const ownShare = {
    server: await load(
      fixed.child.pid ?? 0,
      `http://127.0.0.1:${fixed.port}`,
      { authorization: `Bearer ${benchKey}` },
      64
    ),
    bareNode: await load(proxy.child.pid ?? 0, `http://127.0.0.1:${proxy.port}`, {}, 64, "/fixed")
  }
  fixed.child.kill()
  process.stderr.write(`own share (fixed answer) c=64: ${JSON.stringify(ownShare)}\n`)
  const inProcess = await gatewayInProcess(mockUrl)
  process.stderr.write(`gateway in process, c=64: ${JSON.stringify(inProcess)}\n`)
  const memory = {
    server: await memoryPerConnection(server.child, server.port),
    bareProxy: await memoryPerConnection(proxy.child, proxy.port)
  }
  const at = (name: string, c: string) => runs[name]?.[c]
  const addedUs = (c: string) =>
    (at("server", c)?.cpuUsPerRequest ?? Number.NaN) - (at("bareProxy", c)?.cpuUsPerRequest ?? Number.NaN)
  const rpsOver = (name: string, c: string) => (at(name, c)?.rps ?? Number.NaN) / (at("portkey", c)?.rps ?? Number.NaN)
  // c=64: per round, then the median of the rounds (see above).
  const added64 = pairedMedian(rounds.server, rounds.bareProxy, (a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)
  const vsPortkey64 = pairedMedian(rounds.server, rounds.portkey, (a, b) => a.rps / b.rps)
  const p50Added64 = pairedMedian(rounds.server, rounds.bareProxy, (a, b) => a.p50Ms - b.p50Ms)
  const verdicts = [
    {
      id: "server.cpu.addedUs",
      what: `server − bare proxy, CPU µs per request, c=64 (median of ${roundCount} paired rounds)`,
      measured: added64,
      target: "<= 300",
      pass: added64 <= 300,
      c1: addedUs("c1"),
      rounds: (rounds.server ?? []).map(
        (r, i) => r.cpuUsPerRequest - (rounds.bareProxy?.[i]?.cpuUsPerRequest ?? Number.NaN)
      )
    },
    {
      id: "server.rps.vsPortkey",
      what: `server / Portkey requests/s, c=64 (median of ${roundCount} paired rounds)`,
      measured: vsPortkey64,
      target: ">= 5",
      pass: "port" in portkey && vsPortkey64 >= 5,
      c1: "port" in portkey ? rpsOver("server", "c1") : Number.NaN,
      // The ceiling on this machine: what the bare undici proxy itself reaches against Portkey.
      ceiling: {
        c1: rpsOver("bareProxy", "c1"),
        c64: pairedMedian(rounds.bareProxy, rounds.portkey, (a, b) => a.rps / b.rps)
      }
    },
    {
      id: "server.p50.addedMs",
      what: `server − bare proxy, p50 latency ms, c=64 (median of ${roundCount} paired rounds)`,
      measured: p50Added64,
      target: "<= 0.5",
      pass: p50Added64 <= 0.5
    },
    {
      id: "server.p50.addedMs.atRate",
      what: `server − bare proxy, p50 latency ms at a fixed ${rate} requests/s on 64 connections (open loop)`,
      measured: atRate.server.p50Ms - atRate.bareProxy.p50Ms,
      target: "report",
      pass: true
    },
    {
      id: "server.memory.perConnection",
      what: "server heap + external memory per idle keep-alive connection, bytes",
      measured: memory.server,
      target: "report",
      pass: true,
      bareProxy: memory.bareProxy
    }
  ]
  const results = {
    startedAt: new Date().toISOString(),
    durationSeconds: duration,
    warmupRequests: warmup,
    rounds: roundCount,
    mock: mockKind,
    machine: { node: process.version, cpus: Os.cpus().length, loadAverage: Os.loadavg() },
    portkey: "port" in portkey ? "@portkey-ai/gateway 1.15.2, --headless, NODE_ENV=production" : portkey.skipped,
    runs,
    c64Rounds: rounds,
    atRate,
    httpOnly,
    ownShare,
    gatewayInProcess: inProcess,
    memory,
    verdicts
  }
  writeFileSync(here("./results.json"), `${JSON.stringify(results, null, 2)}\n`)
  for (const v of verdicts)
    process.stdout.write(
      `${v.pass ? "PASS" : "MISS"} ${v.id}: ${Number(v.measured).toFixed(2)} (${v.target}) — ${v.what}\n`
    )
  const ceiling = verdicts[1]?.ceiling
  if (ceiling !== undefined)
    process.stdout.write(
      `ceiling of server.rps.vsPortkey here (bare undici proxy / Portkey): c=1 ${ceiling.c1.toFixed(2)}, c=64 ${ceiling.c64.toFixed(2)}\n`
    )
}

main()
  .catch((e: unknown) => {
    process.stderr.write(`bench failed: ${String(e)}\n`)
    process.exitCode = 1
  })
  .finally(() => {
    for (const c of children) c.kill()
  })
