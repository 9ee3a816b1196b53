/**
 * The direct transport: `undici` requests on a pooled `Dispatcher`, no `@effect/platform` client in
 * between. A JSON exchange is one `Effect.async` step (request, head, bounded body) on undici's
 * dispatch handler interface (no response stream, no `AbortSignal`), whose interruption aborts the
 * request, and which can own the attempt's deadline (`exchangeUntil`: one
 * native timer aborting the request, see `ownedDeadline.ts`); a stream's body is read as it arrives. The answers, the size
 * limits and the classified errors are those of the `HttpClient` transport (`transport.ts`); when a
 * tracer is installed, the exchange gets a client span with the platform client's name, attributes
 * and header redaction.
 *
 * @internal
 */
import { Headers, HttpClient, type HttpClientRequest, UrlParams } from "@effect/platform"
import type { ProviderError } from "@modelgate/core/ProviderAdapter"
import type { Fiber, Scope, Tracer } from "effect"
import { Context, Effect, Either, FiberRef, Option, Stream } from "effect"
import { Agent, type Dispatcher, util } from "undici"
import type { Meta } from "./classify.js"
import {
  bodyFailure,
  bodyTooLarge,
  concatBytes,
  encodeFailure,
  errorBodyLimit,
  invalidUrl,
  requestFailure,
  withSecretNames
} from "./http.js"
import { abortableUntil } from "./ownedDeadline.js"
import type { Answer, ExchangeOptions, Opened, Transport } from "./transport.js"

/** Pool settings of the direct transport. @internal */
export interface UndiciOptions {
  /** Most connections per origin. Default: unlimited (undici's default). */
  readonly connections?: number | undefined
  /** How long an idle connection is kept, ms. Default 4 000 (undici's default). */
  readonly keepAliveTimeoutMs?: number | undefined
  /** How long opening a connection may take, ms. Default 10 000 (undici's default). */
  readonly connectTimeoutMs?: number | undefined
}

/**
 * A pooled dispatcher owned by the scope: destroyed (its connections closed) when the scope closes.
 *
 * @internal
 */
export const makeAgent = (options: UndiciOptions = {}): Effect.Effect<Dispatcher, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(
      () =>
        new Agent({
          ...(options.connections === undefined ? {} : { connections: options.connections }),
          ...(options.keepAliveTimeoutMs === undefined ? {} : { keepAliveTimeout: options.keepAliveTimeoutMs }),
          ...(options.connectTimeoutMs === undefined ? {} : { connect: { timeout: options.connectTimeoutMs } })
        })
    ),
    (agent) => Effect.promise(() => agent.destroy())
  )

/** The tracer Effect runs with when nobody installed one: no span is made then. */
const defaultTracer = Effect.runSync(Effect.tracer)

const decoder = new TextDecoder()

const isSuccess = (status: number) => status >= 200 && status < 300

const noop = () => {}

/** A parsed endpoint: its URL, and the origin and path undici is given. */
interface Endpoint {
  readonly url: URL
  readonly origin: string
  readonly path: string
}

/** Most endpoints a transport keeps parsed (an adapter sends to a handful). */
const maxEndpoints = 64

/** The endpoints a transport sent to, each URL parsed once (those without URL parameters or hash). */
class Endpoints {
  private readonly parsed = new Map<string, Endpoint>()

  of(request: HttpClientRequest.HttpClientRequest): Endpoint | undefined {
    const plain = request.urlParams.length === 0 && Option.isNone(request.hash)
    const known = plain ? this.parsed.get(request.url) : undefined
    if (known !== undefined) return known
    const url = UrlParams.makeUrl(request.url, request.urlParams, request.hash)
    if (Either.isLeft(url)) return undefined
    const endpoint: Endpoint = { url: url.right, origin: url.right.origin, path: url.right.pathname + url.right.search }
    if (plain) {
      if (this.parsed.size >= maxEndpoints) this.parsed.clear()
      this.parsed.set(request.url, endpoint)
    }
    return endpoint
  }
}

/** Where a request goes and what it carries, or why it cannot be sent. */
interface Target extends Endpoint {
  readonly body: Uint8Array | string | null
}

