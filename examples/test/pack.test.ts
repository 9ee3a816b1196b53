/**
 * The packages as a user installs them: the root `pack` script (`.ci/pack`) packs every package
 * into a directory outside the repository, each package's `prepack` building its `dist/` first, and
 * plain `npm` installs the tarballs of `@modelgate/core`, `@modelgate/adapters` and
 * `@modelgate/testing` (with their peers at the workspace's versions) into a fresh project outside the workspace.
 * There a small program type-checks with `tsc` against the packed declarations and runs on Node —
 * no `source` condition, no tsx — making one `ModelGateway.generate` call through the packed OpenAI
 * adapter, answered by the packed `MockProviderServer`.
 *
 * Needs the npm registry (for the peers and `typescript`); ~2–4 minutes. Runs in the `slow` project.
 */
import { execFile } from "node:child_process"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { assert, describe, it } from "@effect/vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))
const exec = promisify(execFile)

/** The caller's environment without pnpm's `npm_*` settings or a `--conditions=source` in NODE_OPTIONS. */
const env = Object.fromEntries(
  Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith("npm_") && key !== "NODE_OPTIONS")
)

const run = (file: string, args: ReadonlyArray<string>, cwd: string) =>
  exec(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 300_000 })

const readJson = (path: string): Record<string, unknown> => JSON.parse(readFileSync(path, "utf8"))

/** Exact versions of what the consumer installs next to the tarballs: the workspace's own. */
const installed = (name: string): string => {
  const manifest = [join(root, "examples", "node_modules"), join(root, "node_modules")]
    .map((dir) => join(dir, name, "package.json"))
    .find((path) => existsSync(path))
  assert.isDefined(manifest, name)
  return `${name}@${String(readJson(manifest!).version)}`
}

const program = `import { NodeHttpClient } from "@effect/platform-node"
import * as OpenAi from "@modelgate/adapters/openai"
import { CallRecorder, GatewayConfig, ModelCommand, ModelGateway } from "@modelgate/core"
import { MockProviderServer } from "@modelgate/testing/MockProviderServer"
import { Effect, Layer, Redacted } from "effect"

const target = "model://openai/gpt-4.1-mini@eu"
const config = GatewayConfig.make({
  targets: [{ ref: target, catalogue: "openai/gpt-4.1-mini", regions: ["eu"], dataClasses: ["internal"] }],
  workflows: [
    {
      name: "ticket.reply",
      policyVersion: "1",
      prompt: { id: "reply", version: "1" },
      route: [target],
      timeout: 10_000,
      regions: ["eu"],
      dataClass: "internal"
    }
  ]
})

const Gateway = Layer.unwrapEffect(
  Effect.map(MockProviderServer, (mock) =>
    ModelGateway.layerJson(config).pipe(
      ModelGateway.withDefaults({ recorder: CallRecorder.layerMemory }),
      Layer.provide(OpenAi.layer({ baseUrl: mock.baseUrl("openai"), apiKey: Redacted.make("sk-test") })),
      Layer.provide(NodeHttpClient.layerUndici)
    )
  )
).pipe(Layer.provideMerge(MockProviderServer.layer()))

const main = Effect.gen(function* () {
  const mock = yield* MockProviderServer
  yield* mock.enqueue(MockProviderServer.success({ text: "We will refund the duplicate charge." }), {
    provider: "openai"
  })
  const command = yield* ModelCommand.decodeUnknown({
    workflow: "ticket.reply",
    tenant: "acme",
    messages: [{ _tag: "user", content: "I was charged twice" }]
  })
  const result = yield* ModelGateway.generate(command)
  const requests = yield* mock.requests
  const text: string | undefined = result.content.text
  return {
    text,
    target: String(result.evidence.target),
    outcome: result.evidence.attempts.map((a) => a.outcome),
    requests: requests.map((r) => r.provider)
  }
})

Effect.runPromise(main.pipe(Effect.provide(Gateway))).then(
  (out) => console.log("RESULT " + JSON.stringify(out)),
  (error: unknown) => {
    console.error(error)
    process.exitCode = 1
  }
)
`

const tsconfig = {
  compilerOptions: {
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    module: "NodeNext",
    moduleResolution: "NodeNext",
    target: "ES2022",
    lib: ["ES2022"],
    types: ["node"],
    skipLibCheck: true,
    outDir: "out",
    rootDir: "src"
  },
  include: ["src"]
}

