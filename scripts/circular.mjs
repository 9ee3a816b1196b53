// Fails when the packages' sources import each other in a circle, `import type` included: a circle
// of types still ties the modules into one room. `--skip-type-imports` checks runtime imports only,
// as Effect's own repo does (`scripts/circular.mjs` there).
import { readdirSync } from "node:fs"
import { join } from "node:path"
import madge from "madge"

const roots = ["packages/core/src", "packages/adapters/src", "packages/testing/src"]
const skipTypeImports = process.argv.includes("--skip-type-imports")

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
  console.error(`${circles.length} import circle(s)${skipTypeImports ? " (runtime imports)" : ""}:`)
  for (const circle of circles) console.error(`  ${[...circle, circle[0]].join(" -> ")}`)
  process.exit(1)
}
console.log(`No import circles${skipTypeImports ? " (runtime imports)" : ""}.`)
