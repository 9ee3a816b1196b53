// Counts the exported declarations of core's public modules (packages/core/src, not internal/ and
// not index.ts, which only re-exports the modules): each exported `const`, `function` (overloads
// once), `class`, `interface`, `type`, `enum` and `namespace`, and each re-exported name; a schema
// `const X` with its `type X` counts two. Declarations tagged `@internal` are not counted: the build
// strips them (`stripInternal`). `--by-file` lists each module's count; `--max N` fails above N.
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import ts from "typescript"

const dir = "packages/core/src"
const byFile = process.argv.includes("--by-file")
const maxAt = process.argv.indexOf("--max")
const max = maxAt === -1 ? undefined : Number(process.argv[maxAt + 1])

const isExported = (node) =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword)

const count = (file) => {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest)
  const names = new Set()
  for (const statement of source.statements) {
    const doc = statement.getFullText(source).slice(0, statement.getLeadingTriviaWidth(source))
    if (/@internal\b/.test(doc)) continue
    if (ts.isExportDeclaration(statement)) {
      const clause = statement.exportClause
      if (clause === undefined) names.add(`* from ${statement.moduleSpecifier.getText(source)}`)
      else if (ts.isNamespaceExport(clause)) names.add(clause.name.text)
      else for (const element of clause.elements) names.add(element.name.text)
    } else if (ts.isExportAssignment(statement)) {
      names.add("default")
    } else if (isExported(statement)) {
      if (ts.isVariableStatement(statement)) {
        for (const d of statement.declarationList.declarations) names.add(`const ${d.name.getText(source)}`)
      } else if (statement.name !== undefined) {
        names.add(`${ts.SyntaxKind[statement.kind]} ${statement.name.text}`)
      }
    }
  }
  return names.size
}

const files = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "index.ts")
  .sort()
const counts = files.map((f) => [f, count(join(dir, f))])
const total = counts.reduce((sum, [, n]) => sum + n, 0)
if (byFile) for (const [f, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`${String(n).padStart(4)}  ${f}`)
console.log(`${total} exported declarations in ${files.length} modules of ${dir}`)
if (max !== undefined && total > max) {
  console.error(`more than ${max}`)
  process.exit(1)
}
