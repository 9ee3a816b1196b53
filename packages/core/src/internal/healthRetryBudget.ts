/**
 * The process-wide retry budget: a token bucket counted in milli-tokens (integers, so sums of
 * fractional deposits are exact). Every first attempt deposits `ratio` of a token, time deposits
 * `minPerSecond` tokens per second, the bucket holds at most `burst` tokens (so only recent traffic
 * earns retries) and starts full; a retry takes one token.
 */
export class RetryBudget {
  private milli: number
  private lastRefillAt: number | undefined = undefined
  firstAttempts = 0
  granted = 0
  rejected = 0
  private readonly depositMilli: number
  private readonly capacityMilli: number

  constructor(
    ratio: number,
    /** Milli-tokens per millisecond equal tokens per second. */
    private readonly minPerSecond: number,
    burst: number
  ) {
    this.depositMilli = Math.round(ratio * 1000)
    this.capacityMilli = Math.round(burst * 1000)
    this.milli = this.capacityMilli
  }

  private refill(now: number): void {
    if (this.lastRefillAt !== undefined && now > this.lastRefillAt) {
      this.milli = Math.min(this.capacityMilli, this.milli + (now - this.lastRefillAt) * this.minPerSecond)
    }
    if (this.lastRefillAt === undefined || now > this.lastRefillAt) this.lastRefillAt = now
  }

  /** One first attempt started. */
  deposit(now: number): void {
    this.refill(now)
    this.firstAttempts++
    this.milli = Math.min(this.capacityMilli, this.milli + this.depositMilli)
  }

  /** Takes one retry; false when the bucket holds less than one token. */
  withdraw(now: number): boolean {
    this.refill(now)
    if (this.milli >= 1000) {
      this.milli -= 1000
      this.granted++
      return true
    }
    this.rejected++
    return false
  }

  /** Tokens available at `now`. */
  tokens(now: number): number {
    this.refill(now)
    return this.milli / 1000
  }

  get capacity(): number {
    return this.capacityMilli / 1000
  }
}
