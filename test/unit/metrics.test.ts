import { describe, expect, it } from "vitest";
import { Counter, createMetrics, Gauge, Histogram } from "../../src/observability/metrics.js";

/**
 * A strict reader of the Prometheus text exposition format 0.0.4: every line is a HELP or TYPE
 * comment or a sample `name{labels} value`; label values are double-quoted with `\\`, `\"` and
 * `\n` as the only escapes. Returns the samples with their labels unescaped.
 */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseExposition(text: string): { help: Map<string, string>; type: Map<string, string>; samples: Sample[] } {
  expect(text.endsWith("\n")).toBe(true);
  const help = new Map<string, string>();
  const type = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.slice(0, -1).split("\n")) {
    let m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (m) {
      expect(help.has(m[1]!)).toBe(false);
      help.set(m[1]!, m[2]!);
      continue;
    }
    m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      expect(type.has(m[1]!)).toBe(false);
      type.set(m[1]!, m[2]!);
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const body = m[2].slice(1, -1);
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)/gy;
      let end = 0;
      for (let lm = re.exec(body); lm; lm = re.exec(body)) {
        labels[lm[1]!] = lm[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
        end = re.lastIndex;
        if (lm[3] === "") break;
      }
      if (end !== body.length) throw new Error(`bad label set: ${m[2]}`);
    }
    const raw = m[3]!;
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : raw === "NaN" ? NaN : Number(raw);
    if (raw !== "NaN") expect(Number.isNaN(value)).toBe(false);
    samples.push({ name: m[1]!, labels, value });
  }
  return { help, type, samples };
}

