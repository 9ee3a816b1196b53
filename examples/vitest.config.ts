import { configDefaults, defineProject } from "vitest/config"
import { sourceResolve } from "../vitest.shared.js"

/**
 * Files whose run is dominated by real time or many iterations: they run in the root's `slow`
 * project, not here. `demo.test.ts` runs every demo scenario for real (HTTP to the mock server,
 * real deadlines and delays, ~25 s); `bench-smoke.test.ts` runs the benchmark suite with a child
 * process (~5 s); `pack.test.ts` builds and packs the packages, installs the tarballs with npm into a
 * project outside the workspace and runs a program against them (~1–2 min, needs the npm registry).
 */
export const slow = ["test/demo.test.ts", "test/bench-smoke.test.ts", "test/pack.test.ts"]

export default defineProject({
  ...sourceResolve,
  test: {
    name: "examples",
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...slow],
    testTimeout: 30_000
  }
})
