import { configDefaults, defineProject } from "vitest/config"
import { sourceResolve } from "../../vitest.shared.js"

export default defineProject({
  ...sourceResolve,
  test: {
    name: "adapters",
    include: ["test/**/*.test.ts"],
    // Real-time suites (the Redis stores against a real redis-server) run in the root's `slow` project.
    exclude: [...configDefaults.exclude, "test/**/*.slow.test.ts"],
    testTimeout: 30_000
  }
})
