/**
 * Per-route sliding window of attempt samples: a fixed-size ring of typed arrays (instant, latency,
 * TTFT, kind), grown on demand up to its capacity so that routes with few calls stay small.
 * Updates are O(1); statistics are computed on read.
 */

/** Sample kinds. */
export const Kind = {
  /** The provider answered. */
  success: 0,
  /** Availability failure other than a timeout: 429, 5xx, overload, transport. */
  failure: 1,
  /** The provider did not answer within the per-attempt timeout. */
  timeout: 2,
  /** Not about availability: 400s, refusals, invalid output, our own deadline. */
  neutral: 3
} as const
export type Kind = (typeof Kind)[keyof typeof Kind]

/** Bytes per sample: Float64 instant + Float32 latency + Float32 TTFT + Uint8 kind. */
export const bytesPerSample = 17

/** Smallest ring allocated when a route records its first sample. */
const initialCapacity = 8

/** What a provider said about its rate limits, with when it said it. */
export interface Headroom {
  readonly remainingRequests: number | undefined
  readonly limitRequests: number | undefined
  readonly remainingTokens: number | undefined
  readonly limitTokens: number | undefined
  readonly resetAt: number | undefined
  readonly reportedAt: number
}

/** Statistics of the samples inside the window at one instant. */
export interface WindowStats {
  readonly samples: number
  readonly successes: number
  readonly failures: number
  readonly timeouts: number
  readonly neutral: number
  readonly latencyP50: number | undefined
  readonly latencyP95: number | undefined
  readonly ttftP50: number | undefined
  readonly ttftP95: number | undefined
}

/** Gain of the smoothed mean (1/8, as TCP's smoothed round-trip time). */
export const meanGain = 0.125
/** Gain of the smoothed mean deviation (1/4, as TCP's round-trip time variation). */
export const devGain = 0.25
/** The p95 estimate is the smoothed mean plus this many smoothed mean deviations (≈ 1.645 σ for a normal law). */
export const deviations = 2

/**
 * A cheap, smoothed p95 estimate: mean + 2 × mean absolute deviation, both exponentially weighted
 * (Jacobson/Karels, as TCP's retransmission timer), rounded to 0.1 ms. O(1) per sample, no sort;
 * each sample moves the mean by 1/8 and the deviation by 1/4 of its distance from them.
 */
export const smoothedP95 = (mean: number, dev: number): number | undefined =>
  Number.isNaN(mean) ? undefined : Math.round((mean + deviations * dev) * 10) / 10

/** A smoothed mean (gain {@link meanGain}) and mean deviation (gain {@link devGain}); the mean is NaN before the first sample. */
class Smoothed {
  mean = Number.NaN
  dev = 0

  add(x: number): void {
    if (Number.isNaN(this.mean)) {
      this.mean = x
      return
    }
    this.dev += devGain * (Math.abs(x - this.mean) - this.dev)
    this.mean += meanGain * (x - this.mean)
  }

  /** {@link smoothedP95}; `undefined` before the first sample. */
  get p95(): number | undefined {
    return smoothedP95(this.mean, this.dev)
  }
}

/** Nearest-rank percentile of sorted values. */
export const percentile = (sorted: Float64Array, p: number): number | undefined =>
  sorted.length === 0 ? undefined : sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]

/** Room for the values a {@link RouteWindow.stats} read sorts (one per reader, reused across reads). */
export interface Scratch {
  readonly latency: Float64Array
  readonly ttft: Float64Array
}

/** A {@link Scratch} for windows of at most `maxSamples` samples. */
export const scratchOf = (maxSamples: number): Scratch => ({
  latency: new Float64Array(maxSamples),
  ttft: new Float64Array(maxSamples)
})

export class RouteWindow {
  private at: Float64Array
  private latency: Float32Array
  private ttft: Float32Array
  private kind: Uint8Array
  /** Next write position. */
  private head = 0
  private size = 0
  /** Availability failures since the last success (neutral samples leave it alone). */
  consecutiveFailures = 0
  /** The failure ratio counts samples from this instant on (the last time the breaker closed). */
  countFrom = Number.NEGATIVE_INFINITY
  lastErrorClass: string | undefined = undefined
  lastErrorTag: string | undefined = undefined
  lastErrorAt: number | undefined = undefined
  lastAt = 0
  headroom: Headroom | undefined = undefined
  /** Smoothed latency and time to first token of successes. */
  private readonly smoothedLatency = new Smoothed()
  private readonly smoothedTtft = new Smoothed()

  constructor(readonly maxSamples: number) {
    const capacity = Math.min(initialCapacity, maxSamples)
    const buffer = new ArrayBuffer(capacity * bytesPerSample)
    this.at = new Float64Array(buffer, 0, capacity)
    this.latency = new Float32Array(buffer, capacity * 8, capacity)
    this.ttft = new Float32Array(buffer, capacity * 12, capacity)
    this.kind = new Uint8Array(buffer, capacity * 16, capacity)
  }

