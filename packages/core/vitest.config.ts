import { configDefaults, defineProject } from "vitest/config"

export default defineProject({
  test: {
    name: "core",
    include: ["test/**/*.test.ts"],
    // Real-time suites run in the root's `slow` project.
    exclude: [...configDefaults.exclude, "test/**/*.slow.test.ts"],
    testTimeout: 30_000
  }
})
