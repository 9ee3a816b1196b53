/**
 * A loopback HTTP server for the transport tests: answers with a handler, closed with the scope.
 */
import { createServer } from "node:http"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Effect } from "effect"

/** A loopback server answering with `handler`, closed with the scope. */
export const serve = (handler: (request: IncomingMessage, response: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly close: () => void }>((resume) => {
      const server = createServer(handler)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(
          Effect.succeed({
            url: `http://127.0.0.1:${port}`,
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          })
        )
      })
    }),
    (server) => Effect.sync(server.close)
  )