describe("packed packages outside the workspace", () => {
  it("build, pack, npm install, tsc and run against the packed MockProviderServer", async () => {
    const dir = await mkdtemp(join(tmpdir(), "modelgate-pack-"))
    try {
      assert.isFalse(dir.startsWith(root), "the consumer project is outside the workspace")
      // The root `pack` script: each package's `prepack` builds its `dist/`, the tarballs go to the
      // destination given (outside the repository), and none is left in the repository.
      const tarballs = join(dir, "tarballs")
      const tarballsInRepo = () =>
        [root, ...["core", "adapters", "testing", "cli"].map((name) => join(root, "packages", name))].flatMap((d) =>
          existsSync(d) ? readdirSync(d).filter((file) => file.endsWith(".tgz")) : []
        )
      const before = tarballsInRepo()
      const { stdout: packOut } = await run("bash", [join(root, ".ci", "pack"), tarballs], root)
      assert.strictEqual(packOut.trim().split("\n").pop(), tarballs)
      assert.deepStrictEqual(tarballsInRepo(), before)
      const packed = (await readdir(tarballs)).sort()
      assert.deepStrictEqual(
        packed.map((file) => file.replace(/-\d+\.\d+\.\d+\.tgz$/, "")),
        ["modelgate-adapters", "modelgate-cli", "modelgate-core", "modelgate-testing"]
      )

      const app = join(dir, "app")
      await run("mkdir", ["-p", join(app, "src")], dir)
      await writeFile(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
      await writeFile(join(app, "tsconfig.json"), JSON.stringify(tsconfig))
      await writeFile(join(app, "src", "main.ts"), program)
      await run(
        "npm",
        [
          "install",
          "--no-audit",
          "--no-fund",
          "--loglevel=error",
          ...packed.filter((file) => !file.startsWith("modelgate-cli-")).map((file) => join(tarballs, file)),
          installed("effect"),
          installed("@effect/platform"),
          installed("@effect/platform-node"),
          installed("typescript"),
          installed("@types/node")
        ],
        app
      )

      const lock = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")) as {
        packages: Record<string, { resolved?: string }>
      }
      for (const name of ["core", "adapters", "testing"]) {
        assert.match(
          String(lock.packages[`node_modules/@modelgate/${name}`]?.resolved),
          /^file:/,
          `${name} from its tarball`
        )
        const dirOf = join(app, "node_modules", "@modelgate", name)
        const manifest = readJson(join(dirOf, "package.json"))
        assert.match(String(manifest.version), /^0\.\d+\.\d+$/, name)
        assert.strictEqual(manifest.license, "MIT", name)
        assert.notInclude(
          JSON.stringify(manifest.exports),
          "source",
          `${name}: the workspace-only condition is not published`
        )
        assert.isFalse(existsSync(join(dirOf, "src")), `${name} ships dist only`)
        assert.isTrue(existsSync(join(dirOf, "LICENSE")), `${name} LICENSE`)
        const entry = name === "adapters" ? "OpenAi" : "index"
        for (const ext of [".js", ".js.map", ".d.ts", ".d.ts.map"]) {
          assert.isTrue(existsSync(join(dirOf, "dist", `${entry}${ext}`)), `${name} dist/${entry}${ext}`)
        }
      }

      // The testing package's bin, compiled and linked by npm.
      assert.isTrue(existsSync(join(app, "node_modules", ".bin", "modelgate-mock")), "modelgate-mock bin")
      assert.isTrue(existsSync(join(app, "node_modules", "@modelgate", "testing", "dist", "bin", "modelgate-mock.js")))

      await run(process.execPath, [join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "."], app)
      const { stdout } = await run(process.execPath, [join(app, "out", "main.js")], app)
      const line = stdout.split("\n").find((l) => l.startsWith("RESULT "))
      assert.isDefined(line, stdout)
      assert.deepStrictEqual(JSON.parse(line!.slice("RESULT ".length)), {
        text: "We will refund the duplicate charge.",
        target: "model://openai/gpt-4.1-mini@eu",
        outcome: ["success"],
        requests: ["openai"]
      })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }, 420_000)
})
