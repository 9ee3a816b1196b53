/**
 * The documentation holds together: every relative link of the READMEs and `docs/**\/*.md` resolves
 * (files and `#anchors`), the README stays a front page (≤ 25 KB), the configuration reference lists
 * exactly the fields of the config Schemas (derived from their ASTs here, not from a list), and the
 * install line is the same everywhere and pins what the packages' peer ranges say.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { GatewayConfig, ModelTarget, Workflow } from "@modelgate/core"
import { Schema, type SchemaAST } from "effect"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))
const read = (path: string): string => readFileSync(path, "utf8")

/** `README.md`, the packages' READMEs and every Markdown file under `docs/`. */
const markdownFiles = (): ReadonlyArray<string> => {
  const found: Array<string> = [
    join(root, "README.md"),
    ...["core", "adapters", "testing"].map((pkg) => join(root, "packages", pkg, "README.md"))
  ]
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith(".md")) found.push(path)
    }
  }
  walk(join(root, "docs"))
  return found
}

/** The text without fenced code blocks and inline code, where brackets are not links. */
const prose = (markdown: string): string => markdown.replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "")

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
const anchorsOf = (markdown: string): ReadonlySet<string> => {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const match of markdown.replace(/^```[\s\S]*?^```/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const slug = (match[1] ?? "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-")
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    anchors.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return anchors
}

interface Link {
  readonly file: string
  readonly target: string
}

const relativeLinks = (file: string): ReadonlyArray<Link> =>
  Array.from(prose(read(file)).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g), (m) => m[1] ?? "")
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => ({ file, target }))

/** Why a link does not resolve, or undefined when it does. */
const brokenReason = ({ file, target }: Link): string | undefined => {
  const hash = target.indexOf("#")
  const path = hash < 0 ? target : target.slice(0, hash)
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1))
  const resolved = path === "" ? file : resolve(dirname(file), decodeURIComponent(path))
  if (!existsSync(resolved)) return "no such file"
  if (anchor === undefined) return undefined
  if (!resolved.endsWith(".md")) return "anchor into a file that is not Markdown"
  return anchorsOf(read(resolved)).has(anchor) ? undefined : `no heading with anchor #${anchor}`
}

/**
 * Field paths of a Schema's encoded (JSON) side: `capabilities.structuredOutput.mode`; a record's
 * keys are `*`; every member of a union contributes its fields.
 */
const fieldPaths = (schema: Schema.Schema.Any): ReadonlySet<string> => {
  const paths = new Set<string>()
  const seen = new Set<SchemaAST.AST>()
  const walk = (ast: SchemaAST.AST, prefix: string): void => {
    switch (ast._tag) {
      case "Transformation":
      case "Refinement":
        walk(ast.from, prefix)
        return
      case "Suspend":
        if (seen.has(ast)) return
        seen.add(ast)
        walk(ast.f(), prefix)
        return
      case "Union":
        for (const member of ast.types) walk(member, prefix)
        return
      case "TupleType":
        for (const element of ast.elements) walk(element.type, prefix)
        for (const rest of ast.rest) walk(rest.type, prefix)
        return
      case "TypeLiteral":
        for (const property of ast.propertySignatures) {
          const path = `${prefix}${String(property.name)}`
          paths.add(path)
          walk(property.type, `${path}.`)
        }
        for (const index of ast.indexSignatures) walk(index.type, `${prefix}*.`)
        return
      default:
        return
    }
  }
  walk(Schema.encodedSchema(schema).ast, "")
  return paths
}

const configuration = read(join(root, "docs", "configuration.md"))

