/** The mock server tests' client: a JSON POST through the `HttpClient` in context. */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"

/** POSTs `body` as JSON to `url`; the response, unread. */
export const postJson = (url: string, body: unknown) =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    client.execute(HttpClientRequest.post(url).pipe(HttpClientRequest.bodyUnsafeJson(body)))
  )
