import { configDefaults, defineProject } from "vitest/config"
import { sourceResolve } from "../../vitest.shared.js"

export default defineProject({
  ...sourceResolve,
  test: {
    name: "server",
    include: ["test/**/*.test.ts"],
    // Real-time suites (load, slow clients, disconnect storms) run in the root's `slow` project.
    exclude: [...configDefaults.exclude, "test/**/*.slow.test.ts"],
    testTimeout: 30_000
  }
})
