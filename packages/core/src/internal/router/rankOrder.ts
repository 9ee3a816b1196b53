/**
 * The order of scored targets: by group (those whose observed p95 fits the time left, then under a
 * short deadline the fast latency class), then total descending, ties in route order. A radix or
 * counting sort over integer keys: no comparator call per pair.
 */

/** Bits of a sort digit (two digits cover a 22-bit key). */
const digitBits = 11
const digitMask = (1 << digitBits) - 1
/** Keys spanning fewer values than this are sorted in one counting pass. */
const countingRange = 8192

/**
 * Indices `0..n-1` by group, then total, both descending, ties by index. Totals have 4 decimals
 * and lie within ±50 (five terms of weight ≤ 1, a penalty ≤ 1), so `group · 2^20 + total · 10⁴ +
 * 2^19` is a 22-bit integer key: a stable two-pass radix sort of the keys (O(n), no comparator
 * call per pair) gives the order.
 */
export const rankOrder = (n: number, totals: Int32Array, group: ((i: number) => number) | undefined): Array<number> => {
  // One group: the key is the total itself, no key array (the usual case).
  let keys = totals
  if (group !== undefined) {
    keys = new Int32Array(n)
    for (let i = 0; i < n; i++) keys[i] = group(i) * 1_048_576 + totals[i]! + 524_288
  }
  let low = n === 0 ? 0 : keys[0]!
  let high = low
  for (let i = 1; i < n; i++) {
    const key = keys[i]!
    if (key < low) low = key
    else if (key > high) high = key
  }
  // Keys close together (the usual case): one counting pass over their range.
  if (n > 32 && high - low < countingRange) return countingOrder(n, keys, high, high - low)
  let from = new Int32Array(n)
  let to = new Int32Array(n)
  for (let i = 0; i < n; i++) from[i] = i
  if (n <= 32) {
    // Few targets: a stable insertion sort beats the radix passes.
    for (let k = 1; k < n; k++) {
      const i = from[k]!
      let j = k - 1
      while (j >= 0 && keys[from[j]!]! < keys[i]!) {
        from[j + 1] = from[j]!
        j--
      }
      from[j + 1] = i
    }
    return copyOut(from, n)
  }
  // Two radix passes over the 22-bit distance below the highest key (ascending distance: descending key).
  const counts = new Int32Array(digitMask + 1)
  for (let pass = 0; pass < 2; pass++) {
    const shift = pass * digitBits
    counts.fill(0)
    for (let i = 0; i < n; i++) counts[((high - keys[i]!) >> shift) & digitMask]!++
    startsOf(counts, digitMask + 1)
    for (let k = 0; k < n; k++) {
      const i = from[k]!
      to[counts[((high - keys[i]!) >> shift) & digitMask]!++] = i
    }
    const swap = from
    from = to
    to = swap
  }
  return copyOut(from, n)
}

/** Indices `0..n-1` by key descending, ties by index: one counting pass over the `span` below `high`. */
const countingOrder = (n: number, keys: Int32Array, high: number, span: number): Array<number> => {
  const counts = new Int32Array(span + 1)
  for (let i = 0; i < n; i++) counts[high - keys[i]!]!++
  startsOf(counts, span + 1)
  const out = new Array<number>(n)
  for (let i = 0; i < n; i++) out[counts[high - keys[i]!]!++] = i
  return out
}

/**
 * The first `size` counts made into the start of each value's run (an exclusive prefix sum), with
 * the running sum in a local: no store-to-load chain from one slot to the next.
 */
const startsOf = (counts: Int32Array, size: number): void => {
  let sum = 0
  for (let d = 0; d < size; d++) {
    const c = counts[d]!
    counts[d] = sum
    sum += c
  }
}

/** The first `n` values of `from` as a plain array (`Array.from` walks an iterator). */
const copyOut = (from: Int32Array, n: number): Array<number> => {
  const out = new Array<number>(n)
  for (let k = 0; k < n; k++) out[k] = from[k]!
  return out
}
