/**
 * `pnpm bench` for the server: bundles `main.ts` and `children.ts` with esbuild (no `keepNames`,
 * as `scripts/benchBundle.mjs` explains: tsx's `__name` wrapper per closure is the dev loader's
 * cost, not the library's) and runs the bundle; `main` forks the children's bundle. Arguments pass
 * through (`--duration <s>`); `--build-only` stops after the bundles (for `profile.mjs`).
 */
import { fileURLToPath } from "node:url"
import { build } from "esbuild"
import { bundleOptions, runBundle } from "../../../scripts/benchBundle.mjs"

const here = (path) => fileURLToPath(new URL(path, import.meta.url))
await build({
  ...bundleOptions,
  entryPoints: { "main.bundle": here("./main.ts"), "children.bundle": here("./children.ts") },
  outdir: here("."),
  outExtension: { ".js": ".mjs" },
  // Portkey is started from its own install; autocannon loads its workers by file.
  external: ["autocannon", "@portkey-ai/gateway"]
})
if (process.argv.includes("--build-only")) process.exit(0)
runBundle(here("./main.bundle.mjs"), here(".."))
