/**
 * A tracer that keeps every span with its name and attributes (what an exporter would receive of
 * them), for tests that check which spans a call made and what they carry.
 */
import { type Context, type Exit, type Option, Tracer } from "effect"

/** A span that keeps its name and attributes. */
export class KeptSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = true
  readonly traceId = "trace"
  status: Tracer.SpanStatus
  readonly attributes = new Map<string, unknown>()
  readonly links: Array<Tracer.SpanLink> = []
  constructor(
    readonly name: string,
    readonly spanId: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind
  ) {
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(key: string, value: unknown): void {
    this.attributes.set(key, value)
  }
  event(): void {}
  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links.push(...links)
  }
}

/** A tracer and the spans it made, in order. */
export const keepingTracer = (): { readonly spans: Array<KeptSpan>; readonly tracer: Tracer.Tracer } => {
  const spans: Array<KeptSpan> = []
  const tracer = Tracer.make({
    span: (name, parent, context, _links, startTime, kind) => {
      const span = new KeptSpan(name, `span-${spans.length + 1}`, parent, context, startTime, kind)
      spans.push(span)
      return span
    },
    context: (f) => f()
  })
  return { spans, tracer }
}
