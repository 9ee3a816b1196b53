/**
 * The fallback lab page. No framework: the page is one form, one playback clock and a few lists,
 * rendered from a {@link ScenarioModel} the local server computes with the real engine
 * (`GET /api/model?…`). Playback only reveals what was computed up front.
 */
import {
  clampTime,
  exportDocument,
  nextBoundary,
  resultDisclosed,
  revealedAt,
  type Speed,
  speedLabels,
  speeds,
  stageAt,
  virtualNow
} from "../playback.js"
import {
  contractLabels,
  defaultScenario,
  fixtures,
  globalDeadlines,
  type LabEvent,
  parseScenario,
  primaryFixtures,
  type Route,
  routeTimeouts,
  type Scenario,
  type ScenarioModel,
  secondaryContracts,
  secondaryFixtures,
  stages,
  teachingSeconds
} from "../scenario.js"

const notesKey = "modelgate.fallback-lab.notes"

const element = <T extends HTMLElement>(id: string, kind: { new (): T; prototype: T }): T => {
  const found = document.getElementById(id)
  if (!(found instanceof kind)) throw new Error(`#${id} is missing`)
  return found
}

const ui = {
  inputs: {
    primary: element("primary", HTMLSelectElement),
    routeTimeout: element("routeTimeout", HTMLSelectElement),
    deadline: element("deadline", HTMLSelectElement),
    secondaryContract: element("secondaryContract", HTMLSelectElement),
    secondary: element("secondary", HTMLSelectElement)
  },
  play: element("play", HTMLButtonElement),
  pause: element("pause", HTMLButtonElement),
  next: element("next", HTMLButtonElement),
  restart: element("restart", HTMLButtonElement),
  time: element("time", HTMLInputElement),
  speed: element("speed", HTMLSelectElement),
  status: element("status", HTMLOutputElement),
  clock: element("clock", HTMLSpanElement),
  timeline: element("timeline", HTMLDivElement),
  events: element("events", HTMLOListElement),
  outstanding: element("outstanding", HTMLUListElement),
  final: element("final", HTMLElement),
  expand: element("expand", HTMLButtonElement),
  experiment: element("experiment", HTMLElement),
  exportEvents: element("export", HTMLButtonElement),
  capture: element("capture", HTMLButtonElement),
  replace: element("replace", HTMLButtonElement),
  clear: element("clear", HTMLButtonElement),
  comparison: element("comparison", HTMLDivElement),
  notes: element("notes", HTMLTextAreaElement),
  exportNotes: element("export-notes", HTMLButtonElement)
}

const fill = (select: HTMLSelectElement, options: ReadonlyArray<readonly [string, string]>, selected: string) => {
  for (const [value, label] of options) {
    const o = document.createElement("option")
    o.value = value
    o.textContent = label
    o.selected = value === selected
    select.append(o)
  }
}
fill(
  ui.inputs.primary,
  primaryFixtures.map((f) => [f, fixtures[f].label]),
  defaultScenario.primary
)
fill(
  ui.inputs.routeTimeout,
  routeTimeouts.map((t) => [String(t), `${t} ms`]),
  String(defaultScenario.routeTimeout)
)
fill(
  ui.inputs.deadline,
  globalDeadlines.map((d) => [String(d), `${d} ms`]),
  String(defaultScenario.deadline)
)
fill(
  ui.inputs.secondaryContract,
  secondaryContracts.map((c) => [c, contractLabels[c]]),
  defaultScenario.secondaryContract
)
fill(
  ui.inputs.secondary,
  secondaryFixtures.map((f) => [f, fixtures[f].label]),
  defaultScenario.secondary
)
fill(
  ui.speed,
  speeds.map((s) => [String(s), speedLabels[s]]),
  "1"
)

/** Playback state: teaching seconds, speed, whether the clock runs. */
const state: {
  model: ScenarioModel | undefined
  t: number
  speed: Speed
  playing: boolean
  lastTick: number
  baseline: ScenarioModel | undefined
  request: number
  modelVersion: number
  baselineVersion: number
  renderedKey: string
} = {
  model: undefined,
  t: 0,
  speed: 1,
  playing: false,
  lastTick: 0,
  baseline: undefined,
  request: 0,
  modelVersion: 0,
  baselineVersion: 0,
  renderedKey: ""
}

