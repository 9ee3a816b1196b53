/**
 * The fallback lab page in a real headless Chromium (the Debian `chromium` package, driven by
 * `playwright-core`; no browser download). The page's clock is Playwright's fake clock, so sixty
 * teaching seconds take no real time. Screenshots of the default scenario at stages 1, 4 and 8 are
 * written to `examples/test-artifacts/fallback-lab/`.
 */
import { existsSync } from "node:fs"
import { mkdir, readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { computeScenario, defaultScenario, type Scenario, type ScenarioModel } from "../fallback-lab/model.js"
import { type LabServer, startLabServer } from "../fallback-lab/web/server.js"

const chromiumPath = "/usr/bin/chromium"
const artifacts = fileURLToPath(new URL("../test-artifacts/fallback-lab/", import.meta.url))

/** Flags that keep the browser off the network: no background requests, updates or sync. */
const offline = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-default-apps",
  "--disable-extensions",
  "--disable-domain-reliability",
  "--disable-client-side-phishing-detection",
  "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
  "--no-first-run",
  "--no-default-browser-check",
  "--metrics-recording-only",
  "--no-pings"
]

let server: LabServer
let browser: Browser

const model = (s: Scenario): Promise<ScenarioModel> => Effect.runPromise(computeScenario(s))

/** Requests the page made to anything but the lab's own origin (aborted), and script errors: each test checks none. */
const elsewhere: Array<string> = []
const pageErrors: Array<string> = []

/** A fresh context and page on the lab, with a paused fake clock. */
const open = async (): Promise<{ readonly context: BrowserContext; readonly page: Page }> => {
  const context = await browser.newContext({ viewport: { width: 1200, height: 1100 }, acceptDownloads: true })
  await context.route(
    (url) => url.origin !== new URL(server.url).origin,
    (route) => {
      elsewhere.push(route.request().url())
      return route.abort()
    }
  )
  const page = await context.newPage()
  page.on("pageerror", (error) => pageErrors.push(error.message))
  await page.clock.install({ time: 1_000_000 })
  await page.goto(server.url)
  await shows(page, defaultScenario)
  await page.clock.pauseAt(1_010_000)
  return { context, page }
}

/** Waits until the page shows `scenario`'s model. */
const shows = (page: Page, scenario: Scenario) =>
  page.waitForFunction((expected) => document.body.dataset.scenario === expected, JSON.stringify(scenario))

const button = (page: Page, name: string) => page.getByRole("button", { name, exact: true })
const timeSlider = (page: Page) => page.getByRole("slider", { name: "Time" })
const teachingTime = async (page: Page) => Number(await timeSlider(page).inputValue())
const stage = async (page: Page) => Number(await page.evaluate(() => document.body.dataset.stage))
const playing = async (page: Page) => (await page.evaluate(() => document.body.dataset.playing)) === "true"
const eventTexts = (page: Page) => page.locator("#events li").allTextContents()
const disclosed = async (page: Page) => (await page.locator("#final").getAttribute("data-disclosed")) === "true"

