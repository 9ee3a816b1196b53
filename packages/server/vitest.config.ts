import { configDefaults, defineProject } from "vitest/config"
import { sourceResolve } from "../../vitest.shared.js"

export default defineProject({
  ...sourceResolve,
  test: {
    name: "server",
    include: ["test/**/*.test.ts"],
    // Real-time suites (load, slow clients, disconnect storms) run in the root's `slow` project.
    exclude: [...configDefaults.exclude, "test/**/*.slow.test.ts"],
    // `eventsource-parser` (under the Vercel AI SDK) exports TypeScript sources under `source` too:
    // transformed by vite, not loaded by Node.
    server: { deps: { inline: [/eventsource-parser/, /@ai-sdk\//, /node_modules\/ai\//] } },
    testTimeout: 30_000
  }
})