const currentScenario = (): Scenario | string =>
  parseScenario({
    primary: ui.inputs.primary.value,
    routeTimeout: ui.inputs.routeTimeout.value,
    deadline: ui.inputs.deadline.value,
    secondaryContract: ui.inputs.secondaryContract.value,
    secondary: ui.inputs.secondary.value
  })

const isModel = (value: unknown): value is ScenarioModel =>
  typeof value === "object" && value !== null && "events" in value && Array.isArray(value.events)

/** Asks the local server for the scenario's model (the real engine under TestClock). */
const load = async () => {
  const scenario = currentScenario()
  if (typeof scenario === "string") {
    ui.status.value = scenario
    return
  }
  const ticket = ++state.request
  const query = new URLSearchParams({
    primary: scenario.primary,
    routeTimeout: String(scenario.routeTimeout),
    deadline: String(scenario.deadline),
    secondaryContract: scenario.secondaryContract,
    secondary: scenario.secondary
  })
  const response = await fetch(`/api/model?${query}`)
  const body: unknown = await response.json()
  if (ticket !== state.request) return
  if (!response.ok || !isModel(body)) {
    ui.status.value = `could not compute the scenario (${response.status})`
    return
  }
  state.model = body
  state.modelVersion++
  // For tests and scripts: which scenario the page shows.
  document.body.dataset.scenario = JSON.stringify(body.scenario)
  render()
}

/** Loads the model; a failed request says so in the status line. */
const reload = () => {
  load().catch((error: unknown) => {
    ui.status.value = `could not reach the lab server (${String(error)})`
  })
}

const pause = () => {
  state.playing = false
  render()
}

const seek = (t: number) => {
  state.t = clampTime(t)
  render()
}

const tick = () => {
  if (!state.playing) return
  const now = performance.now()
  state.t = clampTime(state.t + ((now - state.lastTick) / 1000) * state.speed)
  state.lastTick = now
  if (state.t >= teachingSeconds) state.playing = false
  render()
}
setInterval(tick, 100)

const kindLabels: Record<LabEvent["kind"], string> = {
  request: "request",
  excluded: "never dispatched",
  dispatch: "dispatch",
  wait: "client waits",
  "server-completion": "server completion",
  "route-timeout": "route timeout",
  deadline: "global deadline",
  decision: "decision",
  "late-response": "late response",
  result: "result"
}

const sealedResult = "client returns — the result is disclosed when playback reaches 60 s"

const renderEvents = (model: ScenarioModel, shown: ReadonlyArray<LabEvent>) => {
  const disclosed = resultDisclosed(state.t)
  const items = shown.map((e) => {
    const li = document.createElement("li")
    li.tabIndex = 0
    li.className = `event ${e.kind}`
    li.dataset.kind = e.kind
    const time = document.createElement("time")
    time.textContent = `${e.at} ms`
    const kind = document.createElement("span")
    kind.className = "kind"
    kind.textContent = kindLabels[e.kind]
    const text = document.createElement("span")
    text.className = "text"
    text.textContent = e.kind === "result" && !disclosed ? sealedResult : e.text
    li.append(time, kind, text)
    return li
  })
  ui.events.replaceChildren(...items)
  ui.events.dataset.count = String(shown.length)
  ui.events.dataset.total = String(model.events.length)
}

/** Routes whose server is still working at this point of playback: the client gave up, no late response yet. */
const outstandingAt = (model: ScenarioModel, shown: ReadonlyArray<LabEvent>) =>
  model.attempts.filter(
    (a) =>
      shown.some((e) => e.route === a.route && (e.kind === "route-timeout" || e.kind === "deadline")) &&
      !shown.some((e) => e.route === a.route && e.kind === "late-response")
  )

