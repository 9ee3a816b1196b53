import { configDefaults, defineProject } from "vitest/config"

/**
 * Files whose run is dominated by real time or many iterations: they run in the root's `slow`
 * project, not here. `demo.test.ts` runs every demo scenario for real (HTTP to the mock server,
 * real deadlines and delays, ~25 s); `bench-smoke.test.ts` runs the benchmark suite with a child
 * process (~5 s).
 */
export const slow = ["test/demo.test.ts", "test/bench-smoke.test.ts"]

export default defineProject({
  test: {
    name: "examples",
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...slow],
    testTimeout: 30_000
  }
})
