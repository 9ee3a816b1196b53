/**
 * What the bench runners (`examples/bench/run.mjs`, `packages/server/bench/run.mjs`) share: esbuild
 * options for bundling a bench from the workspace packages' TypeScript sources, and running a
 * bundle with `--expose-gc`.
 *
 * Why a bundle rather than `tsx`: tsx compiles with esbuild's `keepNames`, which wraps every
 * function the library creates per call in a `__name(fn, "…")` helper — an `Object.defineProperty`
 * call plus a property store per closure. That costs CPU and ~2 KB of heap per in-flight gateway
 * call that compiled code (`tsc`, or any bundler without `keepNames`) does not pay, so figures
 * taken under tsx describe the dev loader, not the library. The bundle is what compiled code runs.
 */
import { spawnSync } from "node:child_process"

/** esbuild options common to the benches (ESM for Node 20, sources not builds, `require` available). */
export const bundleOptions = {
  bundle: true,
  platform: "node",
  // The workspace packages' TypeScript sources (their `source` export condition), not a build.
  conditions: ["source"],
  format: "esm",
  target: "node20",
  sourcemap: "linked",
  logLevel: "warning",
  banner: {
    js: "import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(import.meta.url);"
  }
}

/** Runs `bundle` with `--expose-gc` and source maps in `cwd`, passing this process's arguments; exits with its status. */
export const runBundle = (bundle, cwd) => {
  const result = spawnSync(
    process.execPath,
    ["--expose-gc", "--enable-source-maps", bundle, ...process.argv.slice(2)],
    {
      stdio: "inherit",
      cwd
    }
  )
  process.exit(result.status ?? 1)
}
