import { configDefaults, defineProject } from "vitest/config"
import { sourceResolve } from "../../vitest.shared.js"
import { testingAlias } from "./testingAlias.js"

export default defineProject({
  ...sourceResolve,
  resolve: { ...sourceResolve.resolve, alias: testingAlias },
  test: {
    name: "core",
    include: ["test/**/*.test.ts"],
    // Real-time suites run in the root's `slow` project.
    exclude: [...configDefaults.exclude, "test/**/*.slow.test.ts"],
    testTimeout: 30_000
  }
})
