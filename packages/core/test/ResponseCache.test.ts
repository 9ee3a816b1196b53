import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Fiber, TestClock } from "effect"
import { StoreError } from "../src/Errors.js"
import * as ResponseCache from "../src/ResponseCache.js"
import * as ResponseCacheStore from "../src/ResponseCacheStore.js"
import { encode, keyOf } from "../src/internal/cache/key.js"
import { globalScope } from "../src/internal/cache/key.js"
import { tenantScope } from "../src/internal/cache/key.js"

const input = (tenant: string, over: Partial<ResponseCache.KeyInput> = {}): ResponseCache.KeyInput => ({
  scope: tenantScope(tenant),
  workflow: "ticket.classify",
  policyVersion: "p1",
  promptVersion: "v1",
  schemaVersion: "s1",
  sampling: { temperature: 0 },
  messages: [{ role: "user", content: "my printer is on fire" }],
  tools: undefined,
  ...over
})

/** One cached call: a hit answers `hit:<value>`, a miss counts a provider call and stores `answer`. */
const call = (cache: ResponseCache.Service, i: ResponseCache.KeyInput, calls: { n: number }, answer = "A") =>
  cache.cached(
    i,
    { until: Number.POSITIVE_INFINITY, ttlMs: 600_000 },
    (hit) => Effect.succeed(`hit:${hit.value}`),
    (_id, save) =>
      Effect.sync(() => {
        calls.n++
      }).pipe(Effect.zipRight(save(answer)), Effect.as(`miss:${answer}`))
  )

describe("ResponseCache key", () => {
  it("is the same for the same content whatever the key order, and shows no content", () => {
    const a = keyOf(input("t1", { sampling: { temperature: 0, topP: 1 } }))
    const b = keyOf(input("t1", { sampling: { topP: 1, temperature: 0 } }))
    expect(a).toEqual(b)
    expect(a.id).toMatch(/^[0-9a-f]{12}$/)
    expect(a.digest).not.toContain("printer")
  })

  it("changes with every versioned part and with the scope", () => {
    const base = keyOf(input("t1")).digest
    for (const over of [
      { policyVersion: "p2" },
      { promptVersion: "v2" },
      { schemaVersion: "s2" },
      { workflow: "ticket.extract" },
      { sampling: { temperature: 0.5 } },
      { tools: [{ name: "lookup" }] },
      { scope: globalScope }
    ] satisfies Array<Partial<ResponseCache.KeyInput>>) {
      expect(keyOf(input("t1", over)).digest).not.toBe(base)
    }
  })
})

/** The oracle: canonical JSON (object keys sorted, `undefined` members left out). */
const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  const keys = Object.keys(value).sort()
  const members = keys.flatMap((k) => {
    const v: unknown = Reflect.get(value, k)
    return v === undefined ? [] : [`${JSON.stringify(k)}:${canonicalJson(v)}`]
  })
  return `{${members.join(",")}}`
}

/** JSON-like values with the strings that could confuse a delimiter-based encoding. */
const tricky = fc.oneof(
  fc.string(),
  fc
    .array(fc.constantFrom("s", "a", "1", "2", ":", "[", "]", "{", "}", "z", "n", ";", "t"), { maxLength: 6 })
    .map((c) => c.join(""))
)
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    tricky,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(tricky, fc.option(tie("value"), { nil: undefined }), { maxKeys: 4 })
  )
})).value