beforeAll(async () => {
  if (!existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} is missing: install the Debian package (bash .ci/system-packages)`)
  }
  server = await startLabServer({ port: 0 })
  browser = await chromium.launch({ executablePath: chromiumPath, args: offline })
  await mkdir(artifacts, { recursive: true })
}, 30_000)

afterEach(() => {
  expect(elsewhere.splice(0)).toEqual([])
  expect(pageErrors.splice(0)).toEqual([])
})

afterAll(async () => {
  await browser?.close()
  await server?.close()
})

describe("fallback lab page (headless Chromium)", () => {
  it("plays, pauses, steps, restarts and seeks; the final result only at sixty seconds; screenshots at stages 1, 4, 8", async () => {
    const expected = await model(defaultScenario)
    const { context, page } = await open()
    const stageEvents = (k: number) => expected.events.filter((e) => e.stage <= k).length
    expect(await stage(page)).toBe(0)
    expect(await eventTexts(page)).toEqual([])
    expect(await disclosed(page)).toBe(false)
    // The limitations and the tie rule's caveat are visible.
    const limitations = ((await page.locator("#limitations").textContent()) ?? "").replace(/\s+/g, " ")
    for (const part of [
      "No streaming, partial-answer reuse, tool execution, billing, authentication, safety refusals, SDK retries, backoff, jitter or retry-after in this lab",
      "Production retries under a routing layer multiply attempts, so budgets must be enforced across layers",
      "A refusal is never a reason to try another model",
      "Real cancellation needs provider support"
    ]) {
      expect(limitations).toContain(part)
    }
    expect(await page.locator("#tie-rule").textContent()).toContain("Simulation assumption")

    // Next event: to the next 7.5 s boundary.
    await button(page, "Next event").click()
    expect(await teachingTime(page)).toBe(7.5)
    expect(await stage(page)).toBe(1)
    expect((await eventTexts(page)).length).toBe(stageEvents(1))
    expect((await eventTexts(page))[0]).toContain("0 ms")
    await page.screenshot({ path: `${artifacts}stage-1.png`, fullPage: true })

    // Play runs the teaching clock at the chosen speed; Pause stops it.
    await button(page, "Play").click()
    expect(await playing(page)).toBe(true)
    await page.clock.runFor(2_000)
    const afterPlay = await teachingTime(page)
    expect(afterPlay).toBeGreaterThanOrEqual(9.4)
    expect(afterPlay).toBeLessThanOrEqual(9.5)
    await button(page, "Pause").click()
    await page.clock.runFor(5_000)
    expect(await teachingTime(page)).toBe(afterPlay)
    await page.getByRole("combobox", { name: "Speed" }).selectOption("0.5")
    await button(page, "Play").click()
    await page.clock.runFor(2_000)
    await button(page, "Pause").click()
    expect(await teachingTime(page)).toBeCloseTo(afterPlay + 1, 1)

    // Restart rewinds and keeps the inputs and the speed.
    await button(page, "Restart").click()
    expect(await teachingTime(page)).toBe(0)
    expect(await eventTexts(page)).toEqual([])
    expect(await page.getByRole("combobox", { name: "Speed" }).inputValue()).toBe("0.5")
    expect(await page.getByRole("combobox", { name: "Per-route timeout" }).inputValue()).toBe("500")
    await page.getByRole("combobox", { name: "Speed" }).selectOption("1")

    // The Time slider seeks and pauses.
    await button(page, "Play").click()
    await timeSlider(page).fill("30")
    expect(await playing(page)).toBe(false)
    expect(await stage(page)).toBe(4)
    expect((await eventTexts(page)).length).toBe(stageEvents(4))
    expect(await disclosed(page)).toBe(false)
    // The primary's server is still working after the client moved on: outstanding, drawn hatched.
    expect(await page.locator("#outstanding li.work").textContent()).toContain(
      "primary: the client stopped waiting at 500 ms"
    )
    expect(await page.locator("#timeline .bar.work").count()).toBe(1)
    await page.screenshot({ path: `${artifacts}stage-4.png`, fullPage: true })

    // Just before sixty seconds every event may be listed, but the result stays sealed.
    await timeSlider(page).fill("59.9")
    expect(await stage(page)).toBe(7)
    expect(await disclosed(page)).toBe(false)
    expect(await page.locator("#final").textContent()).not.toContain("answer from")
    for (const text of await eventTexts(page)) expect(text).not.toContain("answer from the secondary")
    await button(page, "Next event").click()
    expect(await teachingTime(page)).toBe(60)
    expect(await disclosed(page)).toBe(true)
    const final = (await page.locator("#final").textContent()) ?? ""
    expect(final).toContain(`success at ${expected.result.at} ms: answer from the secondary route (fallback)`)
    expect(final).toContain("primary at 900 ms (200), 400 ms late")
    expect(final).toContain("primary (working until 900 ms)")
    expect((await eventTexts(page)).length).toBe(expected.events.length)
    // Outstanding work and late responses are shown distinctly.
    expect(await page.locator("#events li.late-response").count()).toBe(1)
    expect(await page.locator("#timeline .marker.late").count()).toBe(1)
    await page.screenshot({ path: `${artifacts}stage-8.png`, fullPage: true })

    // Playing to the end discloses the result at sixty seconds and stops there.
    await button(page, "Restart").click()
    await page.getByRole("combobox", { name: "Speed" }).selectOption("2")
    await button(page, "Play").click()
    await page.clock.runFor(27_000)
    expect(await stage(page)).toBe(7)
    expect(await disclosed(page)).toBe(false)
    expect(await page.locator("#outstanding li.work").count()).toBe(1)
    await page.clock.runFor(3_500)
    expect(await disclosed(page)).toBe(true)
    expect(await playing(page)).toBe(false)
    expect(await teachingTime(page)).toBe(60)

    // Hiding the tab pauses.
    await button(page, "Restart").click()
    await button(page, "Play").click()
    expect(await playing(page)).toBe(true)
    await page.evaluate(() => {
      Object.defineProperty(document, "hidden", { configurable: true, get: () => true })
      document.dispatchEvent(new Event("visibilitychange"))
    })
    expect(await playing(page)).toBe(false)

    // Expand experiment / Exit full screen.
    await button(page, "Expand experiment").click()
    await expect(button(page, "Exit full screen").waitFor()).resolves.toBeUndefined()
    await button(page, "Exit full screen").click()
    await expect(button(page, "Expand experiment").waitFor()).resolves.toBeUndefined()
    await context.close()
  })

  it("an input change rewinds and pauses; the exported JSON is the engine's model and the inspected prefix", async () => {
    const { context, page } = await open()
    await button(page, "Play").click()
    await page.clock.runFor(9_000)
    expect(await stage(page)).toBe(1)
    const scenario: Scenario = {
      primary: "unavailable",
      routeTimeout: 1000,
      deadline: 400,
      secondaryContract: "compatible",
      secondary: "slow"
    }
    await page.getByRole("combobox", { name: "Primary fixture" }).selectOption(scenario.primary)
    expect(await playing(page)).toBe(false)
    expect(await teachingTime(page)).toBe(0)
    await page.getByRole("combobox", { name: "Per-route timeout" }).selectOption(String(scenario.routeTimeout))
    await page.getByRole("combobox", { name: "Global deadline" }).selectOption(String(scenario.deadline))
    await page.getByRole("combobox", { name: "Secondary fixture" }).selectOption(scenario.secondary)
    await shows(page, scenario)
    for (let i = 0; i < 3; i++) await button(page, "Next event").click()
    const [download] = await Promise.all([page.waitForEvent("download"), button(page, "Export events JSON").click()])
    const exported: unknown = JSON.parse(await readFile(await download.path(), "utf8"))
    const expected = await model(scenario)
    expect(exported).toEqual({
      kind: "modelgate.fallback-lab.events",
      version: 1,
      teachingSeconds: 22.5,
      stage: 3,
      model: JSON.parse(JSON.stringify(expected)),
      inspected: JSON.parse(JSON.stringify(expected.events.filter((e) => e.stage <= 3)))
    })
    // The run the page exported: a 503, one fallback, cut by the deadline, its server still working.
    expect(expected.attempts.map((a) => [a.route, a.endedAt, a.endedBy])).toEqual([
      ["primary", 100, "server-completion"],
      ["secondary", 400, "deadline"]
    ])
    await context.close()
  })

  it("captures, compares, replaces and clears a baseline", async () => {
    const { context, page } = await open()
    await expect(button(page, "Replace baseline").isDisabled()).resolves.toBe(true)
    await button(page, "Capture baseline").click()
    await expect(button(page, "Capture baseline").isDisabled()).resolves.toBe(true)
    const table = page.getByRole("table", { name: /Baseline and current run side by side/ })
    expect(await table.getAttribute("data-differences")).toBe("0")
    await page.getByRole("combobox", { name: "Global deadline" }).selectOption("400")
    await shows(page, { ...defaultScenario, deadline: 400 })
    // Before sixty seconds only the inputs are compared.
    expect(await table.locator("tr.differs th").allTextContents()).toEqual(["Global deadline (differs)"])
    await page.getByRole("slider", { name: "Time" }).fill("60")
    const differing = await table.locator("tr.differs th").allTextContents()
    expect(differing).toContain("Global deadline (differs)")
    expect(differing).toContain("Result (differs)")
    expect(await table.locator("tr.differs").first().locator("td").allTextContents()).toEqual(["800 ms", "400 ms"])
    await button(page, "Replace baseline").click()
    expect(await table.getAttribute("data-differences")).toBe("0")
    await button(page, "Clear baseline").click()
    expect(await page.locator("#comparison").textContent()).toContain("No baseline")
    await context.close()
  })

  it("keeps notebook notes across a reload and exports them", async () => {
    const { context, page } = await open()
    const notes = page.getByRole("textbox", { name: "Notebook notes" })
    await notes.fill("The primary's 200 at 900 ms arrived after the fallback answered.")
    await page.reload()
    await shows(page, defaultScenario)
    expect(await notes.inputValue()).toBe("The primary's 200 at 900 ms arrived after the fallback answered.")
    const [download] = await Promise.all([page.waitForEvent("download"), button(page, "Export notes").click()])
    expect(await readFile(await download.path(), "utf8")).toBe(
      "The primary's 200 at 900 ms arrived after the fallback answered."
    )
    await context.close()
  })

  it("the event history is scrollable and every event is reached with Tab, with its virtual instant", async () => {
    const expected = await model(defaultScenario)
    const { context, page } = await open()
    // While playing, a focused event keeps its focus (the list is rebuilt only when a stage is reached).
    await timeSlider(page).fill("30")
    await button(page, "Play").click()
    await page.locator("#events li").first().focus()
    await page.clock.runFor(1_000)
    expect(await page.evaluate(() => document.activeElement?.textContent?.startsWith("0 ms"))).toBe(true)
    await button(page, "Pause").click()
    await timeSlider(page).fill("60")
    const history = page.getByRole("region", { name: "Event history" })
    expect(await history.evaluate((el) => getComputedStyle(el).overflowY)).toBe("auto")
    // The control before the history in tab order, then Tab through every event.
    await page.getByRole("combobox", { name: "Speed" }).focus()
    for (const e of expected.events) {
      await page.keyboard.press("Tab")
      const focused = await page.evaluate(() => ({
        tag: document.activeElement?.tagName,
        text: document.activeElement?.textContent ?? ""
      }))
      expect(focused.tag).toBe("LI")
      expect(focused.text.startsWith(`${e.at} ms`)).toBe(true)
      expect(focused.text).toContain(e.text)
    }
    await context.close()
  })
})