const renderTimeline = (model: ScenarioModel, shown: ReadonlyArray<LabEvent>, now: number) => {
  const span = Math.max(model.endsAt, model.scenario.deadline) * 1.08
  const pct = (ms: number) => `${((ms / span) * 100).toFixed(2)}%`
  const lanes: Array<HTMLElement> = []
  for (const route of ["primary", "secondary"] as const satisfies ReadonlyArray<Route>) {
    const lane = document.createElement("div")
    lane.className = "lane"
    const label = document.createElement("span")
    label.className = "lane-label"
    label.textContent = route
    const track = document.createElement("div")
    track.className = "track"
    const excluded = model.neverDispatched.find((x) => x.route === route)
    if (excluded !== undefined && shown.some((e) => e.kind === "excluded" && e.route === route)) {
      const note = document.createElement("span")
      note.className = "excluded-note"
      note.textContent = `never dispatched: ${excluded.detail}`
      track.append(note)
    }
    const attempt = model.attempts.find((a) => a.route === route)
    if (attempt !== undefined && shown.some((e) => e.kind === "dispatch" && e.route === route)) {
      const waitEnd = Math.min(attempt.endedAt, Math.max(now, attempt.dispatchedAt))
      const wait = document.createElement("div")
      wait.className = "bar wait"
      wait.style.left = pct(attempt.dispatchedAt)
      wait.style.width = pct(Math.max(waitEnd - attempt.dispatchedAt, span / 400))
      wait.title = `client waits ${attempt.dispatchedAt}–${attempt.endedAt} ms`
      track.append(wait)
      if (
        now >= attempt.endedAt &&
        shown.some((e) => e.at === attempt.endedAt && e.route === route && e.kind !== "dispatch")
      ) {
        const end = document.createElement("span")
        end.className = `end-label ${attempt.endedBy}`
        end.style.left = pct(attempt.endedAt)
        end.textContent =
          attempt.endedBy === "server-completion"
            ? String(attempt.httpStatus ?? (attempt.outcome === "success" ? 200 : attempt.outcome))
            : attempt.endedBy === "deadline"
              ? "deadline"
              : "timeout"
        track.append(end)
      }
      // Once the client gave up, the server's remaining work (known from the script) is drawn hatched.
      if (attempt.endedBy !== "server-completion" && now >= attempt.endedAt) {
        const work = document.createElement("div")
        work.className = "bar work"
        work.style.left = pct(attempt.endedAt)
        work.style.width = pct(attempt.serverCompletesAt - attempt.endedAt)
        work.title = `server still working until ${attempt.serverCompletesAt} ms`
        track.append(work)
      }
      if (shown.some((e) => e.kind === "late-response" && e.route === route)) {
        const late = document.createElement("div")
        late.className = "marker late"
        late.style.left = pct(attempt.serverCompletesAt)
        late.title = `late response at ${attempt.serverCompletesAt} ms`
        track.append(late)
      }
    }
    lane.append(label, track)
    lanes.push(lane)
  }
  const deadline = document.createElement("div")
  deadline.className = "deadline-line"
  // The lines span the lanes: offset by the lane labels' width (5.5rem), scaled to the tracks.
  const across = (ms: number) => `calc(5.5rem + (100% - 5.5rem) * ${(ms / span).toFixed(4)})`
  deadline.style.left = across(model.scenario.deadline)
  deadline.title = `global deadline ${model.scenario.deadline} ms`
  const cursor = document.createElement("div")
  cursor.className = "cursor"
  cursor.style.left = across(now)
  const ticks = document.createElement("div")
  ticks.className = "ticks"
  const step = span > 1200 ? 200 : 100
  for (let ms = 0; ms <= span; ms += step) {
    const tick = document.createElement("span")
    tick.style.left = pct(ms)
    tick.textContent = ms % (step * 2) === 0 ? `${ms}` : ""
    ticks.append(tick)
  }
  const axis = document.createElement("div")
  axis.className = "axis"
  axis.textContent = `virtual milliseconds · reached ${now} ms · global deadline at ${model.scenario.deadline} ms`
  const tickLane = document.createElement("div")
  tickLane.className = "lane tick-lane"
  const spacer = document.createElement("span")
  spacer.className = "lane-label"
  tickLane.append(spacer, ticks)
  const plot = document.createElement("div")
  plot.className = "plot"
  plot.append(...lanes, tickLane, deadline, cursor)
  ui.timeline.replaceChildren(plot, axis)
}

const list = (items: ReadonlyArray<string>, empty: string) => {
  const ul = document.createElement("ul")
  for (const text of items.length > 0 ? items : [empty]) {
    const li = document.createElement("li")
    li.textContent = text
    ul.append(li)
  }
  return ul
}

const section = (title: string, body: HTMLElement) => {
  const div = document.createElement("div")
  div.className = "final-part"
  const h = document.createElement("h4")
  h.textContent = title
  div.append(h, body)
  return div
}

