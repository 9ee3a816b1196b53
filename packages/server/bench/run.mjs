/**
 * `pnpm bench` for the server: bundles `main.ts` and `children.ts` with esbuild (no `keepNames`,
 * as `examples/bench/run.mjs` explains: tsx's `__name` wrapper per closure is the dev loader's
 * cost, not the library's) and runs the bundle; `main` forks the children's bundle. Arguments pass
 * through (`--duration <s>`); `--build-only` stops after the bundles (for `profile.mjs`).
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

const here = (path) => fileURLToPath(new URL(path, import.meta.url))
await build({
  entryPoints: { "main.bundle": here("./main.ts"), "children.bundle": here("./children.ts") },
  outdir: here("."),
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  // The workspace packages' TypeScript sources (their `source` export condition), not a build.
  conditions: ["source"],
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  logLevel: "warning",
  // Portkey is started from its own install; autocannon loads its workers by file.
  external: ["autocannon", "@portkey-ai/gateway"],
  banner: {
    js: "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);"
  }
})
if (process.argv.includes("--build-only")) process.exit(0)
const result = spawnSync(
  process.execPath,
  ["--expose-gc", "--enable-source-maps", here("./main.bundle.mjs"), ...process.argv.slice(2)],
  { stdio: "inherit", cwd: here("..") }
)
process.exit(result.status ?? 1)