function render(...metrics: { name: string; help: string; type: string; lines(): string[] }[]): string {
  const out: string[] = [];
  for (const m of metrics) out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`, ...m.lines());
  return `${out.join("\n")}\n`;
}

describe("metrics registry rendering", () => {
  it("renders every metric with HELP and TYPE lines before its samples", () => {
    const metrics = createMetrics();
    const text = metrics.render();
    const { help, type, samples } = parseExposition(text);
    expect(type.get("http_requests_total")).toBe("counter");
    expect(type.get("http_request_duration_seconds")).toBe("histogram");
    expect(type.get("agent_runs_total")).toBe("counter");
    expect(type.get("agent_active_runs")).toBe("gauge");
    expect(type.get("agent_run_duration_seconds")).toBe("histogram");
    expect(type.get("agent_tokens_total")).toBe("counter");
    expect(type.get("agent_database_up")).toBe("gauge");
    for (const name of type.keys()) expect(help.get(name)?.length).toBeGreaterThan(0);
    // Registered up front: the gauges and the token kinds show from the first scrape.
    expect(samples).toContainEqual({ name: "agent_active_runs", labels: {}, value: 0 });
    expect(samples).toContainEqual({ name: "agent_database_up", labels: {}, value: 1 });
    expect(samples).toContainEqual({ name: "agent_tokens_total", labels: { kind: "input" }, value: 0 });
    expect(samples).toContainEqual({ name: "agent_tokens_total", labels: { kind: "output" }, value: 0 });
    // HELP and TYPE of a metric come before any of its samples.
    const lines = text.split("\n");
    const typeLine = lines.indexOf("# TYPE agent_active_runs gauge");
    expect(lines.indexOf("# HELP agent_active_runs Agent runs in progress.")).toBe(typeLine - 1);
    expect(lines.findIndex((l) => l.startsWith("agent_active_runs "))).toBe(typeLine + 1);
  });

  it("renders counters with labels and accumulated values", () => {
    const metrics = createMetrics();
    metrics.httpRequests.inc({ method: "GET", route: "/health", status: "200" });
    metrics.httpRequests.inc({ method: "GET", route: "/health", status: "200" });
    metrics.httpRequests.inc({ method: "POST", route: "/chat", status: "401" }, 3);
    metrics.tokens.inc({ kind: "input" }, 12);
    const { samples } = parseExposition(metrics.render());
    expect(samples.filter((s) => s.name === "http_requests_total")).toEqual([
      { name: "http_requests_total", labels: { method: "GET", route: "/health", status: "200" }, value: 2 },
      { name: "http_requests_total", labels: { method: "POST", route: "/chat", status: "401" }, value: 3 },
    ]);
    expect(samples).toContainEqual({ name: "agent_tokens_total", labels: { kind: "input" }, value: 12 });
  });

  it("treats label sets as equal regardless of key order", () => {
    const c = new Counter("c_total", "c");
    c.inc({ a: "1", b: "2" });
    c.inc({ b: "2", a: "1" });
    expect(c.get({ b: "2", a: "1" })).toBe(2);
    expect(c.lines()).toHaveLength(1);
  });

  it("renders a gauge after set, inc and dec", () => {
    const g = new Gauge("g", "A gauge.");
    g.set(5);
    g.inc();
    g.dec({}, 3);
    g.set(-1.5, { shard: "b" });
    const { samples, type } = parseExposition(render(g));
    expect(type.get("g")).toBe("gauge");
    expect(samples).toEqual([
      { name: "g", labels: {}, value: 3 },
      { name: "g", labels: { shard: "b" }, value: -1.5 },
    ]);
  });

  it("renders histogram buckets cumulative, ending with +Inf, then _sum and _count", () => {
    const h = new Histogram("latency_seconds", "Latency.", [0.1, 0.5, 1]);
    for (const v of [0.05, 0.1, 0.3, 0.7, 2, 5]) h.observe(v, { route: "/x" });
    const { samples, type } = parseExposition(render(h));
    expect(type.get("latency_seconds")).toBe("histogram");
    expect(samples).toEqual([
      { name: "latency_seconds_bucket", labels: { route: "/x", le: "0.1" }, value: 2 },
      { name: "latency_seconds_bucket", labels: { route: "/x", le: "0.5" }, value: 3 },
      { name: "latency_seconds_bucket", labels: { route: "/x", le: "1" }, value: 4 },
      { name: "latency_seconds_bucket", labels: { route: "/x", le: "+Inf" }, value: 6 },
      { name: "latency_seconds_sum", labels: { route: "/x" }, value: 0.05 + 0.1 + 0.3 + 0.7 + 2 + 5 },
      { name: "latency_seconds_count", labels: { route: "/x" }, value: 6 },
    ]);
    const buckets = samples.filter((s) => s.name.endsWith("_bucket")).map((s) => s.value);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!).toBeGreaterThanOrEqual(buckets[i - 1]!);
    expect(h.count({ route: "/x" })).toBe(6);
  });

  it("renders a histogram without labels with only the le label on buckets", () => {
    const h = new Histogram("h", "H.", [1]);
    h.observe(0.5);
    expect(h.lines()).toEqual(['h_bucket{le="1"} 1', 'h_bucket{le="+Inf"} 1', "h_sum 0.5", "h_count 1"]);
  });

  it("escapes \", \\ and newline in label values", () => {
    const c = new Counter("esc_total", "Escapes.");
    const nasty = 'a"b\\c\nd';
    c.inc({ v: nasty });
    const [line] = c.lines();
    expect(line).toBe('esc_total{v="a\\"b\\\\c\\nd"} 1');
    expect(line).not.toContain("\n");
    const { samples } = parseExposition(render(c));
    expect(samples).toEqual([{ name: "esc_total", labels: { v: nasty }, value: 1 }]);
  });

  it("escapes a backslash before n so it does not read as a newline", () => {
    const c = new Counter("bs_total", "Backslash.");
    c.inc({ v: "\\n" });
    expect(c.lines()).toEqual(['bs_total{v="\\\\n"} 1']);
    expect(parseExposition(render(c)).samples[0]!.labels.v).toBe("\\n");
  });

  it("writes special float values as Prometheus spells them", () => {
    const g = new Gauge("f", "F.");
    g.set(Infinity, { k: "pos" });
    g.set(-Infinity, { k: "neg" });
    g.set(NaN, { k: "nan" });
    expect(g.lines()).toEqual(['f{k="pos"} +Inf', 'f{k="neg"} -Inf', 'f{k="nan"} NaN']);
  });
});