const summary = (m: ScenarioModel) => ({
  attempts: m.attempts.map((a) => `${a.route}: ${a.dispatchedAt}–${a.endedAt} ms, ${a.outcome} (${a.endedBy})`),
  late: m.lateResponses.map(
    (l) => `${l.route} at ${l.at} ms (${l.httpStatus ?? "?"}), ${l.at - l.abandonedAt} ms late`
  ),
  outstanding: m.outstandingAtReturn.map((o) => `${o.route} (working until ${o.completesAt} ms)`),
  result: `${m.result.outcome} at ${m.result.at} ms: ${m.result.text}`
})

const renderFinal = (model: ScenarioModel) => {
  if (!resultDisclosed(state.t)) {
    const p = document.createElement("p")
    p.className = "sealed"
    p.textContent = "Disclosed when playback reaches 60 s."
    ui.final.replaceChildren(p)
    ui.final.dataset.disclosed = "false"
    return
  }
  const s = summary(model)
  const result = document.createElement("p")
  result.className = `result ${model.result.outcome}`
  result.textContent = s.result
  ui.final.replaceChildren(
    result,
    section("Attempts made", list(s.attempts, "none")),
    section("Late responses", list(s.late, "none")),
    section("Routes still outstanding when the client returned", list(s.outstanding, "none"))
  )
  ui.final.dataset.disclosed = "true"
}

const scenarioRows = (m: ScenarioModel): ReadonlyArray<readonly [string, string]> => {
  const s = summary(m)
  return [
    ["Primary fixture", fixtures[m.scenario.primary].label],
    ["Per-route timeout", `${m.scenario.routeTimeout} ms`],
    ["Global deadline", `${m.scenario.deadline} ms`],
    ["Secondary contract", contractLabels[m.scenario.secondaryContract]],
    ["Secondary fixture", fixtures[m.scenario.secondary].label],
    ["Attempts made", s.attempts.join("; ") || "none"],
    ["Late responses", s.late.join("; ") || "none"],
    ["Outstanding when the client returned", s.outstanding.join("; ") || "none"],
    ["Result", s.result],
    ["Events", m.events.map((e) => `${e.at} ms ${e.kind}${e.route ? ` (${e.route})` : ""}`).join(" · ")]
  ]
}

/** Rows that reveal the outcome stay sealed on the current side until 60 s. */
const sealedRows = new Set([
  "Attempts made",
  "Late responses",
  "Outstanding when the client returned",
  "Result",
  "Events"
])

const renderComparison = (model: ScenarioModel) => {
  ui.capture.disabled = state.baseline !== undefined
  ui.replace.disabled = state.baseline === undefined
  ui.clear.disabled = state.baseline === undefined
  const baseline = state.baseline
  if (baseline === undefined) {
    const p = document.createElement("p")
    p.textContent = "No baseline. Capture one to compare runs side by side."
    ui.comparison.replaceChildren(p)
    return
  }
  const table = document.createElement("table")
  table.className = "comparison"
  const caption = document.createElement("caption")
  caption.textContent = "Baseline and current run side by side (differences highlighted)"
  const head = document.createElement("tr")
  for (const h of ["", "Baseline", "Current"]) {
    const th = document.createElement("th")
    th.scope = "col"
    th.textContent = h
    head.append(th)
  }
  const thead = document.createElement("thead")
  thead.append(head)
  const tbody = document.createElement("tbody")
  const current = scenarioRows(model)
  let differences = 0
  scenarioRows(baseline).forEach(([name, before], i) => {
    const sealed = !resultDisclosed(state.t) && sealedRows.has(name)
    const after = sealed ? "disclosed at 60 s" : (current[i]?.[1] ?? "")
    const differs = !sealed && before !== after
    if (differs) differences++
    const tr = document.createElement("tr")
    if (differs) tr.className = "differs"
    const th = document.createElement("th")
    th.scope = "row"
    th.textContent = differs ? `${name} (differs)` : name
    const a = document.createElement("td")
    a.textContent = before
    const b = document.createElement("td")
    b.textContent = after
    tr.append(th, a, b)
    tbody.append(tr)
  })
  table.append(caption, thead, tbody)
  table.dataset.differences = String(differences)
  ui.comparison.replaceChildren(table)
}

