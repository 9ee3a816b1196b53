/**
 * The fallback lab's local server and the page's playback arithmetic: the endpoint answers the
 * engine's model, the page script is small (the engine is not bundled into it), and playback reveals
 * stages at 7.5 s boundaries and the result only at 60 s.
 */
import { request } from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { parseScenarioArgs } from "../fallback-lab/cli.js"
import { computeScenario, defaultScenario } from "../fallback-lab/model.js"
import {
  clampTime,
  exportDocument,
  nextBoundary,
  resultDisclosed,
  revealedAt,
  stageAt,
  virtualNow
} from "../fallback-lab/playback.js"
import { startLabServer } from "../fallback-lab/web/server.js"

describe("fallback lab server", () => {
  it("serves the page, its script and the engine's model on 127.0.0.1", async () => {
    const lab = await startLabServer({ port: 0 })
    try {
      assert.match(lab.url, /^http:\/\/127\.0\.0\.1:\d+\/$/)
      const page = await fetch(lab.url)
      assert.strictEqual(page.status, 200)
      assert.include(await page.text(), '<script type="module" src="/app.js">')
      const script = await fetch(new URL("app.js", lab.url))
      assert.strictEqual(script.headers.get("content-type"), "text/javascript; charset=utf-8")
      assert.strictEqual((await script.text()).length, lab.bundleBytes)
      // The page script carries no engine: measured 13 KiB; bundled, the engine is 3.4 MB.
      assert.isBelow(lab.bundleBytes, 40 * 1024)
      const query = "primary=invalid&routeTimeout=250&deadline=1600&secondaryContract=missing-tool&secondary=slow"
      const model = await (await fetch(new URL(`api/model?${query}`, lab.url))).json()
      const expected = await Effect.runPromise(
        computeScenario({
          primary: "invalid",
          routeTimeout: 250,
          deadline: 1600,
          secondaryContract: "missing-tool",
          secondary: "slow"
        })
      )
      assert.deepStrictEqual(model, JSON.parse(JSON.stringify(expected)))
      const bad = await fetch(new URL("api/model?deadline=900", lab.url))
      assert.strictEqual(bad.status, 400)
      assert.include(JSON.stringify(await bad.json()), 'deadline: \\"900\\" is not one of 400, 800, 1600')
      assert.strictEqual((await fetch(new URL("nope", lab.url))).status, 404)
    } finally {
      await lab.close()
    }
  })

  it("answers only its own Host (127.0.0.1 or localhost with its port): DNS rebinding gets 403", async () => {
    const lab = await startLabServer({ port: 0 })
    try {
      const port = new URL(lab.url).port
      const statusWith = (host: string) =>
        new Promise<number>((resolve, reject) => {
          const req = request({ host: "127.0.0.1", port, path: "/api/model", headers: { host } }, (res) => {
            res.resume()
            resolve(res.statusCode ?? 0)
          })
          req.once("error", reject)
          req.end()
        })
      assert.strictEqual(await statusWith(`127.0.0.1:${port}`), 200)
      assert.strictEqual(await statusWith(`localhost:${port}`), 200)
      assert.strictEqual(await statusWith(`attacker.example:${port}`), 403)
      assert.strictEqual(await statusWith("localhost"), 403)
      assert.strictEqual(await statusWith(`localhost:${Number(port) + 1}`), 403)
    } finally {
      await lab.close()
    }
  })

  it("computes a bounded number of scenarios at once: past the bound, a fast 503 with retry-after", async () => {
    const lab = await startLabServer({ port: 0, maxComputations: 1 })
    try {
      const queries = ["250&deadline=400", "500&deadline=800", "1000&deadline=1600", "250&deadline=1600"].map(
        (rest) => `api/model?primary=slow&routeTimeout=${rest}`
      )
      const answers = await Promise.all(
        queries.map(async (query) => {
          const response = await fetch(new URL(query, lab.url))
          await response.text()
          const at = performance.now()
          return { query, status: response.status, retryAfter: response.headers.get("retry-after"), at }
        })
      )
      const computed = answers.filter((a) => a.status === 200)
      const refused = answers.filter((a) => a.status === 503)
      assert.strictEqual(computed.length, 1)
      assert.strictEqual(refused.length, 3)
      for (const r of refused) assert.strictEqual(r.retryAfter, "1")
      // refused before the one computation ended
      assert.isBelow(Math.max(...refused.map((r) => r.at)), Math.min(...computed.map((c) => c.at)))
      // once computed, a scenario is served from the cache even while the bound is taken
      const busy = fetch(new URL(refused[0]?.query ?? "", lab.url))
      const again = await fetch(new URL(computed[0]?.query ?? "", lab.url))
      assert.strictEqual(again.status, 200)
      assert.strictEqual((await busy).status, 200)
    } finally {
      await lab.close()
    }
  })
})

describe("fallback lab playback", () => {
  it.effect("eight stages of 7.5 s; the result only at 60 s; the export holds the model and the inspected prefix", () =>
    Effect.gen(function* () {
      const model = yield* computeScenario(defaultScenario)
      assert.deepStrictEqual([0, 7.4, 7.5, 29.9, 30, 59.9, 60, 75].map(stageAt), [0, 0, 1, 3, 4, 7, 8, 8])
      assert.deepStrictEqual([0, 7.5, 8, 52.5, 59.9, 60].map(nextBoundary), [7.5, 15, 15, 60, 60, 60])
      assert.deepStrictEqual([-1, 61, 12.5].map(clampTime), [0, 60, 12.5])
      assert.isFalse(resultDisclosed(59.9))
      assert.isTrue(resultDisclosed(60))
      assert.deepStrictEqual(revealedAt(model, 7.4), [])
      assert.deepStrictEqual(
        revealedAt(model, 30).map((e) => e.seq),
        model.events.filter((e) => e.stage <= 4).map((e) => e.seq)
      )
      assert.strictEqual(revealedAt(model, 60).length, model.events.length)
      assert.strictEqual(virtualNow(model, 0), 0)
      assert.strictEqual(virtualNow(model, 60), 900)
      const doc = exportDocument(model, 22.5)
      assert.strictEqual(doc.stage, 3)
      assert.strictEqual(doc.model, model)
      assert.deepStrictEqual(doc.inspected, revealedAt(model, 22.5))
    })
  )

  it("the command line's scenario mode takes the page's inputs", () => {
    assert.deepStrictEqual(parseScenarioArgs(["--primary", "invalid", "--route-timeout=250", "--deadline", "1600"]), {
      ...defaultScenario,
      primary: "invalid",
      routeTimeout: 250,
      deadline: 1600
    })
    assert.deepStrictEqual(parseScenarioArgs(["--secondary-contract", "missing-tool", "--secondary", "slow"]), {
      ...defaultScenario,
      secondaryContract: "missing-tool",
      secondary: "slow"
    })
    assert.include(String(parseScenarioArgs(["--deadline", "300"])), 'deadline: "300" is not one of 400, 800, 1600')
    assert.include(String(parseScenarioArgs(["--timeout", "300"])), 'unknown argument "--timeout"')
    assert.include(String(parseScenarioArgs(["--primary"])), "--primary needs a value")
    assert.include(String(parseScenarioArgs(["--help"])), "usage: pnpm fallback-lab scenario")
  })
})