const targetOf = (
  endpoints: Endpoints,
  request: HttpClientRequest.HttpClientRequest,
  provider: string
): Either.Either<Target, ProviderError> => {
  const endpoint = endpoints.of(request)
  if (endpoint === undefined) return Either.left(invalidUrl(provider))
  const { url, origin, path } = endpoint
  const body = request.body
  switch (body._tag) {
    case "Empty":
      return Either.right({ url, origin, path, body: null })
    case "Uint8Array":
      return Either.right({ url, origin, path, body: body.body })
    case "Raw":
      return typeof body.body === "string" || body.body instanceof Uint8Array
        ? Either.right({ url, origin, path, body: body.body })
        : Either.left(encodeFailure(provider))
    default:
      // Form data and streamed bodies: no adapter sends them.
      return Either.left(encodeFailure(provider))
  }
}

/**
 * Reads `body` to its end within `limit` bytes, then calls `done` once: with the bytes; with
 * `undefined` when the body is larger (`truncate: false`; the rest is not read) or with its first
 * `limit` bytes (`truncate: true`); or with the stream's error.
 */
const collect = (
  body: Dispatcher.ResponseData["body"],
  declared: number,
  limit: number,
  truncate: boolean,
  done: (error: unknown, bytes: Uint8Array | undefined) => void
): void => {
  let parts: Array<Uint8Array> = []
  let size = 0
  let settled = false
  const finish = (error: unknown, bytes: Uint8Array | undefined) => {
    if (settled) return
    settled = true
    parts = []
    done(error, bytes)
  }
  if (!truncate && Number.isFinite(declared) && declared > limit) {
    // Larger than accepted by its own account: nothing is read, and the request is aborted.
    body.on("error", noop)
    body.destroy()
    finish(undefined, undefined)
    return
  }
  body.on("data", (chunk: Uint8Array) => {
    if (settled) return
    if (size + chunk.length >= limit && (truncate || size + chunk.length > limit)) {
      if (!truncate) {
        body.destroy()
        return finish(undefined, undefined)
      }
      parts.push(chunk.subarray(0, limit - size))
      size = limit
      body.destroy()
      return finish(undefined, concatBytes(parts, size))
    }
    parts.push(chunk)
    size += chunk.length
  })
  body.on("end", () => finish(undefined, concatBytes(parts, size)))
  body.on("error", (error) => finish(error, undefined))
}

/** undici's request options for `request` to `target`. */
const optionsOf = (
  request: HttpClientRequest.HttpClientRequest,
  target: Target,
  signal: AbortSignal
): Dispatcher.RequestOptions => ({
  origin: target.origin,
  path: target.path,
  method: request.method,
  headers: request.headers,
  body: target.body,
  signal,
  // The attempt's bound cuts a request (it is aborted), as with the platform client.
  headersTimeout: 60 * 60 * 1000,
  bodyTimeout: 0
})

/**
 * One JSON exchange on undici's dispatcher (its handler interface: no response stream, no
 * `AbortSignal`): the head, a body bounded as it arrives (a 2xx one within `maxBytes`, at most
 * `errorBodyLimit` of another), then `done` called once. {@link ExchangeHandler.abort} aborts the
 * request (the interruption or deadline of the step).
 */
class ExchangeHandler implements Dispatcher.DispatchHandlers {
  private abortRequest: ((error?: Error) => void) | undefined = undefined
  private settled = false
  private status = 0
  private headers: Headers.Headers | undefined = undefined
  private parts: Array<Uint8Array> = []
  private size = 0

  constructor(
    private readonly options: ExchangeOptions,
    private readonly done: (result: Effect.Effect<Answer, ProviderError>) => void
  ) {}

  /** Aborts the request; `done` is not called after this. */
  readonly abort = (): void => {
    this.settled = true
    this.parts = []
    this.abortRequest?.()
  }

  onConnect(abort: (error?: Error) => void): void {
    if (this.settled) abort()
    else this.abortRequest = abort
  }

  onHeaders(status: number, rawHeaders: Array<Buffer> | null): boolean {
    if (status < 200 || this.settled) return !this.settled
    this.status = status
    const headers = Headers.fromInput(rawHeaders === null ? {} : util.parseHeaders(rawHeaders))
    this.headers = headers
    const declared = Number(headers["content-length"])
    // Larger than accepted by its own account: nothing is read, and the request is aborted.
    if (isSuccess(status) && Number.isFinite(declared) && declared > this.options.maxBytes) return this.tooLarge()
    return true
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return false
    const success = isSuccess(this.status)
    const limit = success ? this.options.maxBytes : errorBodyLimit
    if (this.size + chunk.length > limit) {
      if (success) return this.tooLarge()
      // An error body is kept up to the limit, the rest not read.
      this.parts.push(chunk.subarray(0, limit - this.size))
      this.size = limit
      this.finish()
      this.abortSoon()
      return false
    }
    this.parts.push(chunk)
    this.size += chunk.length
    return true
  }

