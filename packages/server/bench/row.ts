/**
 * The parsing half of the server benchmark, kept apart so it is unit-tested: the `--duration` and
 * `--warmup` arguments and the row computed from one autocannon result.
 */
/** One system at one concurrency. */
export interface Run {
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly cpuUsPerRequest: number
  readonly requests: number
  readonly errors: number
  readonly non2xx: number
}

/**
 * The number after `flag` (e.g. `--duration`) in `argv`, else `fallback`. A value that is not a
 * positive number is an error (autocannon would end a `NaN` window at once).
 */
export const positiveArg = (argv: ReadonlyArray<string>, flag: string, fallback: number): number => {
  const at = argv.indexOf(flag)
  if (at === -1) return fallback
  const value = Number(argv[at + 1])
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${flag} needs a positive number`)
  return value
}

/** Seconds per measured window: the value after `--duration`, else `fallback`. */
export const durationArg = (argv: ReadonlyArray<string>, fallback = 4): number =>
  positiveArg(argv, "--duration", fallback)

/**
 * Requests at c=64 each process answers once, unmeasured, before its first window: the value after
 * `--warmup`, else `fallback`. A fresh process is still compiling (V8's tiers, on its helper
 * threads) for its first few thousand requests, which then cost 2–3 × the CPU of the later ones; a
 * warm-up by time would be too short on a busy machine, so it is counted in requests.
 */
export const warmupArg = (argv: ReadonlyArray<string>, fallback = 4000): number =>
  positiveArg(argv, "--warmup", fallback)

/**
 * The row of one autocannon result: requests/s over the window autocannon measured (its own
 * `duration`, in seconds), latency percentiles, and `cpuMicros` (the target process's CPU over the
 * window) per completed request.
 */
export const rowOf = (
  result: {
    readonly requests: { readonly total: number }
    readonly latency: { readonly p50: number; readonly p99: number }
    readonly duration: number
    readonly errors: number
    readonly non2xx: number
  },
  cpuMicros: number
): Run => {
  const total = result.requests.total
  return {
    rps: result.duration > 0 ? total / result.duration : Number.NaN,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    cpuUsPerRequest: total === 0 ? Number.NaN : cpuMicros / total,
    requests: total,
    errors: result.errors,
    non2xx: result.non2xx
  }
}
