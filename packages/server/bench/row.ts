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
  /** The mock provider's CPU per request over the same window (it shares the machine's cores). */
  readonly mockCpuUsPerRequest?: number | undefined
  /** The load generator's (this process's) CPU per request over the window. */
  readonly loadGeneratorCpuUsPerRequest?: number | undefined
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

/**
 * Rounds of paired windows at c=64, per system: `--rounds <n>` (default 3). The systems compared
 * by a verdict run one after another in each round, so a verdict is taken per round (the server
 * against the bare proxy a few seconds apart) and the median of the rounds is reported: the
 * machine's drift across a run moves both sides of a round, not the verdict.
 */
export const roundsArg = (argv: ReadonlyArray<string>, fallback = 3): number => {
  const rounds = positiveArg(argv, "--rounds", fallback)
  if (!Number.isInteger(rounds)) throw new Error("--rounds needs a whole number")
  return rounds
}

/** The median of `values`: the middle one (an even count: the mean of the two middle ones). */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? Number.NaN)
    : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2
}

/** The medians of the mock's and the load generator's CPU per request, when the rows have them. */
const sharedCosts = (rows: ReadonlyArray<Run>) => {
  const mock = rows.flatMap((r) => (r.mockCpuUsPerRequest === undefined ? [] : [r.mockCpuUsPerRequest]))
  const generator = rows.flatMap((r) =>
    r.loadGeneratorCpuUsPerRequest === undefined ? [] : [r.loadGeneratorCpuUsPerRequest]
  )
  return {
    ...(mock.length > 0 ? { mockCpuUsPerRequest: median(mock) } : {}),
    ...(generator.length > 0 ? { loadGeneratorCpuUsPerRequest: median(generator) } : {})
  }
}

/** A system's row over its rounds: each rate, latency and cost the median of the rounds; counts summed. */
export const medianRow = (rows: ReadonlyArray<Run>): Run => ({
  ...sharedCosts(rows),
  rps: median(rows.map((r) => r.rps)),
  p50Ms: median(rows.map((r) => r.p50Ms)),
  p99Ms: median(rows.map((r) => r.p99Ms)),
  cpuUsPerRequest: median(rows.map((r) => r.cpuUsPerRequest)),
  requests: rows.reduce((n, r) => n + r.requests, 0),
  errors: rows.reduce((n, r) => n + r.errors, 0),
  non2xx: rows.reduce((n, r) => n + r.non2xx, 0)
})

/**
 * The median over rounds of `f` applied to two systems' windows of the same round (e.g. the
 * server's CPU per request minus the bare proxy's); `NaN` when either side has no window.
 */
export const pairedMedian = (
  a: ReadonlyArray<Run> | undefined,
  b: ReadonlyArray<Run> | undefined,
  f: (a: Run, b: Run) => number
): number => {
  if (a === undefined || b === undefined || a.length === 0 || a.length !== b.length) return Number.NaN
  const values: Array<number> = []
  a.forEach((run, i) => {
    const other = b[i]
    if (other !== undefined) values.push(f(run, other))
  })
  return median(values)
}
