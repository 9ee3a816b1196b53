/**
 * Measurement primitives: paired sequential timings (tinybench, interleaved rounds), throughput
 * under concurrency, CPU per call and heap per object. Every measurement runs a baseline and a
 * subject in the same process, interleaved, so that a noisy neighbour hits both alike.
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Bench, hrtimeNow } from "tinybench"

/** A knob set that scales the whole suite: `full` for `pnpm bench`, `smoke` for CI. */
export interface Profile {
  readonly name: "full" | "smoke"
  /** tinybench time per task per round (ms). */
  readonly taskTimeMs: number
  /** tinybench warm-up time per task (ms). */
  readonly warmupMs: number
  /** Interleaved rounds of every paired measurement. */
  readonly rounds: number
  /** Most calls per throughput round (fewer when the warm-up rate says the round would exceed `roundSeconds`). */
  readonly throughputCalls: number
  /** Wall time a throughput or HTTP round aims at, seconds. */
  readonly roundSeconds: number
  /** Objects held in memory measurements (in-flight calls, tenants). */
  readonly memoryCount: number
  /** Most calls per HTTP round. */
  readonly httpCalls: number
  /** Rounds of the HTTP comparison (each round runs every client once, in rotated order). */
  readonly httpRounds: number
}

export const profiles: Record<Profile["name"], Profile> = {
  full: {
    name: "full",
    taskTimeMs: 300,
    warmupMs: 150,
    rounds: 3,
    throughputCalls: 20_000,
    roundSeconds: 1.5,
    memoryCount: 10_000,
    httpCalls: 2_000,
    // Eight clients: four rounds start each client at four places spread over the order.
    httpRounds: 4
  },
  smoke: {
    name: "smoke",
    taskTimeMs: 10,
    warmupMs: 5,
    rounds: 1,
    throughputCalls: 200,
    roundSeconds: 0.2,
    memoryCount: 200,
    httpCalls: 20,
    httpRounds: 1
  }
}

/** Median, p99 and mean of a sample set (any unit). */
export interface Summary {
  readonly n: number
  readonly mean: number
  readonly p50: number
  readonly p99: number
}

/** Percentile by linear interpolation over sorted values (`q` in [0, 1]). */
export const quantile = (sorted: ReadonlyArray<number>, q: number): number => {
  if (sorted.length === 0) return Number.NaN
  const pos = (sorted.length - 1) * q
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  const a = sorted[lo]!
  const b = sorted[hi]!
  return a + (b - a) * (pos - lo)
}

export const summarize = (values: ReadonlyArray<number>): Summary => {
  const sorted = [...values].sort((a, b) => a - b)
  let sum = 0
  for (const v of sorted) sum += v
  return { n: sorted.length, mean: sum / sorted.length, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) }
}

export const median = (values: ReadonlyArray<number>): number =>
  quantile(
    [...values].sort((a, b) => a - b),
    0.5
  )

/** Median of per-round figures with their range. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

export const spread = (values: ReadonlyArray<number>): Spread => ({
  median: median(values),
  min: Math.min(...values),
  max: Math.max(...values)
})

/**
 * The garbage collector: `global.gc` when the process was started with `--expose-gc`, else the
 * same function obtained by setting the flag at run time (so that the smoke test, run by vitest
 * without the flag, still measures heap after a full GC).
 */
const gcFunction = ((): (() => void) | undefined => {
  const exposed = (globalThis as { gc?: () => void }).gc
  if (exposed !== undefined) return exposed
  try {
    setFlagsFromString("--expose-gc")
    const gc: unknown = runInNewContext("gc")
    return typeof gc === "function" ? () => void gc() : undefined
  } catch {
    return undefined
  }
})()

/** Runs `times` full garbage collections (twice by default); `false` when no collector could be reached. */
export const collectGarbage = (times = 2): boolean => {
  if (gcFunction === undefined) return false
  for (let i = 0; i < times; i++) gcFunction()
  return true
}

/** A task of a paired measurement: one call per invocation (sync, or returning a promise). */
export type Task = () => unknown

/** Shortest sample tinybench takes (µs): faster tasks run several calls per sample. */
const minSampleUs = 25

const isPromise = (u: unknown): u is PromiseLike<unknown> =>
  typeof u === "object" && u !== null && "then" in u && typeof u.then === "function"

/** Per-call time of `task` in µs, roughly (calibration only). */
const roughUs = async (task: Task): Promise<number> => {
  const n = 200
  const t0 = performance.now()
  for (let i = 0; i < n; i++) {
    const r = task()
    if (isPromise(r)) await r
  }
  return ((performance.now() - t0) * 1000) / n
}

/** `task` run `batch` times per invocation (the same batch for both sides of a pair). */
const batched = (task: Task, batch: number): Task => {
  if (batch === 1) return task
  const first = task()
  if (isPromise(first)) {
    return async () => {
      for (let i = 0; i < batch; i++) await task()
    }
  }
  return () => {
    for (let i = 0; i < batch; i++) task()
  }
}

