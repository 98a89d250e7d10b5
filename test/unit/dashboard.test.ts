/**
 * dashboards/agent-service.json names only metrics the service exposes: every metric in every
 * panel query and template variable is in the /metrics output of an app (a histogram's `_bucket`,
 * `_sum` and `_count` series count as the histogram), and every metric of spec 6.2 has a panel.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { makeApp } from "../helpers.js";

const dashboard = JSON.parse(readFileSync(new URL("../../dashboards/agent-service.json", import.meta.url), "utf8")) as {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
  templating: { list: { type: string; query?: string | { query: string } }[] };
};

/** PromQL words that are not metric names: functions, aggregations, keywords. */
const PROMQL_WORDS = new Set([
  "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "group", "count_values",
  "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
  "rate", "irate", "increase", "delta", "idelta", "deriv", "histogram_quantile", "clamp_min", "clamp_max", "clamp",
  "abs", "ceil", "floor", "round", "sort", "sort_desc", "time", "vector", "scalar", "absent", "label_replace", "label_join",
  "avg_over_time", "max_over_time", "min_over_time", "sum_over_time", "count_over_time", "last_over_time", "label_values",
]);

/** The metric names a PromQL expression (or a Grafana label_values query) reads. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*\w+\s*\)/g, " $1 ") // label_values(metric, label)
    .replace(/"(?:[^"\\]|\\.)*"/g, " ") // label values and other strings
    .replace(/\{[^}]*\}/g, " ") // label matchers
    .replace(/\[[^\]]*\]/g, " ") // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ") // label lists
    .replace(/\$\w+/g, " ");
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w.]*\s*\()/g)) {
    const word = m[1]!;
    if (!PROMQL_WORDS.has(word) && !/^\d/.test(word) && !/^e\d+$/.test(word)) names.add(word);
  }
  return [...names];
}

function dashboardMetrics(): Set<string> {
  const names = new Set<string>();
  for (const panel of dashboard.panels) for (const t of panel.targets ?? []) for (const n of metricNames(t.expr)) names.add(n);
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === "string" ? v.query : v.query?.query;
    if (v.type === "query" && q) for (const n of metricNames(q)) names.add(n);
  }
  return names;
}

const SPEC_6_2 = [
  "http_requests_total",
  "http_request_duration_seconds",
  "agent_runs_total",
  "agent_active_runs",
  "agent_run_duration_seconds",
  "agent_tokens_total",
  "agent_database_up",
  "agent_approvals_total",
  "agent_token_exchanges_total",
  "agent_token_exchange_duration_seconds",
];

describe("the Grafana dashboard", () => {
  it("reads metric names out of PromQL", () => {
    expect(metricNames('histogram_quantile(0.95, sum by (le, route) (rate(http_request_duration_seconds_bucket{job=~"$job", status="5.."}[$__rate_interval])))')).toEqual([
      "http_request_duration_seconds_bucket",
    ]);
    expect(metricNames("sum(rate(a_total[5m])) / clamp_min(sum(rate(b_total[5m])), 1e-9)").sort()).toEqual(["a_total", "b_total"]);
    expect(metricNames("label_values(agent_runs_total, job)")).toEqual(["agent_runs_total"]);
  });

  it("names only metrics the app's /metrics exposes", async () => {
    const app = await makeApp();
    try {
      const text = await (await app.fetch(new Request("http://test/metrics"))).text();
      const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
      const exposed = (name: string) => {
        if (types.has(name)) return true;
        const m = /^(.*)_(bucket|sum|count)$/.exec(name);
        return m !== null && types.get(m[1]!) === "histogram";
      };
      const used = [...dashboardMetrics()];
      expect(used.length).toBeGreaterThanOrEqual(SPEC_6_2.length);
      expect(used.filter((n) => !exposed(n))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("has a panel for every metric of spec 6.2 and for the trace spans export dropped", () => {
    const used = [...dashboardMetrics()].map((n) => n.replace(/_(bucket|sum|count)$/, ""));
    expect([...SPEC_6_2, "agent_trace_spans_dropped_total"].filter((m) => !used.includes(m))).toEqual([]);
  });

  it("every panel has a query and a data source variable", () => {
    for (const panel of dashboard.panels.filter((p) => p.type !== "row")) expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    expect(dashboard.templating.list.some((v) => v.type === "datasource")).toBe(true);
  });
});