describe("ResponseCache key encoding", () => {
  it("encodes two values alike exactly when their canonical JSON is the same", () => {
    fc.assert(
      fc.property(jsonValue, jsonValue, (a, b) => {
        expect(encode(a) === encode(b)).toBe(canonicalJson(a) === canonicalJson(b))
      }),
      { numRuns: 3_000 }
    )
  })

  it("cannot be confused by content that looks like its own delimiters", () => {
    expect(encode(["ab", "c"])).not.toBe(encode(["a", "bc"]))
    expect(encode(["a", "sb"])).not.toBe(encode(["as", "b"]))
    expect(encode({ a: "1:b" })).not.toBe(encode({ a: "", b: "" }))
    expect(encode({ a: "b", c: "d" })).not.toBe(encode({ "a:s1:bc": "d" }))
    expect(encode([["a"], "b"])).not.toBe(encode([["a", "b"]]))
    expect(encode({ a: { b: "c" } })).not.toBe(encode({ a: {}, b: "c" }))
    // The same value whatever its key order; absent members are left out.
    expect(encode({ b: 1, a: [true, null] })).toBe(encode({ a: [true, null], b: 1, c: undefined }))
    // Tenants whose names run into the workflow name do not meet.
    expect(keyOf(input("ab", { workflow: "c" })).digest).not.toBe(keyOf(input("a", { workflow: "bc" })).digest)
  })
})

