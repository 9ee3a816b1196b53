/**
 * A tracer that keeps every span it makes with what an exporter would receive of it (name,
 * attributes, events, links, status), for tests of which spans a call made and what they carry.
 *
 * @since 0.2.0
 */
import { Cause, type Context, Exit, type Option, Tracer } from "effect"

/**
 * A span that keeps what an exporter would receive of it.
 *
 * @since 0.2.0
 * @category Models
 */
export class RecordedSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = true
  readonly traceId: string
  status: Tracer.SpanStatus
  readonly attributes = new Map<string, unknown>()
  readonly links: Array<Tracer.SpanLink>
  readonly events: Array<{ readonly name: string; readonly attributes: Record<string, unknown> }> = []
  constructor(
    readonly name: string,
    readonly spanId: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: Iterable<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind
  ) {
    this.traceId = parent._tag === "Some" ? parent.value.traceId : `trace-${spanId}`
    this.status = { _tag: "Started", startTime }
    this.links = [...links]
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }
  event(name: string, _startTime: bigint, attributes?: Record<string, unknown>): void {
    this.events.push({ name, attributes: attributes ?? {} })
  }
  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links.push(...links)
  }
  /** The parent's span id, if it has a parent. */
  get parentId(): string | undefined {
    return this.parent._tag === "Some" ? this.parent.value.spanId : undefined
  }
  /** How the span ended, if it did. */
  get exit(): Exit.Exit<unknown, unknown> | undefined {
    return this.status._tag === "Ended" ? this.status.exit : undefined
  }
  /**
   * Everything an exporter could send for this span, as text (OpenTelemetry records a failure's
   * pretty cause); each attribute value through `attributeValue` (default: as it is).
   */
  dump(attributeValue: (value: unknown) => unknown = (value) => value): string {
    const exit = this.exit
    return JSON.stringify({
      name: this.name,
      attributes: [...this.attributes].map(([key, value]) => [key, attributeValue(value)]),
      events: this.events,
      links: this.links.map((link) => link.attributes),
      failure:
        exit !== undefined && Exit.isFailure(exit) ? Cause.pretty(exit.cause, { renderErrorCause: true }) : undefined
    })
  }
}

/**
 * A tracer and the spans it made, in order (span ids `span-1`, `span-2`, …).
 *
 * @since 0.2.0
 * @category Constructors
 */
export const make = (): { readonly spans: Array<RecordedSpan>; readonly tracer: Tracer.Tracer } => {
  const spans: Array<RecordedSpan> = []
  let seq = 0
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const span = new RecordedSpan(name, `span-${++seq}`, parent, context, links, startTime, kind)
      spans.push(span)
      return span
    },
    context: (f) => f()
  })
  return { spans, tracer }
}
