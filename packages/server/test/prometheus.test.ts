/**
 * The Prometheus text renderer over real Effect metrics (names under `test.` in this process's
 * registry), read back by the strict reader of `prometheusText.ts`; and that reader refusing what
 * breaks the format.
 */
import { Effect, Metric, MetricBoundaries } from "effect"
import { describe, expect, it } from "vitest"
import * as Prometheus from "../src/internal/prometheus.js"
import { parseExposition, total } from "./prometheusText.js"

const renderOf = (prefix: string) =>
  Prometheus.render(Metric.unsafeSnapshot().filter((pair) => pair.metricKey.name.startsWith(prefix)))

describe("the Prometheus renderer", () => {
  it("escapes label values (backslash, quote, line feed) and HELP text; sanitizes metric and label names", () => {
    const weird = 'a\\b"c\nd'
    const counter = Metric.counter("test.escape.requests", {
      description: 'Requests "seen"\\ here\nand there',
      incremental: true
    })
    Effect.runSync(Metric.incrementBy(Metric.tagged(counter, "weird.label-name", weird), 2))
    Effect.runSync(Metric.increment(Metric.tagged(counter, "weird.label-name", "plain")))
    const text = renderOf("test.escape.")
    expect(text).toBe(
      [
        '# HELP test_escape_requests_total Requests "seen"\\\\ here\\nand there',
        "# TYPE test_escape_requests_total counter",
        // the snapshot's order of series is the registry's; both lines, in either order
        ...text.split("\n").filter((l) => l.startsWith("test_escape_requests_total{")),
        ""
      ].join("\n")
    )
    expect(text).toContain('test_escape_requests_total{weird_label_name="a\\\\b\\"c\\nd"} 2\n')
    expect(text).toContain('test_escape_requests_total{weird_label_name="plain"} 1\n')
    const families = parseExposition(text)
    expect(
      total(families, "test_escape_requests_total", "test_escape_requests_total", { weird_label_name: weird })
    ).toBe(2)
    expect(families.get("test_escape_requests_total")?.help).toBe('Requests "seen"\\ here\nand there')
  })

  it("a histogram: cumulative buckets up to +Inf, _sum and _count", () => {
    const histogram = Metric.histogram(
      "test.hist.latency_ms",
      MetricBoundaries.fromIterable([1, 5, 10]),
      "Latency (ms)"
    )
    for (const value of [0.5, 3, 3, 7, 100]) Effect.runSync(Metric.update(histogram, value))
    expect(renderOf("test.hist.")).toBe(
      [
        "# HELP test_hist_latency_ms Latency (ms)",
        "# TYPE test_hist_latency_ms histogram",
        'test_hist_latency_ms_bucket{le="1"} 1',
        'test_hist_latency_ms_bucket{le="5"} 3',
        'test_hist_latency_ms_bucket{le="10"} 4',
        'test_hist_latency_ms_bucket{le="+Inf"} 5',
        "test_hist_latency_ms_sum 113.5",
        "test_hist_latency_ms_count 5",
        ""
      ].join("\n")
    )
  })

  it("gauges, a counter that may go down, frequencies and summaries; a clashing kind is left out", () => {
    Effect.runSync(Metric.set(Metric.gauge("test.kinds.breaker_state"), 2))
    Effect.runSync(Metric.incrementBy(Metric.counter("test.kinds.level"), -3))
    const frequency = Metric.frequency("test.kinds.words", { description: "Words" })
    for (const word of ["a", "b", "a"]) Effect.runSync(Metric.update(frequency, word))
    const summary = Metric.summary({
      name: "test.kinds.size",
      maxAge: "1 hour",
      maxSize: 10,
      error: 0.01,
      quantiles: [0.5, 1]
    })
    for (const value of [1, 2, 3]) Effect.runSync(Metric.update(summary, value))
    // Same family name as the frequency's (`test_kinds_words_total`), but a gauge: left out.
    Effect.runSync(Metric.set(Metric.gauge("test.kinds.words_total"), 9))
    const text = renderOf("test.kinds.")
    const families = parseExposition(text)
    expect([...families].map(([name, f]) => `${name} ${f.type}`)).toEqual([
      "test_kinds_breaker_state gauge",
      "test_kinds_level gauge",
      "test_kinds_size summary",
      "test_kinds_words_total counter"
    ])
    expect(text).toContain("test_kinds_breaker_state 2\n")
    expect(text).toContain("test_kinds_level -3\n")
    expect(text).toContain('test_kinds_words_total{key="a"} 2\n')
    expect(text).toContain('test_kinds_words_total{key="b"} 1\n')
    expect(text).not.toContain(" 9\n")
    expect(total(families, "test_kinds_size", "test_kinds_size_count")).toBe(3)
    expect(total(families, "test_kinds_size", "test_kinds_size_sum")).toBe(6)
    expect(total(families, "test_kinds_size", "test_kinds_size", { quantile: "1" })).toBe(3)
  })

  it("sanitizes names to Prometheus' rules", () => {
    expect(Prometheus.metricName("modelgate.call.duration_ms")).toBe("modelgate_call_duration_ms")
    expect(Prometheus.metricName("9lives/x")).toBe("_9lives_x")
    expect(Prometheus.labelName("gen_ai.token.type")).toBe("gen_ai_token_type")
    expect(Prometheus.labelName("__name__")).toBe("x__name__")
    expect(Prometheus.sampleValue(Number.NaN)).toBe("NaN")
    expect(Prometheus.sampleValue(12n)).toBe("12")
  })
})

describe("the strict exposition reader (what the server tests check with)", () => {
  const refuses = (text: string) => expect(() => parseExposition(text)).toThrow()

  it("refuses what breaks the format", () => {
    refuses('# TYPE x counter\nx{a="unterminated} 1\n')
    refuses('# TYPE x counter\nx{a="bad \\t escape"} 1\n')
    refuses("# TYPE x counter\nx 1\n# TYPE x counter\n")
    refuses("# TYPE x counter\ny 1\n")
    refuses("# TYPE x counter\nx one\n")
    refuses("# TYPE x counter\nx 1")
    refuses('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n')
    refuses('# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n')
    refuses('# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n')
    refuses("# TYPE x counter\nx 1\nx 2\n")
  })

  it("reads a valid exposition", () => {
    const families = parseExposition(
      '# HELP h A histogram\n# TYPE h histogram\nh_bucket{a="x",le="1"} 1\nh_bucket{a="x",le="+Inf"} 2\nh_sum{a="x"} 3.5\nh_count{a="x"} 2\n'
    )
    expect(families.get("h")?.help).toBe("A histogram")
    expect(total(families, "h", "h_bucket", { le: "+Inf" })).toBe(2)
  })
})