describe("ResponseCache", () => {
  it.effect("a repeated request is a hit, with zero provider calls", () =>
    Effect.gen(function* () {
      const cache = ResponseCache.make(ResponseCacheStore.makeMemory())
      const calls = { n: 0 }
      expect(yield* call(cache, input("t1"), calls)).toBe("miss:A")
      yield* TestClock.adjust(1_000)
      const hit = yield* cache.cached(
        input("t1"),
        { until: Number.POSITIVE_INFINITY, ttlMs: 600_000 },
        (h) => Effect.succeed(h),
        () => Effect.die("called the provider")
      )
      expect(hit.value).toBe("A")
      expect(hit.ageMs).toBe(1_000)
      expect(hit.keyId).toBe(keyOf(input("t1")).id)
      expect(calls.n).toBe(1)
      expect(yield* cache.stats).toEqual({ hits: 1, misses: 1, errors: 0, bytesServed: 1, bytesStored: 1 })
    })
  )

  it.effect("a hit never crosses tenants (property: random tenants, identical requests)", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          fc.uniqueArray(fc.string({ minLength: 1, maxLength: 12 }), { minLength: 2, maxLength: 6 }),
          (tenants) =>
            Effect.runPromise(
              Effect.gen(function* () {
                const cache = ResponseCache.make(ResponseCacheStore.makeMemory())
                const calls = { n: 0 }
                for (const t of tenants)
                  expect(yield* call(cache, input(t), calls, `answer-of-${t}`)).toBe(`miss:answer-of-${t}`)
                for (const t of tenants) expect(yield* call(cache, input(t), calls, "never")).toBe(`hit:answer-of-${t}`)
                expect(calls.n).toBe(tenants.length)
              })
            )
        ),
        { numRuns: 50 }
      )
    )
  )

  it.effect("a prompt-version bump misses", () =>
    Effect.gen(function* () {
      const cache = ResponseCache.make(ResponseCacheStore.makeMemory())
      const calls = { n: 0 }
      yield* call(cache, input("t1"), calls)
      expect(yield* call(cache, input("t1", { promptVersion: "v2" }), calls, "B")).toBe("miss:B")
      expect(calls.n).toBe(2)
    })
  )

  it.effect("an entry lives for its TTL exactly (TestClock)", () =>
    Effect.gen(function* () {
      const cache = ResponseCache.make(ResponseCacheStore.makeMemory())
      const calls = { n: 0 }
      yield* call(cache, input("t1"), calls)
      yield* TestClock.adjust(599_999)
      expect(yield* call(cache, input("t1"), calls, "B")).toBe("hit:A")
      yield* TestClock.adjust(1)
      expect(yield* call(cache, input("t1"), calls, "B")).toBe("miss:B")
    })
  )

  it.effect("the memory store evicts the least recently used entry", () =>
    Effect.gen(function* () {
      const store = ResponseCacheStore.makeMemory({ maxEntries: 2 })
      const entry = { value: "x", storedAt: 0 }
      yield* store.set("a", entry, 1_000)
      yield* store.set("b", entry, 1_000)
      yield* store.get("a")
      yield* store.set("c", entry, 1_000)
      expect(yield* store.get("b")).toBeUndefined()
      expect(yield* store.get("a")).toEqual(entry)
      expect(yield* store.get("c")).toEqual(entry)
    })
  )

  it.effect("refresh skips the read and stores the new answer", () =>
    Effect.gen(function* () {
      const cache = ResponseCache.make(ResponseCacheStore.makeMemory())
      const calls = { n: 0 }
      yield* call(cache, input("t1"), calls)
      const fresh = yield* cache.cached(
        input("t1"),
        { until: Number.POSITIVE_INFINITY, ttlMs: 600_000, refresh: true },
        () => Effect.succeed("hit"),
        (_id, save) => Effect.as(save("B"), "miss")
      )
      expect(fresh).toBe("miss")
      expect(yield* call(cache, input("t1"), calls, "C")).toBe("hit:B")
    })
  )

  it.effect("single flight: concurrent identical requests wait for the first", () =>
    Effect.gen(function* () {
      const cache = ResponseCache.make(ResponseCacheStore.makeMemory())
      const calls = { n: 0 }
      const slow = cache.cached(
        input("t1"),
        { until: Number.POSITIVE_INFINITY, ttlMs: 600_000 },
        (hit) => Effect.succeed(`hit:${hit.value}`),
        (_id, save) =>
          Effect.sync(() => {
            calls.n++
          }).pipe(Effect.zipRight(Effect.sleep(200)), Effect.zipRight(save("A")), Effect.as("miss:A"))
      )
      const fiber = yield* Effect.fork(
        Effect.all(
          Array.from({ length: 8 }, () => slow),
          { concurrency: "unbounded" }
        )
      )
      yield* TestClock.adjust(200)
      const results = yield* Fiber.join(fiber)
      expect(calls.n).toBe(1)
      expect(results.filter((r) => r === "miss:A")).toHaveLength(1)
      expect(results.filter((r) => r === "hit:A")).toHaveLength(7)
    })
  )

  it.effect("a follower waits no longer than its own deadline, then calls on its own", () =>
    Effect.gen(function* () {
      const cache = ResponseCache.make(ResponseCacheStore.makeMemory())
      const started: Array<number> = []
      const run = (until: number) =>
        cache.cached(
          input("t1"),
          { until, ttlMs: 600_000 },
          () => Effect.succeed("hit"),
          (_id, save) =>
            TestClock.currentTimeMillis.pipe(
              Effect.tap((now) => Effect.sync(() => started.push(now))),
              Effect.zipRight(Effect.sleep(1_000)),
              Effect.zipRight(save("A")),
              Effect.as("miss")
            )
        )
      const leader = yield* Effect.fork(run(Number.POSITIVE_INFINITY))
      yield* Effect.yieldNow()
      const follower = yield* Effect.fork(run(300))
      yield* TestClock.adjust(1_300)
      expect(yield* Fiber.join(leader)).toBe("miss")
      expect(yield* Fiber.join(follower)).toBe("miss")
      expect(started).toEqual([0, 300])
    })
  )

  it.effect("fails open: a store that cannot answer is a counted miss, never a failed call", () =>
    Effect.gen(function* () {
      const down = new StoreError({ store: "cache", operation: "get", detail: "down" })
      const cache = ResponseCache.make({ get: () => Effect.fail(down), set: () => Effect.fail(down) })
      const calls = { n: 0 }
      expect(yield* call(cache, input("t1"), calls)).toBe("miss:A")
      expect(yield* call(cache, input("t1"), calls)).toBe("miss:A")
      expect(calls.n).toBe(2)
      expect((yield* cache.stats).errors).toBe(4)
    })
  )

  it.effect("fails open: a store slower than the deadline is a miss at the deadline", () =>
    Effect.gen(function* () {
      const cache = ResponseCache.make({ get: () => Effect.never, set: () => Effect.void })
      const fiber = yield* Effect.fork(
        cache.cached(
          input("t1"),
          { until: 50, ttlMs: 1_000 },
          () => Effect.succeed("hit"),
          () => Effect.map(TestClock.currentTimeMillis, (now) => `miss@${now}`)
        )
      )
      yield* TestClock.adjust(50)
      expect(yield* Fiber.join(fiber)).toBe("miss@50")
    })
  )
})
