// Fails when a source file of packages/*/src is over 600 lines, or a function in one is over 150
// lines, unless a one-line reason marks it: `// long: <reason>` in the comments above the function's
// statement or in its first two lines (for a file: in its first ten lines, for data tables). Function extents come
// from the TypeScript compiler's syntax tree (declarations, expressions, arrows, methods,
// accessors, constructors). `--list` prints every marked exception too.
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import ts from "typescript"

const maxFileLines = 600
const maxFunctionLines = 150
const marker = /\/\/ long: \S/
const list = process.argv.includes("--list")

const sources = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : []
  })

const roots = readdirSync("packages", { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => join("packages", entry.name, "src"))
  .filter((dir) => existsSync(dir))

const isFunction = (node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node)

const nameOf = (node, source) => {
  if (node.name !== undefined) return node.name.getText(source)
  const parent = node.parent
  if (parent !== undefined && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))) {
    return parent.name.getText(source)
  }
  return "(anonymous)"
}

const problems = []
const marked = []
for (const file of roots.flatMap(sources).sort()) {
  const text = readFileSync(file, "utf8")
  const lines = text.split("\n")
  const markedAt = (from, to) => lines.slice(Math.max(0, from), to + 1).some((line) => marker.test(line))
  if (lines.length > maxFileLines) {
    const entry = `${file}: ${lines.length} lines (over ${maxFileLines})`
    if (markedAt(0, 9)) marked.push(entry)
    else problems.push(entry)
  }
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const visit = (node) => {
    if (isFunction(node)) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line
      const length = end - start + 1
      if (length > maxFunctionLines) {
        const entry = `${file}:${start + 1}: ${nameOf(node, source)} is ${length} lines (over ${maxFunctionLines})`
        let statement = node
        while (statement.parent !== undefined && !ts.isSourceFile(statement.parent) && !ts.isBlock(statement.parent)) {
          statement = statement.parent
        }
        const top = source.getLineAndCharacterOfPosition(statement.getFullStart()).line
        if (markedAt(top, start + 2)) marked.push(entry)
        else problems.push(entry)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}

if (list) for (const entry of marked) console.log(`marked: ${entry}`)
if (problems.length > 0) {
  console.error(`${problems.length} oversized file(s) or function(s) without a \`// long: <reason>\` marker:`)
  for (const problem of problems) console.error(`  ${problem}`)
  process.exit(1)
}
console.log(`No file over ${maxFileLines} lines, no function over ${maxFunctionLines} lines (${marked.length} marked).`)
