/**
 * The demo's command line: `--scenario <name>|all`, `--json`, `--live`, `--help`.
 */
import { isScenarioName, type ScenarioName, scenarioNames } from "./scenarios.js"

export const usage = `usage: pnpm demo [--scenario ${scenarioNames.join("|")}|all] [--json] [--live]

  --scenario  what goes wrong (default normal; all runs each in turn)
  --json      print the CallRecords as JSON lines instead of the report
  --live      call the real providers whose keys are set (OPENAI_API_KEY, ANTHROPIC_API_KEY,
              GEMINI_API_KEY; VLLM_EU_BASE_URL for the EU vLLM target); the rest stay mocked`

export interface Flags {
  readonly scenarios: ReadonlyArray<ScenarioName>
  readonly json: boolean
  readonly live: boolean
}

/** The flags, or the text to print (usage or an error). */
export const parse = (argv: ReadonlyArray<string>): Flags | string => {
  let scenarios: ReadonlyArray<ScenarioName> = ["normal"]
  let json = false
  let live = false
  const args = argv.filter((a) => a !== "--")
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? ""
    const [flag, inline] = arg.includes("=")
      ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)]
      : [arg, undefined]
    switch (flag) {
      case "--scenario": {
        const value = inline ?? args[++i]
        if (value === "all") scenarios = scenarioNames
        else if (value !== undefined && isScenarioName(value)) scenarios = [value]
        else return `unknown scenario "${value ?? ""}"\n\n${usage}`
        break
      }
      case "--json":
        json = true
        break
      case "--live":
        live = true
        break
      case "--help":
      case "-h":
        return usage
      default:
        return `unknown argument "${arg}"\n\n${usage}`
    }
  }
  return { scenarios, json, live }
}