const samplesOf = (bench: Bench, name: string, batch: number): Array<number> =>
  // tinybench reports milliseconds per invocation; an invocation is `batch` calls.
  (bench.getTask(name)?.result?.latency.samples ?? []).map((x) => (x * 1000) / batch)

const makeBench = (profile: Profile) =>
  new Bench({
    time: profile.taskTimeMs,
    warmupTime: profile.warmupMs,
    warmupIterations: 16,
    iterations: 16,
    now: hrtimeNow,
    throws: true
  })

export interface PairedResult {
  /** Calls per tinybench sample: calls under 25 µs are timed in batches (p99 is then over batch means). */
  readonly batch: { readonly baseline: number; readonly subject: number }
  /** Per-call latency of the baseline, in µs, over all rounds' samples. */
  readonly baseline: Summary
  /** Per-call latency of the subject, in µs, over all rounds' samples. */
  readonly subject: Summary
  /** Median over rounds of (subject p50 − baseline p50), µs. */
  readonly diffP50: number
  /** Median over rounds of (subject p99 − baseline p99), µs. */
  readonly diffP99: number
  /** Median over rounds of subject p50 / baseline p50. */
  readonly ratioP50: number
}

/**
 * Times `baseline` and `subject` per call with tinybench (warm-up, then as many iterations as fit
 * in `taskTimeMs`), in `rounds` interleaved rounds (B S, S B, B S, …), and compares them round by
 * round so that a burst of noise during one round cannot fake a difference.
 */
export const paired = async (profile: Profile, baseline: Task, subject: Task): Promise<PairedResult> => {
  const batchOf = async (task: Task) => Math.max(1, Math.ceil(minSampleUs / Math.max(0.01, await roughUs(task))))
  const bBatch = await batchOf(baseline)
  const sBatch = await batchOf(subject)
  const b0 = batched(baseline, bBatch)
  const s0 = batched(subject, sBatch)
  const base: Array<number> = []
  const subj: Array<number> = []
  const d50: Array<number> = []
  const d99: Array<number> = []
  const r50: Array<number> = []
  for (let round = 0; round < profile.rounds; round++) {
    const bench = makeBench(profile)
    // Alternate the order: the second task of a round runs on a warmer (or more collected) heap.
    if (round % 2 === 0) bench.add("baseline", b0).add("subject", s0)
    else bench.add("subject", s0).add("baseline", b0)
    await bench.run()
    const b = samplesOf(bench, "baseline", bBatch)
    const s = samplesOf(bench, "subject", sBatch)
    const bs = summarize(b)
    const ss = summarize(s)
    for (const x of b) base.push(x)
    for (const x of s) subj.push(x)
    d50.push(ss.p50 - bs.p50)
    d99.push(ss.p99 - bs.p99)
    r50.push(ss.p50 / bs.p50)
  }
  return {
    batch: { baseline: bBatch, subject: sBatch },
    baseline: summarize(base),
    subject: summarize(subj),
    diffP50: median(d50),
    diffP99: median(d99),
    ratioP50: median(r50)
  }
}

/** Times one task alone (same harness as {@link paired}); per-call µs over all rounds. */
export const single = async (profile: Profile, task: Task): Promise<Summary> => {
  const batch = Math.max(1, Math.ceil(minSampleUs / Math.max(0.01, await roughUs(task))))
  const t = batched(task, batch)
  const all: Array<number> = []
  for (let round = 0; round < profile.rounds; round++) {
    const bench = makeBench(profile)
    bench.add("task", t)
    await bench.run()
    for (const x of samplesOf(bench, "task", batch)) all.push(x)
  }
  return summarize(all)
}

/** One timed batch: wall time and process CPU time, both in ms. */
export interface Timed<A> {
  readonly value: A
  readonly wallMs: number
  readonly cpuMs: number
}

export const timed = async <A>(run: () => Promise<A>): Promise<Timed<A>> => {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const value = await run()
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  return { value, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 }
}

/** Calls for one round at `ratePerSecond` lasting about `seconds`, within [min, max]. */
export const callsFor = (ratePerSecond: number, seconds: number, min: number, max: number): number =>
  Math.max(min, Math.min(max, Math.round(ratePerSecond * seconds)))

/** Formats a number with a fixed count of significant decimals for tables. */
export const fmt = (x: number, digits = 2): string => {
  if (!Number.isFinite(x)) return String(x)
  const abs = Math.abs(x)
  if (abs >= 1000) return Math.round(x).toLocaleString("en-US")
  if (abs >= 100) return x.toFixed(Math.max(0, digits - 2))
  if (abs >= 10) return x.toFixed(Math.max(0, digits - 1))
  return x.toFixed(digits)
}
