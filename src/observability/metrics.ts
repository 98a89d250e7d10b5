/**
 * A small Prometheus registry (text exposition 0.0.4). Labels are fixed, closed sets chosen by
 * the code (route templates, statuses, kinds): never ids, principals or client input.
 */

type Labels = Readonly<Record<string, string>>;

interface Series<T> {
  labels: Labels;
  value: T;
}

abstract class Metric<T> {
  protected readonly series = new Map<string, Series<T>>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge" | "histogram",
  ) {}
  protected entry(labels: Labels, init: () => T): Series<T> {
    const key = labelKey(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, value: init() };
      this.series.set(key, s);
    }
    return s;
  }
  abstract lines(): string[];
}

export class Counter extends Metric<number> {
  constructor(name: string, help: string) {
    super(name, help, "counter");
  }
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value += by;
  }
  get(labels: Labels = {}): number {
    return this.series.get(labelKey(labels))?.value ?? 0;
  }
  lines(): string[] {
    return [...this.series.values()].map((s) => `${this.name}${fmtLabels(s.labels)} ${fmtNum(s.value)}`);
  }
}

export class Gauge extends Metric<number> {
  constructor(name: string, help: string) {
    super(name, help, "gauge");
  }
  set(value: number, labels: Labels = {}): void {
    this.entry(labels, () => 0).value = value;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value += by;
  }
  dec(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value -= by;
  }
  get(labels: Labels = {}): number {
    return this.series.get(labelKey(labels))?.value ?? 0;
  }
  lines(): string[] {
    return [...this.series.values()].map((s) => `${this.name}${fmtLabels(s.labels)} ${fmtNum(s.value)}`);
  }
}

interface HistogramValue {
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric<HistogramValue> {
  constructor(
    name: string,
    help: string,
    private readonly buckets: readonly number[],
  ) {
    super(name, help, "histogram");
  }
  observe(value: number, labels: Labels = {}): void {
    const s = this.entry(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 })).value;
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) s.counts[i]!++;
    s.sum += value;
    s.count++;
  }
  count(labels: Labels = {}): number {
    return this.series.get(labelKey(labels))?.value.count ?? 0;
  }
  lines(): string[] {
    const out: string[] = [];
    for (const { labels, value } of this.series.values()) {
      this.buckets.forEach((b, i) =>
        out.push(`${this.name}_bucket${fmtLabels({ ...labels, le: fmtNum(b) })} ${value.counts[i]}`),
      );
      out.push(`${this.name}_bucket${fmtLabels({ ...labels, le: "+Inf" })} ${value.count}`);
      out.push(`${this.name}_sum${fmtLabels(labels)} ${fmtNum(value.sum)}`);
      out.push(`${this.name}_count${fmtLabels(labels)} ${value.count}`);
    }
    return out;
  }
}

/** Series key, independent of label order (sorting only when the caller's order is not sorted). */
function labelKey(labels: Labels): string {
  let keys: string[] = [];
  let sorted = true;
  for (const k in labels) {
    if (keys.length > 0 && k < keys[keys.length - 1]!) sorted = false;
    keys.push(k);
  }
  if (!sorted) keys = keys.sort();
  let key = "";
  for (const k of keys) key += `${k}=${labels[k]}\u0000`;
  return key;
}

function fmtLabels(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length === 0) return "";
  return `{${keys.map((k) => `${k}="${escapeLabel(labels[k]!)}"`).join(",")}}`;
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function fmtNum(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  return String(n);
}

/** Trace spans dropped before export (issue 15); the runtime's exporter increments it (export-health.ts). */
export const SPANS_DROPPED_METRIC = "agent_trace_spans_dropped_total";

/** The counter by reason (`queue_full`, `export_failed`: a closed set), both shown from the first scrape. */
export function createSpanDropCounter(): Counter {
  const counter = new Counter(SPANS_DROPPED_METRIC, "Trace spans dropped before reaching the receiver, by reason (queue_full, export_failed).");
  for (const reason of ["queue_full", "export_failed"]) counter.inc({ reason }, 0);
  return counter;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Every metric of spec 6.2 (and the dropped trace spans), registered up front so /metrics shows them from the first scrape. */
export function createMetrics() {
  const m = {
    httpRequests: new Counter("http_requests_total", "HTTP requests by method, route template and status."),
    httpDuration: new Histogram("http_request_duration_seconds", "HTTP request duration; a streamed /chat counts until its last event.", LATENCY_BUCKETS),
    runs: new Counter("agent_runs_total", "Agent runs by final status."),
    activeRuns: new Gauge("agent_active_runs", "Agent runs in progress."),
    runDuration: new Histogram("agent_run_duration_seconds", "Agent run duration.", LATENCY_BUCKETS),
    tokens: new Counter("agent_tokens_total", "Model tokens by kind."),
    databaseUp: new Gauge("agent_database_up", "1 while the database answered at last contact, 0 while known down."),
    approvals: new Counter("agent_approvals_total", "Approvals by event."),
    tokenExchanges: new Counter("agent_token_exchanges_total", "Token exchanges by api and outcome."),
    tokenExchangeDuration: new Histogram("agent_token_exchange_duration_seconds", "Token exchanges sent to the issuer, by api.", LATENCY_BUCKETS),
    spansDropped: createSpanDropCounter(),
  };
  m.activeRuns.set(0);
  m.databaseUp.set(1);
  for (const kind of ["input", "output"]) m.tokens.inc({ kind }, 0);
  return {
    ...m,
    render(): string {
      const out: string[] = [];
      for (const metric of Object.values(m)) {
        out.push(`# HELP ${metric.name} ${metric.help}`, `# TYPE ${metric.name} ${metric.type}`, ...metric.lines());
      }
      return `${out.join("\n")}\n`;
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
