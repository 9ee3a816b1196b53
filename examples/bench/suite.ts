/**
 * The benchmark suite: every section in order, one `Results` value.
 */
import * as os from "node:os"
import { collectGarbage, type Profile } from "./harness.js"
import * as Cache from "./cache.js"
import * as Http from "./http.js"
import * as InProcess from "./inProcess.js"
import * as Memory from "./memory.js"
import * as Redis from "./redis.js"
import type { Results } from "./report.js"
import * as Routing from "./routing.js"
import * as Tokens from "./tokens.js"

export interface SuiteOptions {
  readonly profile: Profile
  /** Skip the HTTP section (no child process). */
  readonly skipHttp?: boolean
  /** Skip the Redis section (no redis-server). */
  readonly skipRedis?: boolean
  /** Progress lines (stderr by default). */
  readonly log?: (line: string) => void
}

export const runSuite = async (options: SuiteOptions): Promise<Results> => {
  const { profile } = options
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const t0 = performance.now()
  const startedAt = new Date().toISOString()
  const section = async <A>(name: string, run: () => Promise<A>): Promise<A> => {
    collectGarbage()
    const s = performance.now()
    log(`bench: ${name}…`)
    const out = await run()
    log(`bench: ${name} done in ${((performance.now() - s) / 1000).toFixed(1)} s`)
    return out
  }
  const inProcess = await section("in-process overhead", () => InProcess.run(profile))
  const http = options.skipHttp
    ? { skipped: "disabled by option" }
    : await section("HTTP path", () => Http.run(profile))
  const routing = await section("routing scale", () => Routing.run(profile))
  const memory = await section("memory", () => Memory.run(profile))
  const tokens = await section("token estimation", () => Tokens.run(profile))
  const redis = options.skipRedis
    ? { skipped: "disabled by option" }
    : await section("shared state on Redis", () => Redis.run(profile))
  const cache = await section("response cache", () => Cache.run(profile, { skipRedis: options.skipRedis === true }))
  const cpus = os.cpus()
  return {
    profile: profile.name,
    startedAt,
    durationSeconds: (performance.now() - t0) / 1000,
    machine: {
      node: process.version,
      platform: `${process.platform}-${process.arch}`,
      cpus: cpus.length,
      cpuModel: cpus[0]?.model ?? "unknown",
      loadAverage: os.loadavg()
    },
    inProcess,
    http,
    routing,
    memory,
    tokens,
    redis,
    cache
  }
}
