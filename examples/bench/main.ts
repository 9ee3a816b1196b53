/**
 * `pnpm bench`: runs the suite, prints the markdown table and writes `bench/results.json` and
 * `bench/results.md`. `--smoke` runs the few-iteration profile (what CI runs) and writes nothing
 * unless `--write` is given too. `--no-http` skips the HTTP section, `--no-redis` the Redis one.
 * `--only-cache` runs the response cache section alone and prints its verdicts (writes nothing);
 * `--only-redis` the same for the Redis section (to compare two builds run after one another);
 * `--only-http` runs the HTTP section alone and prints its table (writes nothing);
 * `--only-routing` runs the routing scale section alone and prints its figures (writes nothing);
 * `--only-memory` runs the memory section alone and prints its figures (writes nothing);
 * `--only-inprocess` the same for the in-process section.
 *
 * Run with `node --expose-gc --conditions=source --import tsx bench/main.ts` (the `bench` script runs
 * an esbuild bundle of it with `--expose-gc`) so that the memory figures are taken after a full GC.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { collectGarbage, profiles } from "./harness.js"
import * as Cache from "./cache.js"
import * as Http from "./http.js"
import * as InProcess from "./inProcess.js"
import * as Memory from "./memory.js"
import { httpSection } from "./httpReport.js"
import { fmt } from "./harness.js"
import * as Redis from "./redis.js"
import * as Routing from "./routing.js"
import { cacheVerdicts, markdown, redisVerdicts, verdicts } from "./report.js"
import { runSuite } from "./suite.js"

const args = new Set(process.argv.slice(2))
const profile = args.has("--smoke") ? profiles.smoke : profiles.full
if (!collectGarbage()) process.stderr.write("bench: run with --expose-gc for meaningful memory figures\n")

if (args.has("--only-cache")) {
  const cache = await Cache.run(profile, { skipRedis: args.has("--no-redis") })
  for (const v of cacheVerdicts({ cache })) {
    process.stdout.write(
      `${v.pass ? "PASS" : "MISS"} ${v.id}: ${fmt(v.measured)} ${v.unit} (target ${v.comparison} ${fmt(v.target)}; ${v.baseline})\n`
    )
  }
  process.stdout.write(
    `cache hit p50 ${fmt(cache.hit.subject.p50)} µs, p99 ${fmt(cache.hit.subject.p99)} µs (batch ${cache.hit.batch.subject})\n`
  )
  process.exit(0)
}

if (args.has("--only-http")) {
  const http = await Http.run(profile)
  process.stdout.write(`${httpSection(http).join("\n")}\n`)
  process.exit(0)
}

if (args.has("--only-routing")) {
  const routing = await Routing.run(profile)
  const lines = [
    ...routing.points.map((p) => ["resolve", p] as const),
    ...routing.scored.map((p) => ["resolve.scored", p] as const)
  ]
  for (const [name, p] of lines) {
    process.stdout.write(`${name}.${p.targets}: ${fmt(p.decisionUs)} µs per decision (p99 ${fmt(p.p99Us)} µs)\n`)
  }
  process.exit(0)
}

if (args.has("--only-memory")) {
  const memory = await Memory.run(profile)
  const line = (name: string, m: { readonly direct: number; readonly gateway: number; readonly added: number }) =>
    `${name}: direct ${fmt(m.direct)} B, gateway ${fmt(m.gateway)} B, added ${fmt(m.added)} B per in-flight call\n`
  process.stdout.write(line("memory.inFlight", memory.inFlight) + line("memory.inFlightOwned", memory.inFlightOwned))
  process.stdout.write(`memory.tenants: ${fmt(memory.tenants.perTenant)} B per idle tenant\n`)
  process.exit(0)
}

if (args.has("--only-inprocess")) {
  const inProcess = await InProcess.run(profile)
  for (const c of inProcess.cases) {
    const t =
      c.concurrent === undefined ? "" : `, ${fmt(c.concurrent.subject)} calls/s at ${inProcess.concurrency} fibers`
    process.stdout.write(`${c.name}: added p50 ${fmt(c.sequential.diffP50)} µs${t}\n`)
  }
  process.exit(0)
}

if (args.has("--only-redis")) {
  const redis = await Redis.run(profile)
  for (const v of redisVerdicts({ redis })) {
    process.stdout.write(
      `${v.pass ? "PASS" : "MISS"} ${v.id}: ${fmt(v.measured)} ${v.unit} (target ${v.comparison} ${fmt(v.target)}; ${v.baseline})\n`
    )
  }
  process.exit(0)
}

const results = await runSuite({ profile, skipHttp: args.has("--no-http"), skipRedis: args.has("--no-redis") })
const v = verdicts(results)
const md = markdown(results, v)
process.stdout.write(`${md}\n`)
if (profile.name === "full" || args.has("--write")) {
  const json = { ...results, verdicts: v }
  writeFileSync(fileURLToPath(new URL("./results.json", import.meta.url)), `${JSON.stringify(json, null, 2)}\n`)
  writeFileSync(fileURLToPath(new URL("./results.md", import.meta.url)), `${md}\n`)
  process.stderr.write("bench: wrote bench/results.json and bench/results.md\n")
}
// Misses are reported, not hidden; the exit code stays 0 (CI does not gate on these noisy figures).
process.exit(0)
