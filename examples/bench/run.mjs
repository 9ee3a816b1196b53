/**
 * `pnpm bench`: bundles the suite with esbuild and runs the bundle with `--expose-gc`.
 *
 * Why a bundle rather than `tsx`: tsx compiles with esbuild's `keepNames`, which wraps every
 * function the library creates per call in a `__name(fn, "…")` helper — an `Object.defineProperty`
 * call plus a property store per closure. That costs CPU and ~2 KB of heap per in-flight gateway
 * call that compiled code (`tsc`, or any bundler without `keepNames`) does not pay, so figures
 * taken under tsx describe the dev loader, not the library. The bundle is what compiled code runs.
 */
import { spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

const here = (path) => fileURLToPath(new URL(path, import.meta.url))
const outfile = here("./main.bundle.mjs")
await build({
  entryPoints: [here("./main.ts")],
  outfile,
  bundle: true,
  platform: "node",
  // The workspace packages' TypeScript sources (their `source` export condition), not a build.
  conditions: ["source"],
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  logLevel: "warning",
  // Packages that load files relative to themselves at run time stay in node_modules.
  packages: "bundle",
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" }
})
const result = spawnSync(process.execPath, ["--expose-gc", "--enable-source-maps", outfile, ...process.argv.slice(2)], {
  stdio: "inherit",
  cwd: here("..")
})
process.exit(result.status ?? 1)
