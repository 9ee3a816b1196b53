/**
 * `POST /v1/chat/completions` answered straight from the `node:http` request listener, ahead of
 * the platform router: the same steps and answers as the platform route (`chat.ts`), without its
 * request and response objects. Admission, the key, the size-capped body, its decoding and the
 * workflow are plain checks; the call (`Chat.call`) runs as one fiber on the server's runtime and
 * its answer is written with one `writeHead` and `end` (JSON) or frame by frame with backpressure
 * (SSE). A response closed before its end interrupts the fiber, so a client that disconnects
 * cancels the call, as on the platform route.
 *
 * @internal
 */
import { type Errors, type ModelResult, Tenancy } from "@modelgate/core"
import { Cause, Chunk, Context, Effect, Exit, type Fiber, FiberId, Option, Runtime, Stream } from "effect"
import type * as Http from "node:http"
import type { ApiKey } from "../ServerConfig.js"
import * as Chat from "./chat.js"
import * as ErrorWire from "./errorWire.js"
import * as Request from "./request.js"

const path = "/v1/chat/completions"

/** The OpenAI error JSON of `error`, unless the response is already under way or gone. */
const writeError = (res: Http.ServerResponse, error: ErrorWire.WireError) =>
  writeJson(res, error.status, error.headers ?? {}, ErrorWire.errorBody(error))

const writeJson = (
  res: Http.ServerResponse,
  status: number,
  headers: Readonly<Record<string, string>>,
  body: unknown
) => {
  if (res.headersSent || res.destroyed) return
  const text = JSON.stringify(body)
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

/** Writes frames, waiting for `drain` when the socket's buffer is full (a slow reader). */
const writeFrame = (res: Http.ServerResponse, text: string) =>
  Effect.async<void>((resume) => {
    if (res.write(text) || res.destroyed) return resume(Effect.void)
    const done = () => {
      res.off("drain", done)
      res.off("close", done)
      resume(Effect.void)
    }
    res.on("drain", done)
    res.on("close", done)
    return Effect.sync(() => {
      res.off("drain", done)
      res.off("close", done)
    })
  })

const deliver = (res: Http.ServerResponse, answer: Chat.Answer) =>
  answer._tag === "Json"
    ? Effect.sync(() => writeJson(res, 200, answer.headers, answer.body))
    : Effect.sync(() => res.writeHead(200, { ...answer.headers, "content-type": "text/event-stream" })).pipe(
        // The frames of one chunk (e.g. a stream's closing frames) go out as one write.
        Effect.zipRight(
          Stream.runForEachChunk(answer.frames, (frames) =>
            Chunk.isEmpty(frames) ? Effect.void : writeFrame(res, Chunk.join(frames, ""))
          )
        ),
        Effect.zipRight(Effect.sync(() => res.end()))
      )

/** A refusal as its error answer; a defect as a 500 (or a cut stream once it is under way). */
const settle = (res: Http.ServerResponse, exit: Exit.Exit<void, Request.WireFailure>) => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return
  const failure = Cause.failureOption(exit.cause)
  if (res.headersSent) res.destroy()
  else writeError(res, Option.isSome(failure) ? failure.value.error : ErrorWire.internal)
}

/** Reads the body up to `limit` bytes: the text, or `undefined` past the limit (read no further). */
const readText = (req: Http.IncomingMessage, limit: number, done: (text: string | undefined) => void) => {
  const chunks: Array<Buffer> = []
  let size = 0
  const onData = (chunk: Buffer) => {
    size += chunk.length
    if (size <= limit) return void chunks.push(chunk)
    req.off("data", onData)
    req.off("end", onEnd)
    done(undefined)
  }
  const onEnd = () =>
    done(
      chunks.length === 1 && chunks[0] !== undefined
        ? chunks[0].toString("utf8")
        : Buffer.concat(chunks).toString("utf8")
    )
  req.on("data", onData)
  req.on("end", onEnd)
}

type Run = <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>

/** A response closed before its end interrupts `fiber` (a client gone cancels its call). */
const cancelOnClose = (res: Http.ServerResponse, fiber: Fiber.RuntimeFiber<unknown, unknown>) =>
  res.on("close", () => {
    if (!res.writableEnded) fiber.unsafeInterruptAsFork(FiberId.none)
  })

