/**
 * `pnpm bench`: bundles the suite with esbuild and runs the bundle with `--expose-gc` (why a
 * bundle rather than `tsx`: `scripts/benchBundle.mjs`).
 */
import { fileURLToPath } from "node:url"
import { build } from "esbuild"
import { bundleOptions, runBundle } from "../../scripts/benchBundle.mjs"

const here = (path) => fileURLToPath(new URL(path, import.meta.url))
const outfile = here("./main.bundle.mjs")
await build({
  ...bundleOptions,
  entryPoints: [here("./main.ts")],
  outfile,
  // Packages that load files relative to themselves at run time stay in node_modules.
  packages: "bundle"
})
runBundle(outfile, here(".."))
