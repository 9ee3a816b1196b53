import { describe, expect, it } from "@effect/vitest"
import autocannon from "autocannon"
import * as Http from "node:http"
import { fixedRate, quantile } from "../bench/fixedRate.js"
import { durationArg, median, medianRow, pairedMedian, roundsArg, type Run, rowOf, warmupArg } from "../bench/row.js"

const row = (rps: number, cpuUsPerRequest: number, p50Ms = 10): Run => ({
  rps,
  p50Ms,
  p99Ms: 2 * p50Ms,
  cpuUsPerRequest,
  requests: rps * 4,
  errors: 0,
  non2xx: 1
})

describe("server bench rounds", () => {
  it("reads --rounds (a whole number), 3 by default", () => {
    expect(roundsArg(["node", "main.ts"])).toBe(3)
    expect(roundsArg(["node", "main.ts", "--rounds", "5"])).toBe(5)
    expect(() => roundsArg(["node", "main.ts", "--rounds", "2.5"])).toThrow(/whole number/)
    expect(() => roundsArg(["node", "main.ts", "--rounds", "0"])).toThrow(/positive number/)
  })

  it("takes the middle value, or the mean of the two middle ones", () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([10, 1, 4, 2])).toBe(3)
    expect(median([7])).toBe(7)
    expect(median([])).toBeNaN()
  })

  it("a row over rounds: medians of each rate and cost, counts summed", () => {
    const rows = [row(1000, 500, 30), row(1200, 450, 20), row(900, 700, 40)]
    expect(medianRow(rows)).toEqual({
      rps: 1000,
      p50Ms: 30,
      p99Ms: 60,
      cpuUsPerRequest: 500,
      requests: 12_400,
      errors: 0,
      non2xx: 3
    })
  })

  it("a row over rounds carries the medians of the mock's and the load generator's CPU when measured", () => {
    const rows = [300, 100, 200].map((mock) => ({
      ...row(1000, 500),
      mockCpuUsPerRequest: mock,
      loadGeneratorCpuUsPerRequest: mock / 2
    }))
    expect(medianRow(rows)).toMatchObject({ mockCpuUsPerRequest: 200, loadGeneratorCpuUsPerRequest: 100 })
    expect(medianRow([row(1000, 500)])).not.toHaveProperty("mockCpuUsPerRequest")
  })

  it("a verdict per round, paired by index, then its median (not the difference of medians)", () => {
    // A machine that slows down in round 3 slows both sides of that round.
    const server = [row(1000, 500), row(1000, 520), row(600, 900)]
    const bare = [row(3000, 200), row(3000, 260), row(1800, 560)]
    const added = pairedMedian(server, bare, (a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)
    expect(added).toBe(300) // rounds: 300, 260, 340
    expect(medianRow(server).cpuUsPerRequest - medianRow(bare).cpuUsPerRequest).toBe(260)
    expect(pairedMedian(server, bare.slice(0, 2), (a, b) => a.rps / b.rps)).toBeNaN()
    expect(pairedMedian(undefined, bare, (a, b) => a.rps / b.rps)).toBeNaN()
  })
})

describe("server bench parsing", () => {
  it("reads --duration, defaults when absent, refuses a non-number", () => {
    // The root `pnpm bench` passes no argument: this was `NaN` (a window that ends at once).
    expect(durationArg(["/usr/bin/node", "bench/main.ts"])).toBe(4)
    expect(durationArg(["node", "main.ts", "--duration", "2.5"])).toBe(2.5)
    expect(() => durationArg(["node", "main.ts", "--duration"])).toThrow(/positive number/)
    expect(() => durationArg(["node", "main.ts", "--duration", "0"])).toThrow(/positive number/)
  })

  it("reads --warmup apart from --duration, defaults when absent, refuses a non-number", () => {
    expect(warmupArg(["node", "main.ts"])).toBe(4000)
    expect(warmupArg(["node", "main.ts", "--duration", "2", "--warmup", "500"])).toBe(500)
    expect(durationArg(["node", "main.ts", "--duration", "2", "--warmup", "500"])).toBe(2)
    expect(() => warmupArg(["node", "main.ts", "--warmup", "soon"])).toThrow(/--warmup needs a positive number/)
  })

  it("computes a row of numbers from a real autocannon result", async () => {
    const server = Http.createServer((_req, res) => res.end("{}"))
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    try {
      // `amount` ends the run after 40 answers (no timer).
      const result = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 2, amount: 40 })
      const row = rowOf(result, 8_000)
      expect(row.requests).toBe(40)
      expect(row.cpuUsPerRequest).toBe(200)
      expect(Number.isFinite(row.rps) && row.rps > 0).toBe(true)
      expect(row.rps).toBeCloseTo(40 / result.duration, 6)
      expect(Number.isFinite(row.p50Ms)).toBe(true)
      expect(JSON.parse(JSON.stringify(row)).rps).toBe(row.rps)
    } finally {
      server.close()
    }
  })

  it("a run with no answer has no rate per request, not a fake zero", () => {
    const row = rowOf({ requests: { total: 0 }, latency: { p50: 0, p99: 0 }, duration: 1, errors: 3, non2xx: 0 }, 500)
    expect(row.rps).toBe(0)
    expect(Number.isNaN(row.cpuUsPerRequest)).toBe(true)
    expect(row.errors).toBe(3)
  })

  it("reads quantiles by nearest rank", () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    expect(quantile(sorted, 0.5)).toBe(5)
    expect(quantile(sorted, 0.99)).toBe(10)
    expect(quantile(sorted, 0)).toBe(1)
    expect(Number.isNaN(quantile([], 0.5))).toBe(true)
  })

  it("sends every request of a fixed-rate window and keeps failures out of the latencies", async () => {
    let seen = 0
    const server = Http.createServer((req, res) => {
      req.resume()
      // Every fourth request fails: it must be counted as failed, not timed.
      res.statusCode = ++seen % 4 === 0 ? 500 : 200
      res.end("{}")
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    try {
      const run = await fixedRate({
        url: `http://127.0.0.1:${port}/v1/chat/completions`,
        headers: {},
        body: "{}",
        rate: 2000,
        seconds: 0.02,
        connections: 4
      })
      expect(seen).toBe(40)
      expect(run.requests).toBe(30)
      expect(run.failed).toBe(10)
      expect(run.p50Ms > 0 && run.p50Ms <= run.p99Ms).toBe(true)
    } finally {
      server.close()
    }
  })
})
