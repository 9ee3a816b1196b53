// Fails when the packages' sources (packages/*/src) import each other in a circle, checked twice:
// runtime imports only (as Effect's own repo does in its `scripts/circular.mjs`: type-only imports
// are erased from the JavaScript, so they order no module's initialisation), and with `import type`
// followed too, so a module's data types live below both it and its `internal/` split instead of
// the two naming each other.
import { readdirSync } from "node:fs"
import { join } from "node:path"
import madge from "madge"

const roots = readdirSync("packages", { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => join("packages", entry.name, "src"))

const sources = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

const files = roots.flatMap(sources)
let failed = false
for (const skipTypeImports of [true, false]) {
  const label = skipTypeImports ? "runtime imports" : "type imports included"
  const result = await madge(files, {
    fileExtensions: ["ts"],
    tsConfig: "tsconfig.base.json",
    detectiveOptions: { ts: { skipTypeImports } }
  })
  const circles = result.circular()
  if (circles.length > 0) {
    failed = true
    console.error(`${circles.length} import circle(s) (${label}):`)
    for (const circle of circles) console.error(`  ${[...circle, circle[0]].join(" -> ")}`)
  } else {
    console.log(`No import circles (${label}).`)
  }
}
if (failed) process.exit(1)