  /** Current ring capacity (samples). */
  get capacity(): number {
    return this.at.length
  }

  /** Samples held (inside the window or not). */
  get length(): number {
    return this.size
  }

  private grow(): void {
    const old = this.capacity
    const capacity = Math.min(old * 2, this.maxSamples)
    const buffer = new ArrayBuffer(capacity * bytesPerSample)
    const at = new Float64Array(buffer, 0, capacity)
    const latency = new Float32Array(buffer, capacity * 8, capacity)
    const ttft = new Float32Array(buffer, capacity * 12, capacity)
    const kind = new Uint8Array(buffer, capacity * 16, capacity)
    // Only grown while not yet full, so samples sit at [0, size) in order.
    at.set(this.at.subarray(0, this.size))
    latency.set(this.latency.subarray(0, this.size))
    ttft.set(this.ttft.subarray(0, this.size))
    kind.set(this.kind.subarray(0, this.size))
    this.at = at
    this.latency = latency
    this.ttft = ttft
    this.kind = kind
    this.head = this.size
  }

  /** Adds one sample. O(1) amortised; no allocation once the ring has reached its capacity. */
  add(now: number, kind: Kind, latencyMs: number, ttftMs: number | undefined): void {
    if (this.size === this.capacity && this.capacity < this.maxSamples) this.grow()
    const i = this.head
    this.at[i] = now
    this.latency[i] = latencyMs
    this.ttft[i] = ttftMs ?? Number.NaN
    this.kind[i] = kind
    this.head = (i + 1) % this.capacity
    if (this.size < this.capacity) this.size++
    this.lastAt = now
    if (kind === Kind.success) {
      this.smoothedLatency.add(latencyMs)
      if (ttftMs !== undefined) this.smoothedTtft.add(ttftMs)
      this.consecutiveFailures = 0
    } else if (kind === Kind.failure || kind === Kind.timeout) this.consecutiveFailures++
  }

  /** Smoothed p95 latency of successes ({@link smoothedP95}); `undefined` before the first. */
  get latencyP95Smoothed(): number | undefined {
    return this.smoothedLatency.p95
  }

  /** Smoothed p95 time to first token; `undefined` before the first. */
  get ttftP95Smoothed(): number | undefined {
    return this.smoothedTtft.p95
  }

  /** Index of the `n`-th oldest sample held. */
  private index(n: number): number {
    return (this.head - this.size + n + this.capacity) % this.capacity
  }

  /** Availability outcomes (successes and failures, neutral excluded) since `from`, within `windowMs`. */
  availability(now: number, windowMs: number): { readonly calls: number; readonly failures: number } {
    const from = Math.max(now - windowMs, this.countFrom)
    let calls = 0
    let failures = 0
    for (let n = this.size - 1; n >= 0; n--) {
      const i = this.index(n)
      if (this.at[i]! < from) break
      const k = this.kind[i]
      if (k === Kind.neutral) continue
      calls++
      if (k !== Kind.success) failures++
    }
    return { calls, failures }
  }

  /**
   * Statistics of the samples no older than `windowMs`. Latency percentiles are over successes.
   * `scratch` (at least `maxSamples` long each) holds the values sorted for the percentiles, so
   * that a caller reading many records allocates no arrays per read; without it, they are made.
   */
  stats(now: number, windowMs: number, scratch?: Scratch): WindowStats {
    const from = now - windowMs
    let first = this.size
    for (let n = this.size - 1; n >= 0; n--) {
      if (this.at[this.index(n)]! < from) break
      first = n
    }
    let successes = 0
    let failures = 0
    let timeouts = 0
    let neutral = 0
    const room = this.size - first
    const latencies = scratch?.latency ?? new Float64Array(room)
    const ttfts = scratch?.ttft ?? new Float64Array(room)
    let nt = 0
    for (let n = first; n < this.size; n++) {
      const i = this.index(n)
      switch (this.kind[i]) {
        case Kind.success:
          latencies[successes++] = this.latency[i]!
          break
        case Kind.failure:
          failures++
          break
        case Kind.timeout:
          timeouts++
          break
        default:
          neutral++
      }
      const t = this.ttft[i]!
      if (!Number.isNaN(t)) ttfts[nt++] = t
    }
    const lat = latencies.subarray(0, successes).sort()
    const tt = ttfts.subarray(0, nt).sort()
    return {
      samples: this.size - first,
      successes,
      failures,
      timeouts,
      neutral,
      latencyP50: percentile(lat, 0.5),
      latencyP95: percentile(lat, 0.95),
      ttftP50: percentile(tt, 0.5),
      ttftP95: percentile(tt, 0.95)
    }
  }
}
