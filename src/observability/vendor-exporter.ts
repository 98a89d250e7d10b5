/**
 * The tracing vendor's exporter (TRACEVENDOR_API_KEY set; wire format in vendor-runs.ts and the
 * README): spans become run trees POSTed as `{"post": [runs]}` to `<endpoint>/runs/batch` with
 * `x-api-key`, the project as each run's `session_name`. Web-standard (fetch only), so the Node
 * entry puts it behind the SDK's batch processor and the worker flushes it in `ctx.waitUntil`.
 *
 * A run's `dotted_order` holds every ancestor's, and children end before their parents, so a span
 * waits until its parent's place is known: a span without a local parent (the request's root, or
 * one continued from another process) is placed at once, and placing a span places the children
 * that waited for it. Places of recent spans are remembered (bounded), so a run that outlives its
 * request (a resumed run) still finds its parent. A span whose parent never comes is sent as a
 * root after `orphanAfterMs`. Everything held is bounded; spans beyond are dropped and counted.
 */
import { type CaptureFilter, captureFilter } from "./capture.js";
import { type ExportHealth, postBatch } from "./export-health.js";
import { EXPORT_SUCCESS, type ExportResult, type ExportSpan, type SpanExporterLike } from "./span-data.js";
import type { TraceCapture } from "./tracing.js";
import { type RunPlace, toRun, type VendorRun } from "./vendor-runs.js";

/** LangSmith's public API, whose run ingestion this format follows. */
export const DEFAULT_VENDOR_ENDPOINT = "https://api.smith.langchain.com";

export interface VendorExporterOptions {
  readonly apiKey: string;
  /** TRACEVENDOR_PROJECT; the caller defaults it to the project name. */
  readonly project: string;
  /** TRACEVENDOR_ENDPOINT: the API's base URL (default DEFAULT_VENDOR_ENDPOINT). */
  readonly endpoint?: string | undefined;
  readonly fetch?: typeof fetch;
  readonly capture: TraceCapture;
  readonly health: ExportHealth;
  /** Send on every export (behind the SDK's batch processor); false: only on `flush()` (workerd). */
  readonly autoFlush?: boolean;
  /** Most spans held (waiting for a parent or to be sent); default 2048. */
  readonly maxBuffer?: number;
  /** Most runs per request (default 100). */
  readonly maxBatch?: number;
  /** One request's deadline (default 10 s). */
  readonly timeoutMs?: number;
  /** A span waiting this long for its parent is sent as a root (default 10 minutes). */
  readonly orphanAfterMs?: number;
  /** Places remembered for late children (default 10000). */
  readonly rememberPlaces?: number;
  readonly now?: () => number;
}

interface Waiting {
  readonly span: ExportSpan;
  readonly since: number;
}

export class VendorSpanExporter implements SpanExporterLike {
  private readonly filter: CaptureFilter;
  private readonly send: typeof fetch;
  private readonly url: string;
  private readonly now: () => number;
  /** Spans waiting for their parent's place, by parent span id. */
  private readonly waiting = new Map<string, Waiting[]>();
  private waitingCount = 0;
  /** Places of recent spans by span id, oldest first (a Map keeps insertion order). */
  private readonly places = new Map<string, RunPlace>();
  private ready: VendorRun[] = [];
  private closed = false;

  constructor(private readonly o: VendorExporterOptions) {
    this.filter = captureFilter(o.capture);
    this.send = o.fetch ?? ((input, init) => fetch(input, init));
    this.url = `${(o.endpoint ?? DEFAULT_VENDOR_ENDPOINT).replace(/\/+$/, "")}/runs/batch`;
    this.now = o.now ?? Date.now;
  }

  /** Spans held: waiting for a parent or to be sent. */
  get pending(): number {
    return this.waitingCount + this.ready.length;
  }

  export(spans: ExportSpan[], resultCallback: (result: ExportResult) => void): void {
    let dropped = 0;
    for (const span of spans) {
      if (this.closed || this.pending >= (this.o.maxBuffer ?? 2048)) dropped++;
      else this.take(this.filter(span));
    }
    this.o.health.dropped(dropped, "queue_full");
    if (this.o.autoFlush ?? true) void this.flush().then(() => resultCallback(EXPORT_SUCCESS));
    else resultCallback(EXPORT_SUCCESS);
  }

  /** Sends every placed run (and orphans past their wait); never rejects. */
  async flush(): Promise<void> {
    this.placeOrphans();
    const runs = this.ready;
    if (runs.length === 0) return;
    this.ready = [];
    const max = this.o.maxBatch ?? 100;
    for (let i = 0; i < runs.length; i += max) await this.post(runs.slice(i, i + max));
  }

  forceFlush(): Promise<void> {
    return this.flush();
  }

  /** Sends what is placed and, since no parent will come any more, every waiting span as a root. */
  async shutdown(): Promise<void> {
    this.placeOrphans(Infinity);
    await this.flush();
    this.closed = true;
  }

  private take(span: ExportSpan): void {
    const parent = span.parentSpanContext;
    if (parent === undefined || parent.isRemote === true || !parent.spanId) return this.place(span, undefined);
    const place = this.places.get(parent.spanId);
    if (place) return this.place(span, place);
    const list = this.waiting.get(parent.spanId);
    const entry = { span, since: this.now() };
    if (list) list.push(entry);
    else this.waiting.set(parent.spanId, [entry]);
    this.waitingCount++;
  }

  /** Places a span, then the children that waited for it (iteratively: trees can be deep). */
  private place(first: ExportSpan, firstParent: RunPlace | undefined): void {
    const todo: [ExportSpan, RunPlace | undefined][] = [[first, firstParent]];
    for (let item = todo.pop(); item !== undefined; item = todo.pop()) {
      const [span, parent] = item;
      const { run, place } = toRun(span, parent, this.o.project);
      this.ready.push(run);
      const spanId = span.spanContext().spanId;
      this.remember(spanId, place);
      const children = this.waiting.get(spanId);
      if (!children) continue;
      this.waiting.delete(spanId);
      this.waitingCount -= children.length;
      for (const child of children) todo.push([child.span, place]);
    }
  }

  private remember(spanId: string, place: RunPlace): void {
    this.places.set(spanId, place);
    const max = this.o.rememberPlaces ?? 10_000;
    if (this.places.size > max) this.places.delete(this.places.keys().next().value!);
  }

  private placeOrphans(after = this.o.orphanAfterMs ?? 600_000): void {
    if (this.waitingCount === 0) return;
    const cutoff = this.now() - after;
    for (const [parentId, list] of [...this.waiting]) {
      if (after !== Infinity && list.every((w) => w.since > cutoff)) continue;
      // Placing an earlier orphan may have placed this list already (its parent was that orphan).
      if (!this.waiting.has(parentId)) continue;
      this.waiting.delete(parentId);
      this.waitingCount -= list.length;
      for (const w of list) this.place(w.span, undefined);
    }
  }

  private post(runs: VendorRun[]): Promise<void> {
    return postBatch({
      send: this.send,
      url: this.url,
      headers: { "content-type": "application/json", "x-api-key": this.o.apiKey },
      body: JSON.stringify({ post: runs }),
      deadlineMs: this.o.timeoutMs ?? 10_000,
      health: this.o.health,
      count: runs.length,
    });
  }
}
