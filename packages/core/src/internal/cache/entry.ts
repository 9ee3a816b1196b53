/**
 * One stored answer of the response cache (re-exported as `ResponseCacheStore.Entry`): below the
 * store module and its fast path, which both name it.
 *
 *
 */

/** One stored answer: its encoded form and the epoch-ms instant it was stored. */
export interface Entry {
  readonly value: string
  readonly storedAt: number
  /**
   * The decoded answer, kept beside `value` by a store in this process's memory so that a hit
   * skips decoding; never encoded (a shared store keeps `value` and `storedAt` only).
   */
  readonly decoded?: unknown
}