const render = () => {
  const model = state.model
  const stage = stageAt(state.t)
  ui.time.value = String(state.t)
  ui.time.setAttribute("aria-valuetext", `${state.t.toFixed(1)} of ${teachingSeconds} teaching seconds, stage ${stage}`)
  ui.play.disabled = state.playing || state.t >= teachingSeconds || model === undefined
  ui.pause.disabled = !state.playing
  ui.next.disabled = state.t >= teachingSeconds || model === undefined
  document.body.dataset.playing = String(state.playing)
  document.body.dataset.stage = String(stage)
  ui.clock.textContent = `${state.t.toFixed(1)} s of ${teachingSeconds} s`
  if (model === undefined) return
  // What follows changes only with the stage, the disclosure, the model or the baseline: rebuilt
  // then, not on every tick (a focused event in the history keeps its focus while playing).
  const key = `${stage}|${resultDisclosed(state.t)}|${state.modelVersion}|${state.baselineVersion}`
  if (key === state.renderedKey) return
  state.renderedKey = key
  const shown = revealedAt(model, state.t)
  const now = virtualNow(model, state.t)
  ui.status.value = `Stage ${stage} of ${stages} · ${shown.length} of ${model.events.length} events`
  renderTimeline(model, shown, now)
  renderEvents(model, shown)
  const working = outstandingAt(model, shown)
  ui.outstanding.replaceChildren(
    ...(working.length > 0
      ? working.map((a) => {
          const li = document.createElement("li")
          li.className = "work"
          li.textContent = `${a.route}: the client stopped waiting at ${a.endedAt} ms; its server is still working (until ${a.serverCompletesAt} ms)`
          return li
        })
      : [Object.assign(document.createElement("li"), { textContent: "none at this point" })])
  )
  renderFinal(model)
  renderComparison(model)
}

const download = (name: string, type: string, text: string) => {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement("a")
  a.href = url
  a.download = name
  document.body.append(a)
  a.click()
  a.remove()
  setTimeout(() => URL.revokeObjectURL(url), 1000)
}

ui.play.addEventListener("click", () => {
  if (state.t >= teachingSeconds) return
  state.playing = true
  state.lastTick = performance.now()
  render()
})
ui.pause.addEventListener("click", pause)
ui.next.addEventListener("click", () => {
  state.playing = false
  seek(nextBoundary(state.t))
})
ui.restart.addEventListener("click", () => {
  state.lastTick = performance.now()
  seek(0)
})
ui.time.addEventListener("input", () => {
  state.playing = false
  seek(Number(ui.time.value))
})
ui.speed.addEventListener("change", () => {
  const chosen = speeds.find((s) => String(s) === ui.speed.value)
  if (chosen !== undefined) state.speed = chosen
})
for (const select of Object.values(ui.inputs)) {
  select.addEventListener("change", () => {
    state.playing = false
    state.t = 0
    render()
    reload()
  })
}
document.addEventListener("visibilitychange", () => {
  if (document.hidden && state.playing) pause()
})

ui.exportEvents.addEventListener("click", () => {
  if (state.model === undefined) return
  download(
    "fallback-lab-events.json",
    "application/json",
    `${JSON.stringify(exportDocument(state.model, state.t), null, 2)}\n`
  )
})
const setBaseline = (baseline: ScenarioModel | undefined) => {
  state.baseline = baseline
  state.baselineVersion++
  render()
}
ui.capture.addEventListener("click", () => setBaseline(state.model))
ui.replace.addEventListener("click", () => setBaseline(state.model))
ui.clear.addEventListener("click", () => setBaseline(undefined))

ui.notes.value = localStorage.getItem(notesKey) ?? ""
ui.notes.addEventListener("input", () => localStorage.setItem(notesKey, ui.notes.value))
ui.exportNotes.addEventListener("click", () => download("fallback-lab-notes.txt", "text/plain", ui.notes.value))

const syncExpand = () => {
  ui.expand.textContent = document.fullscreenElement === ui.experiment ? "Exit full screen" : "Expand experiment"
}
ui.expand.addEventListener("click", () => {
  if (document.fullscreenElement === ui.experiment) void document.exitFullscreen()
  else void ui.experiment.requestFullscreen()
})
document.addEventListener("fullscreenchange", syncExpand)

render()
reload()