  onComplete(): void {
    this.finish()
  }

  onError(error: Error): void {
    if (this.settled) return
    this.settled = true
    this.parts = []
    const headers = this.headers
    const provider = this.options.provider
    const status = this.status
    if (headers === undefined) this.done(Effect.fail(requestFailure(provider, error)))
    else if (!isSuccess(status)) this.done(Effect.succeed({ status, headers, body: undefined }))
    else {
      const meta: Meta = { httpStatus: status, requestId: this.options.requestId(headers) }
      this.done(Effect.fail(bodyFailure(provider, error, status, meta)))
    }
  }

  /** Settles with the body read so far. */
  private finish(): void {
    if (this.settled || this.headers === undefined) return
    this.settled = true
    const body = decoder.decode(concatBytes(this.parts, this.size))
    this.parts = []
    this.done(Effect.succeed({ status: this.status, headers: this.headers, body }))
  }

  /** A 2xx body larger than `maxBytes`: `invalid_output`, the request aborted. */
  private tooLarge(): false {
    this.settled = true
    this.parts = []
    const headers = this.headers ?? Headers.empty
    const meta: Meta = { httpStatus: this.status, requestId: this.options.requestId(headers) }
    this.done(Effect.fail(bodyTooLarge(this.options.provider, this.options.maxBytes, meta)))
    this.abortSoon()
    return false
  }

  /** Aborts the request once undici's parser has returned (not from inside its callback). */
  private abortSoon(): void {
    const abort = this.abortRequest
    if (abort !== undefined) queueMicrotask(() => abort())
  }
}

/** undici's dispatch options for `request` to `target`. */
const dispatchOptionsOf = (
  request: HttpClientRequest.HttpClientRequest,
  target: Target
): Dispatcher.DispatchOptions => ({
  origin: target.origin,
  path: target.path,
  method: request.method,
  headers: request.headers,
  body: target.body,
  // The attempt's bound cuts a request (it is aborted), as with the platform client.
  headersTimeout: 60 * 60 * 1000,
  bodyTimeout: 0
})

/** Starts one exchange; returns how to abort it. */
const startExchange = (
  dispatcher: Dispatcher,
  request: HttpClientRequest.HttpClientRequest,
  target: Target,
  options: ExchangeOptions,
  done: (result: Effect.Effect<Answer, ProviderError>) => void
): (() => void) => {
  const handler = new ExchangeHandler(options, done)
  try {
    dispatcher.dispatch(dispatchOptionsOf(request, target), handler)
  } catch (error) {
    handler.onError(error instanceof Error ? error : new Error(String(error)))
  }
  return handler.abort
}

/** One request and its whole answer, as one asynchronous step. */
const exchangeAsync = (
  dispatcher: Dispatcher,
  request: HttpClientRequest.HttpClientRequest,
  target: Target,
  options: ExchangeOptions
): Effect.Effect<Answer, ProviderError> =>
  Effect.async<Answer, ProviderError>((resume) => {
    const abort = startExchange(dispatcher, request, target, options, resume)
    return Effect.sync(abort)
  })

/** One request, up to its head. */
const headAsync = (
  dispatcher: Dispatcher,
  request: HttpClientRequest.HttpClientRequest,
  target: Target,
  provider: string
): Effect.Effect<Dispatcher.ResponseData, ProviderError> =>
  Effect.async<Dispatcher.ResponseData, ProviderError>((resume) => {
    const controller = new AbortController()
    dispatcher.request(optionsOf(request, target, controller.signal), (error, response) => {
      if (error !== null) return resume(Effect.fail(requestFailure(provider, error)))
      // A body destroyed before it is read (a cut attempt) must not be an unhandled error.
      response.body.on("error", noop)
      resume(Effect.succeed(response))
    })
    return Effect.sync(() => controller.abort())
  })

const openedOf = (response: Dispatcher.ResponseData, provider: string): Opened => {
  const status = response.statusCode
  const headers = Headers.fromInput(response.headers)
  const declared = Number(headers["content-length"])
  const body = response.body
  return {
    status,
    headers,
    readBody: (maxBytes, meta) =>
      Effect.async<string, ProviderError>((resume) => {
        collect(body, declared, maxBytes, false, (failed, bytes) =>
          resume(
            failed !== undefined
              ? Effect.fail(bodyFailure(provider, failed, status, meta))
              : bytes === undefined
                ? Effect.fail(bodyTooLarge(provider, maxBytes, meta))
                : Effect.succeed(decoder.decode(bytes))
          )
        )
        return Effect.sync(() => body.destroy())
      }),
    readErrorBody: Effect.async<string | undefined>((resume) => {
      collect(body, declared, errorBodyLimit, true, (failed, bytes) =>
        resume(Effect.succeed(failed !== undefined || bytes === undefined ? undefined : decoder.decode(bytes)))
      )
      return Effect.sync(() => body.destroy())
    }),
    stream: (meta) =>
      Stream.fromAsyncIterable<Uint8Array, ProviderError>(body, (error) => bodyFailure(provider, error, status, meta))
  }
}

