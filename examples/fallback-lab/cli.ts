/**
 * The lab's command line.
 */
import { defaults, type LabOptions, parseOutcomes } from "./lab.js"
import { parseScenario, type Scenario } from "./scenario.js"

export const usage = `usage: pnpm fallback-lab [flags]
       pnpm fallback-lab scenario [flags]    the web lab's experiment as text (--help for its flags)

  --primary <outcomes>       what the primary answers, per attempt (default hang)
  --secondary <outcomes>     what the secondary answers, per attempt (default ok:200)
                             outcomes: ok:<ms> 503:<ms> 429:<ms>[:<retry-after ms>] 400:<ms>
                                       invalid:<ms> refusal:<ms> hang, comma-separated; the last repeats
  --timeout <ms>             per-attempt timeout of both routes (default 400)
  --primary-timeout <ms>     … of the primary only
  --secondary-timeout <ms>   … of the secondary only
  --deadline <ms>            the call's end-to-end deadline (default 1000)
  --attempts <n>             attempts per route (default 2)
  --min-attempt <ms>         no attempt starts with less time left (default 100)
  --base-delay <ms>          first backoff before jitter, doubling per retry (default 200)
  --jitter <0..1>            the full-jitter draw (default 0.5)
  --secondary-compatible yes|region|schema|tool
                             region: the secondary runs in the US and the request is EU-only;
                             schema: its strict mode lacks a feature the request needs;
                             tool: it cannot call the tool the request offers (default yes)`

export const scenarioUsage = `usage: pnpm fallback-lab scenario [flags]

  The web lab's experiment (pnpm lab) as text: one request, at most two attempts, the same model.
  --primary success|unavailable|invalid|slow      (default slow)
  --route-timeout 250|500|1000                    per-route timeout, ms (default 500)
  --deadline 400|800|1600                         global deadline, ms (default 800)
  --secondary-contract compatible|missing-tool    (default compatible)
  --secondary success|unavailable|slow            (default success)`

const scenarioFlags: Record<string, keyof Scenario> = {
  "--primary": "primary",
  "--route-timeout": "routeTimeout",
  "--deadline": "deadline",
  "--secondary-contract": "secondaryContract",
  "--secondary": "secondary"
}

/** A flag with its value, or a request for the usage text. */
type Token = { readonly arg: string; readonly flag: string; readonly value: string | undefined } | "help"

/**
 * The command line as flags in order (`--flag value` or `--flag=value`; a bare `--` is dropped),
 * `"help"` where `--help` or `-h` stands; the last flag's value is `undefined` when none follows.
 */
const flagsOf = (argv: ReadonlyArray<string>): ReadonlyArray<Token> => {
  const args = argv.filter((a) => a !== "--")
  const tokens: Array<Token> = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ""
    if (arg === "--help" || arg === "-h") {
      tokens.push("help")
      continue
    }
    const eq = arg.indexOf("=")
    tokens.push(
      eq > 0 ? { arg, flag: arg.slice(0, eq), value: arg.slice(eq + 1) } : { arg, flag: arg, value: args[++i] }
    )
  }
  return tokens
}

/** The `scenario` mode's flags: a scenario, or the text to print (usage or an error). */
export const parseScenarioArgs = (argv: ReadonlyArray<string>): Scenario | string => {
  const values: Record<string, string> = {}
  for (const token of flagsOf(argv)) {
    if (token === "help") return scenarioUsage
    const { arg, flag, value } = token
    const key = Object.hasOwn(scenarioFlags, flag) ? scenarioFlags[flag] : undefined
    if (key === undefined) return `unknown argument "${arg}"\n\n${scenarioUsage}`
    if (value === undefined) return `${flag} needs a value\n\n${scenarioUsage}`
    values[key] = value
  }
  const scenario = parseScenario(values)
  return typeof scenario === "string" ? `${scenario}\n\n${scenarioUsage}` : scenario
}

/** The options, or the text to print (usage or an error). */
export const parse = (argv: ReadonlyArray<string>): LabOptions | string => {
  let o: LabOptions = defaults
  let timeout: number | undefined
  let primaryTimeout: number | undefined
  let secondaryTimeout: number | undefined
  for (const token of flagsOf(argv)) {
    if (token === "help") return usage
    const { arg, flag, value } = token
    if (value === undefined) return `${flag} needs a value\n\n${usage}`
    const ms = () => (/^\d+$/.test(value) ? Number(value) : undefined)
    const bad = `${flag}: invalid value "${value}"\n\n${usage}`
    switch (flag) {
      case "--primary":
      case "--secondary": {
        const outcomes = parseOutcomes(value)
        if (typeof outcomes === "string") return `${flag}: ${outcomes}`
        o = flag === "--primary" ? { ...o, primary: outcomes } : { ...o, secondary: outcomes }
        break
      }
      case "--timeout":
      case "--primary-timeout":
      case "--secondary-timeout":
      case "--deadline":
      case "--attempts":
      case "--min-attempt":
      case "--base-delay": {
        const n = ms()
        if (n === undefined || (n === 0 && flag !== "--base-delay")) return bad
        if (flag === "--timeout") timeout = n
        else if (flag === "--primary-timeout") primaryTimeout = n
        else if (flag === "--secondary-timeout") secondaryTimeout = n
        else if (flag === "--deadline") o = { ...o, deadline: n }
        else if (flag === "--attempts") o = { ...o, attempts: n }
        else if (flag === "--min-attempt") o = { ...o, minimumAttemptTime: n }
        else o = { ...o, baseDelay: n }
        break
      }
      case "--jitter": {
        const n = Number(value)
        if (!(n >= 0 && n < 1)) return bad
        o = { ...o, jitter: n }
        break
      }
      case "--secondary-compatible":
        if (value !== "yes" && value !== "region" && value !== "schema" && value !== "tool") return bad
        o = { ...o, secondaryCompatible: value }
        break
      default:
        return `unknown argument "${arg}"\n\n${usage}`
    }
  }
  return {
    ...o,
    primaryTimeout: primaryTimeout ?? timeout ?? o.primaryTimeout,
    secondaryTimeout: secondaryTimeout ?? timeout ?? o.secondaryTimeout
  }
}
