/**
 * `pnpm lab`: builds the fallback lab page and serves it on 127.0.0.1, then prints the URL.
 * `LAB_PORT` picks the port (default 4178; taken → a free one).
 */
import { startLabServer } from "./server.js"

const wanted = Number(process.env.LAB_PORT ?? 4178)
const lab = await startLabServer({ port: wanted }).catch((error: NodeJS.ErrnoException) => {
  if (error.code === "EADDRINUSE") return startLabServer({ port: 0 })
  throw error
})
process.stdout.write(
  `fallback lab: ${lab.url}\n  page script ${(lab.bundleBytes / 1024).toFixed(1)} KiB · the engine runs in this process (GET /api/model)\n  Ctrl-C to stop\n`
)
