import { configDefaults, defineProject } from "vitest/config"
import { sourceResolve } from "../vitest.shared.js"

/**
 * Files whose run is dominated by real time or many iterations: they run in the root's `slow`
 * project, not here. `demo.test.ts` runs every demo scenario for real (HTTP to the mock server,
 * real deadlines and delays, ~25 s); `bench-smoke.test.ts` runs the benchmark suite with a child
 * process (~5 s); `pack.test.ts` builds and packs the packages, installs the tarballs with npm into a
 * project outside the workspace and runs a program against them (~2–4 min, needs the npm registry);
 * `fallbackLab.slow.test.ts` drives the fallback lab page in headless Chromium (~10–20 s);
 * `multiReplica.slow.test.ts` runs the multi-replica proof (4 gateway processes, a redis-server of
 * its own, ~10 s); `mockBin.slow.test.ts` and `firstCall.slow.test.ts` start the `modelgate-mock`
 * bin (and the README's first program) as processes from source (~5–15 s each);
 * `redisCommands.slow.test.ts` checks the bench's Redis command counter against a `redis-server` of
 * its own.
 */
export const slow = [
  "test/demo.test.ts",
  "test/bench-smoke.test.ts",
  "test/pack.test.ts",
  "test/fallbackLab.slow.test.ts",
  "test/multiReplica.slow.test.ts",
  "test/mockBin.slow.test.ts",
  "test/firstCall.slow.test.ts",
  "test/redisCommands.slow.test.ts"
]

export default defineProject({
  ...sourceResolve,
  test: {
    name: "examples",
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...slow],
    // `eventsource-parser` (under the Vercel AI SDK) exports TypeScript sources under `source` too:
    // transformed by vite, not loaded by Node.
    server: { deps: { inline: [/eventsource-parser/, /@ai-sdk\//, /node_modules\/ai\//] } },
    testTimeout: 30_000
  }
})