/** Whether the exchange gets a client span: a tracer is installed and enabled for this request. */
const traced = (fiber: Fiber.RuntimeFiber<unknown, unknown>, request: HttpClientRequest.HttpClientRequest) =>
  fiber.currentTracer !== defaultTracer &&
  fiber.getFiberRef(FiberRef.currentTracerEnabled) &&
  !fiber.getFiberRef(HttpClient.currentTracerDisabledWhen)(request)

/**
 * Runs `effect` under a client span named and annotated as `@effect/platform`'s client span: the
 * method, URL parts and request header names (values redacted as the fiber's
 * `Headers.currentRedactedNames` say), then the status and response header names.
 */
const withClientSpan = <A extends { readonly status: number; readonly headers: Headers.Headers } | undefined, R>(
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  request: HttpClientRequest.HttpClientRequest,
  url: URL,
  effect: Effect.Effect<A, ProviderError, R>
): Effect.Effect<A, ProviderError, R> => {
  const name = Context.get(fiber.currentContext, HttpClient.SpanNameGenerator)(request)
  const redacted = withSecretNames(fiber.getFiberRef(Headers.currentRedactedNames))
  return Effect.useSpan(name, { kind: "client", captureStackTrace: false }, (span: Tracer.Span) => {
    span.attribute("http.request.method", request.method)
    span.attribute("server.address", url.origin)
    if (url.port !== "") span.attribute("server.port", +url.port)
    span.attribute("url.full", url.toString())
    span.attribute("url.path", url.pathname)
    span.attribute("url.scheme", url.protocol.slice(0, -1))
    const query = url.search.slice(1)
    if (query !== "") span.attribute("url.query", query)
    const requestHeaders = Headers.redact(request.headers, redacted)
    for (const header in requestHeaders) {
      span.attribute(`http.request.header.${header}`, String(requestHeaders[header]))
    }
    return Effect.map(effect, (answer) => {
      // A cut exchange (its deadline came first) has no answer to describe.
      if (answer === undefined) return answer
      span.attribute("http.response.status_code", answer.status)
      const responseHeaders = Headers.redact(answer.headers, redacted)
      for (const header in responseHeaders) {
        span.attribute(`http.response.header.${header}`, String(responseHeaders[header]))
      }
      return answer
    })
  })
}

/**
 * The direct transport over `dispatcher` (see the module's description).
 *
 * @internal
 */
export const fromDispatcher = (dispatcher: Dispatcher): Transport => {
  const endpoints = new Endpoints()
  return {
    exchange: (request, options) =>
      Effect.withFiberRuntime((fiber) => {
        const target = targetOf(endpoints, request, options.provider)
        if (Either.isLeft(target)) return Effect.fail(target.left)
        const step = exchangeAsync(dispatcher, request, target.right, options)
        return traced(fiber, request) ? withClientSpan(fiber, request, target.right.url, step) : step
      }),
    exchangeUntil: (request, options, until) =>
      Effect.withFiberRuntime((fiber) => {
        const target = targetOf(endpoints, request, options.provider)
        if (Either.isLeft(target)) return Effect.fail(target.left)
        const step = abortableUntil<Answer, ProviderError>(until, (done) =>
          startExchange(dispatcher, request, target.right, options, done)
        )
        return traced(fiber, request) ? withClientSpan(fiber, request, target.right.url, step) : step
      }),
    open: (request, provider) =>
      Effect.withFiberRuntime((fiber) => {
        const target = targetOf(endpoints, request, provider)
        if (Either.isLeft(target)) return Effect.fail(target.left)
        const head = Effect.uninterruptibleMask((restore) =>
          Effect.tap(restore(headAsync(dispatcher, request, target.right, provider)), (response) =>
            Effect.addFinalizer(() => Effect.sync(() => response.body.destroy()))
          )
        )
        const step = Effect.map(head, (response) => openedOf(response, provider))
        return traced(fiber, request) ? withClientSpan(fiber, request, target.right.url, step) : step
      })
  }
}
