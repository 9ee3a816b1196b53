import { defineProject } from "vitest/config"
import { sourceResolve } from "../../vitest.shared.js"

export default defineProject({
  ...sourceResolve,
  test: {
    name: "cli",
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000
  }
})