/**
 * The common call (`Chat.direct`): the gateway's generate as the fiber, its result or error
 * written from the fiber's observer (no steps on the runtime around it).
 */
const runDirect = (
  env: Request.Env,
  run: Run,
  res: Http.ServerResponse,
  model: string,
  generate: Effect.Effect<ModelResult.ModelResult, Errors.GatewayError>
) => {
  const created = env.createdAt()
  const fiber = run(generate)
  fiber.addObserver((exit) => {
    if (Exit.isSuccess(exit)) {
      // A defect while rendering the answer is a 500, as it is inside a fiber.
      try {
        const answer = Chat.jsonOf(exit.value, model, created)
        return writeJson(res, 200, answer.headers, answer.body)
      } catch {
        return writeError(res, ErrorWire.internal)
      }
    }
    if (Cause.isInterruptedOnly(exit.cause)) return
    const failure = Cause.failureOption(exit.cause)
    writeError(res, Option.isSome(failure) ? ErrorWire.fromGatewayError(failure.value) : ErrorWire.internal)
  })
  cancelOnClose(res, fiber)
}

/** The steps of `chat.ts`'s route, as plain checks up to the call. */
const answer = (env: Request.Env, runAs: (key: ApiKey) => Run, req: Http.IncomingMessage, res: Http.ServerResponse) => {
  const refused = Request.admission(env)
  if (refused !== undefined) return writeError(res, refused)
  const key = Request.keyOf(env, req.headers.authorization)
  if (key === undefined) return writeError(res, ErrorWire.unauthorized)
  const run = runAs(key)
  const limit = env.limits.maxBodyBytes
  if (Number(req.headers["content-length"] ?? "0") > limit) return writeError(res, Request.tooLarge(limit))
  readText(req, limit, (text) => {
    if (text === undefined) return writeError(res, Request.tooLarge(limit))
    const body = Chat.decodeBody(text)
    if (body._tag === "Left") return writeError(res, body.left)
    const workflow = Request.workflowOf(env, key, body.right.model, "chat")
    if (workflow === undefined) return writeError(res, ErrorWire.modelNotFound())
    const direct = Chat.direct(env, req.headers, key, body.right, workflow)
    if (direct !== undefined) {
      if (Effect.isEffect(direct)) return runDirect(env, run, res, body.right.model, direct)
      return writeError(res, direct)
    }
    const fiber = run(
      Effect.scoped(
        Effect.flatMap(Chat.call(env, req.headers, key, body.right, workflow), (answer) => deliver(res, answer))
      )
    )
    fiber.addObserver((exit) => settle(res, exit))
    cancelOnClose(res, fiber)
  })
}

/**
 * The listener: answers `POST /v1/chat/completions` and returns true, or returns false for every
 * other request (left to the platform router).
 */
export const listener = (live: Request.Live, runtime: Runtime.Runtime<never>) => {
  const runAs = runnersByKey(runtime)
  return (req: Http.IncomingMessage, res: Http.ServerResponse): boolean => {
    const url = req.url ?? ""
    if (req.method !== "POST" || !(url === path || url.startsWith(`${path}?`))) return false
    // A client gone while its body is read: nothing to answer (the socket's close ends it).
    req.on("error", () => {})
    answer(live.current, runAs, req, res)
    return true
  }
}

/**
 * The fiber launcher of each key: `runtime` with the key's identity vouched for in its context
 * (`Tenancy.CurrentIdentity`), built at a key's first request and kept while the key is. A call
 * started on it runs for the key's tenant without providing a service per request (a context
 * provided per request made Effect compare and hash the fiber's whole context, twice).
 */
const runnersByKey = (runtime: Runtime.Runtime<never>) => {
  const runners = new WeakMap<ApiKey, Run>()
  return (key: ApiKey): Run => {
    const known = runners.get(key)
    if (known !== undefined) return known
    const run = Runtime.runFork(
      Runtime.make({
        context: Context.add(runtime.context, Tenancy.CurrentIdentity, Request.identityOf(key)),
        fiberRefs: runtime.fiberRefs,
        runtimeFlags: runtime.runtimeFlags
      })
    )
    runners.set(key, run)
    return run
  }
}
