import { defineConfig } from "vitest/config"
import { slow as examplesSlow } from "./examples/vitest.config.js"
import { testingAlias } from "./packages/core/testingAlias.js"
import { sourceResolve } from "./vitest.shared.js"

/**
 * Two kinds of project. Unit (`core`, `adapters`, `testing`, `examples`): every TestClock test and
 * the fast wire tests against the loopback mock server. `slow`: runs dominated by real time or many
 * iterations — the examples' list, and every `packages/<name>/test/**\/*.slow.test.ts` — excluded
 * from their unit projects.
 *
 * `pnpm test` runs both, `pnpm test:unit` and `pnpm test:slow` one kind.
 */
export default defineConfig({
  ...sourceResolve,
  test: {
    projects: [
      "packages/*/vitest.config.ts",
      "examples/vitest.config.ts",
      {
        ...sourceResolve,
        resolve: { ...sourceResolve.resolve, alias: testingAlias },
        test: {
          name: "slow",
          include: [...examplesSlow.map((file) => `examples/${file}`), "packages/*/test/**/*.slow.test.ts"],
          testTimeout: 60_000
        }
      }
    ]
  }
})
