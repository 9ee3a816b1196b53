/**
 * The benchmark suite with few iterations, so that it cannot rot: every section runs against the
 * real gateway (the HTTP section: the gateway with one target, with primary + fallback and with a
 * primary that fails over, the adapter alone, raw POST, raw undici, the official openai client and
 * `@effect/ai` through an `ExecutionPlan`, all against the mock server in a child process; the
 * section checks each subject's answer and attempts once before timing) and produces finite figures and a verdict per
 * target. Figures are not asserted against the targets here: CI machines are too noisy to gate on
 * (the full `pnpm bench` reports PASS/MISS).
 */
import { describe, expect, it } from "vitest"
import { profiles } from "../bench/harness.js"
import { clients } from "../bench/http.js"
import { markdown, verdicts } from "../bench/report.js"
import { runSuite } from "../bench/suite.js"

describe("bench (smoke)", () => {
  it("runs every section and reports every target", { timeout: 120_000 }, async () => {
    const results = await runSuite({ profile: profiles.smoke, log: () => {} })
    const v = verdicts(results)
    const ids = v.map((x) => x.id)
    expect(ids).toEqual([
      "inprocess.p50.addedUs",
      "inprocess.throughput.1000",
      "http.cpu.vsOpenAiSdk",
      "http.cpu.vsOpenAiSdk.c1",
      "http.throughput.vsOpenAiSdk",
      "http.cpu.addedOverAdapterUs",
      "memory.inFlight.addedBytes",
      "routing.resolve.1000.us",
      "routing.resolve.scored.1000.us",
      "redis.throughput.vsMemory",
      "redis.roundTripsPerCall",
      "cache.hit.p50Us",
      "cache.redis.roundTripsPerHit",
      "overhead.sequential.instant adapter",
      "throughput.1000.instant adapter",
      "overhead.sequential.1 KB JSON adapter",
      "throughput.1000.1 KB JSON adapter",
      "http.cpu.c1",
      "http.throughput.c1",
      "http.cpu.c64",
      "http.p50.c64",
      "http.throughput.c64",
      "resolve.1000",
      "resolve.scored.1000",
      "resolve.growth.10-100",
      "resolve.growth.100-1000",
      "memory.inflight",
      "memory.tenant",
      "tokens.1kb",
      "tokens.10kb",
      "tokens.100kb"
    ])
    for (const x of v) expect(Number.isFinite(x.measured), x.id).toBe(true)
    // The measured sides really ran: positive latencies and rates.
    for (const c of results.inProcess.cases) {
      expect(c.sequential.baseline.p50).toBeGreaterThan(0)
      expect(c.sequential.subject.p50).toBeGreaterThan(0)
    }
    // Every HTTP client (the official openai client included) made its calls at both concurrencies.
    if (!("levels" in results.http)) throw new Error("the HTTP section did not run")
    expect(results.http.levels.map((l) => l.concurrency)).toEqual([1, 64])
    for (const l of results.http.levels) {
      expect(l.order).toHaveLength(profiles.smoke.httpRounds)
      for (const client of clients) {
        expect(l[client].latencyMs.n, `${client} c=${l.concurrency}`).toBe(l.callsPerRound * profiles.smoke.httpRounds)
        expect(l[client].throughput.median, `${client} c=${l.concurrency}`).toBeGreaterThan(0)
        expect(l[client].cpuUsPerCall.median, `${client} c=${l.concurrency}`).toBeGreaterThan(0)
      }
      expect(l.openai.cpuVsOpenAi).toBe(1)
    }
    expect(results.routing.points.map((p) => p.targets)).toEqual([10, 100, 1_000])
    expect(results.memory.inFlight.gateway).toBeGreaterThan(0)
    const md = markdown(results, v)
    expect(md).toContain("### Targets:")
    expect(md.split("\n").filter((l) => l.startsWith("| PASS") || l.startsWith("| **MISS**"))).toHaveLength(v.length)
  })
})
