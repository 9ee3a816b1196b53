// Fails when the packages' sources import each other in a circle. Type-only imports are skipped, as
// Effect's own repo does (its `scripts/circular.mjs`): they are erased from the JavaScript, so they
// order no module's initialisation, and a module's `internal/` implementation may name its types.
// `--with-types` also follows `import type` (a stricter listing, not the gate).
import { readdirSync } from "node:fs"
import { join } from "node:path"
import madge from "madge"

const roots = ["packages/core/src", "packages/adapters/src", "packages/testing/src"]
const skipTypeImports = !process.argv.includes("--with-types")

const sources = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

const result = await madge(roots.flatMap(sources), {
  fileExtensions: ["ts"],
  tsConfig: "tsconfig.base.json",
  detectiveOptions: { ts: { skipTypeImports } }
})
const circles = result.circular()
if (circles.length > 0) {
  console.error(`${circles.length} import circle(s)${skipTypeImports ? "" : " (type imports included)"}:`)
  for (const circle of circles) console.error(`  ${[...circle, circle[0]].join(" -> ")}`)
  process.exit(1)
}
console.log(`No import circles${skipTypeImports ? "" : " (type imports included)"}.`)
