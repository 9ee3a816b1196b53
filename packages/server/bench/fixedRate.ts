/**
 * Latency at a fixed offered load (open loop), for the server benchmark's `server.p50.addedMs.atRate`.
 *
 * autocannon keeps `c` requests open at all times (closed loop): at saturation a process's p50 is
 * then about `c ÷ requests/s` (Little's law), a restatement of its throughput. This probe sends
 * `rate` requests a second on a pool of `connections` keep-alive connections whatever the answers
 * do, and times each request from the instant it was due to be sent (so a request that waits for a
 * free connection counts its wait: no coordinated omission), with `performance.now()` (µs, where
 * autocannon's histogram has whole milliseconds).
 */
import { performance } from "node:perf_hooks"
import { Pool } from "undici"

/** One fixed-rate window. */
export interface FixedRateRun {
  readonly rate: number
  readonly requests: number
  readonly failed: number
  readonly p50Ms: number
  readonly p99Ms: number
}

/** The `q` quantile (0–1) of `sorted` (ascending), nearest rank. */
export const quantile = (sorted: ReadonlyArray<number>, q: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank] ?? Number.NaN
}

/**
 * Sends `POST url` with `body` at `rate` requests/s for `seconds`, on `connections` connections;
 * resolves with the latency quantiles of the answered requests (a non-2xx answer or an error counts
 * as failed and is not in them).
 */
export const fixedRate = async (options: {
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string
  readonly rate: number
  readonly seconds: number
  readonly connections: number
}): Promise<FixedRateRun> => {
  const target = new URL(options.url)
  const pool = new Pool(target.origin, { connections: options.connections, pipelining: 1 })
  const total = Math.round(options.rate * options.seconds)
  const interval = 1000 / options.rate
  const latencies: Array<number> = []
  let failed = 0
  let settled = 0
  const start = performance.now()
  await new Promise<void>((resolve) => {
    const send = (dueAt: number) =>
      pool
        .request({
          path: target.pathname,
          method: "POST",
          headers: { "content-type": "application/json", ...options.headers },
          body: options.body
        })
        .then(async (response) => {
          await response.body.dump()
          if (response.statusCode < 300) latencies.push(performance.now() - dueAt)
          else failed++
        })
        .catch(() => {
          failed++
        })
        .finally(() => {
          if (++settled === total) resolve()
        })
    let sent = 0
    const tick = () => {
      const now = performance.now()
      while (sent < total && start + sent * interval <= now) {
        void send(start + sent * interval)
        sent++
      }
      if (sent < total) setTimeout(tick, 1)
    }
    tick()
  })
  await pool.close()
  latencies.sort((a, b) => a - b)
  return {
    rate: options.rate,
    requests: latencies.length,
    failed,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99)
  }
}
