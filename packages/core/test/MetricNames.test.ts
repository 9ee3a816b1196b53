import { assert, describe, it } from "@effect/vitest"
import * as StoreHealth from "@modelgate/core/StoreHealth"
import * as Telemetry from "@modelgate/core/Telemetry"
import { Effect, Metric } from "effect"
import { metrics as budgetMetrics } from "../src/internal/budgetReservation.js"
import { metrics as healthMetrics } from "../src/internal/healthRecord.js"
import { metrics as routerMetrics } from "../src/internal/router/metrics.js"
import { cacheMetrics, canaryMetrics, qualityMetrics, shadowMetrics } from "../src/internal/metrics.js"

const probeTag = "test.metric_probe"

/** Updates `metric` under a probe label and reads its name back from the metric registry. */
const nameOf = <Type, Out>(label: string, metric: Metric.Metric<Type, number, Out>) =>
  Effect.gen(function* () {
    yield* Metric.update(Metric.tagged(metric, probeTag, label), 1)
    const pair = (yield* Metric.snapshot).find((p) =>
      p.metricKey.tags.some((t) => t.key === probeTag && t.value === label)
    )
    return pair?.metricKey.name
  })

describe("metric names", () => {
  it.effect("Telemetry, Health and Budgets metrics follow one scheme: modelgate.<area>.<name>[_unit]", () =>
    Effect.gen(function* () {
      const t = Telemetry.metrics
      const h = healthMetrics
      const b = budgetMetrics
      const r = routerMetrics
      const s = StoreHealth.metrics
      const names = {
        "Telemetry.calls": yield* nameOf("Telemetry.calls", t.calls),
        "Telemetry.callLatency": yield* nameOf("Telemetry.callLatency", t.callLatency),
        "Telemetry.attempts": yield* nameOf("Telemetry.attempts", t.attempts),
        "Telemetry.attemptLatency": yield* nameOf("Telemetry.attemptLatency", t.attemptLatency),
        "Telemetry.ttft": yield* nameOf("Telemetry.ttft", t.ttft),
        "Telemetry.tokens": yield* nameOf("Telemetry.tokens", t.tokens),
        "Telemetry.cost": yield* nameOf("Telemetry.cost", t.cost),
        "Telemetry.retries": yield* nameOf("Telemetry.retries", t.retries),
        "Telemetry.fallbacks": yield* nameOf("Telemetry.fallbacks", t.fallbacks),
        "Telemetry.degraded": yield* nameOf("Telemetry.degraded", t.degraded),
        "Telemetry.budgetRejections": yield* nameOf("Telemetry.budgetRejections", t.budgetRejections),
        "Telemetry.permitWait": yield* nameOf("Telemetry.permitWait", t.permitWait),
        "Telemetry.canaryAssignments": yield* nameOf("Telemetry.canaryAssignments", t.canaryAssignments),
        "Telemetry.tenantSpendEstimated": yield* nameOf("Telemetry.tenantSpendEstimated", t.tenantSpendEstimated),
        "Telemetry.tenantSpendActual": yield* nameOf("Telemetry.tenantSpendActual", t.tenantSpendActual),
        "Telemetry.fallbackRoutes": yield* nameOf("Telemetry.fallbackRoutes", t.fallbackRoutes),
        "Telemetry.segmentOutcomes": yield* nameOf("Telemetry.segmentOutcomes", t.segmentOutcomes),
        "Telemetry.toolFailures": yield* nameOf("Telemetry.toolFailures", t.toolFailures),
        "CanaryController.changes": yield* nameOf("CanaryController.changes", canaryMetrics.changes),
        "QualitySignals.standing": yield* nameOf("QualitySignals.standing", qualityMetrics.standing),
        "Shadow.calls": yield* nameOf("Shadow.calls", shadowMetrics.calls),
        "Shadow.dropped": yield* nameOf("Shadow.dropped", shadowMetrics.dropped),
        "ResponseCache.lookups": yield* nameOf("ResponseCache.lookups", cacheMetrics.lookups),
        "ResponseCache.bytes": yield* nameOf("ResponseCache.bytes", cacheMetrics.bytes),
        "Budgets.settleFailures": yield* nameOf("Budgets.settleFailures", b.settleFailures),
        "Budgets.overspend": yield* nameOf("Budgets.overspend", b.overspend),
        "Health.breakerState": yield* nameOf("Health.breakerState", h.breakerState),
        "Health.breakerTransitions": yield* nameOf("Health.breakerTransitions", h.breakerTransitions),
        "Health.breakerStoreFailures": yield* nameOf("Health.breakerStoreFailures", h.breakerStoreFailures),
        "Health.retryBudgetRejections": yield* nameOf("Health.retryBudgetRejections", h.retryBudgetRejections),
        "Router.targetSwitches": yield* nameOf("Router.targetSwitches", r.targetSwitches),
        "Router.escalations": yield* nameOf("Router.escalations", r.escalations),
        "StoreHealth.errors": yield* nameOf("StoreHealth.errors", s.errors),
        "StoreHealth.healthy": yield* nameOf("StoreHealth.healthy", s.healthy)
      }
      // every exported metric is listed here (a new one must be named and added)
      assert.deepStrictEqual(
        Object.keys(names).sort(),
        [
          ...Object.keys(t).map((k) => `Telemetry.${k}`),
          ...Object.keys(h).map((k) => `Health.${k}`),
          ...Object.keys(b).map((k) => `Budgets.${k}`),
          ...Object.keys(r).map((k) => `Router.${k}`),
          ...Object.keys(s).map((k) => `StoreHealth.${k}`),
          ...Object.keys(canaryMetrics).map((k) => `CanaryController.${k}`),
          ...Object.keys(qualityMetrics).map((k) => `QualitySignals.${k}`),
          ...Object.keys(shadowMetrics).map((k) => `Shadow.${k}`),
          ...Object.keys(cacheMetrics).map((k) => `ResponseCache.${k}`)
        ].sort()
      )
      assert.deepStrictEqual(names, {
        "Telemetry.calls": "modelgate.calls",
        "Telemetry.callLatency": "modelgate.call.duration_ms",
        "Telemetry.attempts": "modelgate.attempts",
        "Telemetry.attemptLatency": "modelgate.attempt.duration_ms",
        "Telemetry.ttft": "modelgate.attempt.ttft_ms",
        "Telemetry.tokens": "modelgate.tokens",
        "Telemetry.cost": "modelgate.cost_usd",
        "Telemetry.retries": "modelgate.retries",
        "Telemetry.fallbacks": "modelgate.fallbacks",
        "Telemetry.degraded": "modelgate.degraded",
        "Telemetry.budgetRejections": "modelgate.budget.rejections",
        "Telemetry.permitWait": "modelgate.permit.wait_ms",
        "Telemetry.canaryAssignments": "modelgate.canary.assignments",
        "Telemetry.tenantSpendEstimated": "modelgate.spend.estimated_units",
        "Telemetry.tenantSpendActual": "modelgate.spend.actual_units",
        "Telemetry.fallbackRoutes": "modelgate.fallback.routes",
        "Telemetry.segmentOutcomes": "modelgate.segment.outcomes",
        "Telemetry.toolFailures": "modelgate.tool.failures",
        "CanaryController.changes": "modelgate.canary.changes",
        "QualitySignals.standing": "modelgate.quality.standing_changes",
        "Shadow.calls": "modelgate.shadow.calls",
        "Shadow.dropped": "modelgate.shadow.dropped",
        "ResponseCache.lookups": "modelgate.cache.lookups",
        "ResponseCache.bytes": "modelgate.cache.bytes",
        "Budgets.settleFailures": "modelgate.budget.settle_failures",
        "Budgets.overspend": "modelgate.budget.overspend_usd",
        "Health.breakerState": "modelgate.breaker.state",
        "Health.breakerTransitions": "modelgate.breaker.transitions",
        "Health.breakerStoreFailures": "modelgate.breaker.store_failures",
        "Health.retryBudgetRejections": "modelgate.retry_budget.rejections",
        "Router.targetSwitches": "modelgate.routing.target_switches",
        // An explicit exception to the <area>.<name> scheme: issue 14 names this metric
        // `modelgate.escalations{workflow,from_tier,to_tier}` (the routing spec's name), so it
        // stands at the top like `modelgate.calls` rather than as `modelgate.routing.escalations`.
        "Router.escalations": "modelgate.escalations",
        "StoreHealth.errors": "modelgate.store.errors",
        "StoreHealth.healthy": "modelgate.store.healthy"
      })
      for (const name of Object.values(names)) {
        assert.match(name ?? "", /^modelgate(\.[a-z]+(_[a-z]+)*){1,2}$/, name)
        assert.notMatch(name ?? "", /_total$/, name)
      }
    })
  )
})