/** The field paths of the list after `<!-- schema:<name> -->`: the first code span of each item. */
const documentedFields = (name: string): ReadonlySet<string> => {
  const start = configuration.indexOf(`<!-- schema:${name} -->`)
  expect(start, `docs/configuration.md marks the ${name} list`).toBeGreaterThanOrEqual(0)
  const lines = configuration.slice(start).split("\n").slice(1)
  const items = lines.slice(
    0,
    lines.findIndex((line) => !line.startsWith("- "))
  )
  return new Set(items.map((item) => /^- `([^`]+)`/.exec(item)?.[1] ?? item))
}

const sorted = (set: Iterable<string>): ReadonlyArray<string> => [...set].sort()
const missing = (from: ReadonlySet<string>, present: ReadonlySet<string>) =>
  sorted([...from].filter((p) => !present.has(p)))

describe("docs", () => {
  it("every relative link in the READMEs and docs/ resolves, anchors included", () => {
    const files = markdownFiles()
    expect(files.length).toBeGreaterThan(10)
    const broken = files.flatMap(relativeLinks).flatMap((link) => {
      const reason = brokenReason(link)
      return reason === undefined ? [] : [`${relative(root, link.file)}: (${link.target}) ${reason}`]
    })
    expect(broken).toEqual([])
  })

  it("README.md is a front page of at most 25 KB", () => {
    expect(statSync(join(root, "README.md")).size).toBeLessThanOrEqual(25_000)
  })

  it("the configuration reference lists every field of ModelTarget and Workflow, and no other", () => {
    for (const [name, schema] of [
      ["ModelTarget", ModelTarget.ModelTarget],
      ["Workflow", Workflow.Workflow]
    ] as const) {
      const inSchema = fieldPaths(schema)
      const documented = documentedFields(name)
      expect({ name, undocumented: missing(inSchema, documented) }).toEqual({ name, undocumented: [] })
      expect({ name, notInSchema: missing(documented, inSchema) }).toEqual({ name, notInSchema: [] })
    }
  })

  it("the configuration reference covers GatewayConfig: its own fields, then the target and workflow lists", () => {
    const documented = new Set([
      ...documentedFields("GatewayConfig"),
      ...sorted(documentedFields("ModelTarget")).map((path) => `targets.${path}`),
      ...sorted(documentedFields("Workflow")).map((path) => `workflows.${path}`)
    ])
    expect(sorted(documented)).toEqual(sorted(fieldPaths(GatewayConfig.GatewayConfig)))
  })
})

describe("install line", () => {
  const readme = read(join(root, "README.md"))
  const block = /<!-- install:start -->\n```sh\n([\s\S]*?)```\n<!-- install:end -->/.exec(readme)?.[1] ?? ""
  const line = block.trim()

  it("is one npm install line in the README's install block", () => {
    expect(line.split("\n")).toHaveLength(1)
    expect(line.startsWith("npm install ")).toBe(true)
  })

  it("pins each package to exactly the range the workspace packages declare as their peer", () => {
    const pins = line
      .slice("npm install ".length)
      .split(/\s+/)
      .flatMap((spec) => {
        const at = spec.lastIndexOf("@")
        return at > 0 ? [[spec.slice(0, at), spec.slice(at + 1)] as const] : []
      })
    expect(pins.map(([name]) => name)).toContain("effect")
    for (const pkg of ["core", "adapters", "testing"]) {
      const manifest: { peerDependencies?: Record<string, string> } = JSON.parse(
        read(join(root, "packages", pkg, "package.json"))
      )
      for (const [name, range] of pins) {
        const peer = manifest.peerDependencies?.[name]
        if (peer !== undefined) expect({ pkg, name, range }).toEqual({ pkg, name, range: peer })
      }
    }
    // The Effect 3 line: never the 4.x that npm's `latest` tag names.
    expect(pins.find(([name]) => name === "effect")?.[1]).toMatch(/^\^3\./)
  })

  it("is the same line in every package README", () => {
    for (const pkg of ["core", "adapters", "testing"]) {
      expect({ pkg, has: read(join(root, "packages", pkg, "README.md")).includes(line) }).toEqual({ pkg, has: true })
    }
  })
})
