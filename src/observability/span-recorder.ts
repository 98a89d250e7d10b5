/**
 * The Tracer behind trace export on every runtime: spans that record what the facade
 * (tracing.ts) gives them and, once ended, are handed to a span processor (the SDK's batch
 * processor on Node, Bun and Deno; the buffering fetch exporter on workerd), which reads them as
 * the SDK's ReadableSpan.
 *
 * Why not the SDK's own Tracer: measured on this 2-core machine (issue 15, bench-chat --tracing),
 * its span path cost about 16 us a span (two validating copies of the attributes, a metrics
 * counter per span, ids through Buffer hex, three HrTime conversions) where the whole chat costs
 * about 600 us: with three spans a chat that alone took most of the 15% budget tracing has. This
 * one keeps what export needs and nothing else; the SDK still batches, encodes and sends.
 *
 * Sampling follows OTEL_TRACES_SAMPLER as the SDK reads it (default parent-based always-on): a
 * span not sampled is a non-recording span that still carries the trace on (its traceparent says
 * not sampled). The trace-id ratio is the specification's consistent one: a trace is sampled when
 * the last 56 bits of its id, as a fraction, reach 1 - ratio, so every service with the same ratio
 * keeps the same traces. Limits are the SDK defaults (128 attributes, events and links a span;
 * past them the oldest event or link goes, a new attribute is dropped, each counted).
 */
import {
  type Attributes,
  type AttributeValue,
  type Context,
  context as contexts,
  type Exception,
  type HrTime,
  isSpanContextValid,
  type Link,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanOptions,
  type SpanStatus,
  SpanStatusCode,
  type TimeInput,
  trace,
  TraceFlags,
  type Tracer,
} from "@opentelemetry/api";
import { randomHex } from "../ids.js";
import type { ExportEvent, ExportSpan } from "./span-data.js";

/** Where ended spans go: the SDK's SpanProcessor satisfies it. */
export interface EndedSpans {
  onEnd(span: RecordedSpan): void;
}

/** The OTEL_TRACES_SAMPLER values offered (the remote samplers are not). */
export type SamplerName = "parentbased_always_on" | "parentbased_always_off" | "parentbased_traceidratio" | "always_on" | "always_off" | "traceidratio";

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG. */
export interface SamplerChoice {
  /** What decides a span without a parent (and every span when not parent-based). */
  readonly root: "always_on" | "always_off" | "traceidratio";
  /** A span with a valid parent follows the parent's decision. */
  readonly parentBased: boolean;
  /** The probability under `traceidratio`, 0 to 1. */
  readonly ratio: number;
}

export const DEFAULT_SAMPLER: SamplerChoice = { root: "always_on", parentBased: true, ratio: 1 };

export interface SpanRecorderOptions {
  /** The SDK's Resource (or any object with attributes): the same object on every span. */
  readonly resource: { readonly attributes: Attributes };
  readonly scope: { readonly name: string; readonly version?: string | undefined };
  readonly ended: EndedSpans;
  readonly sampler?: SamplerChoice | undefined;
}

/** The sampler the OTEL_TRACES_SAMPLER variables name. */
export function samplerChoice(name: SamplerName, ratio: number): SamplerChoice {
  const parentBased = name.startsWith("parentbased_");
  const root = name.replace(/^parentbased_/, "") as SamplerChoice["root"];
  return { root, parentBased, ratio };
}

const LIMIT = 128;
const NONE: readonly never[] = Object.freeze([]);
const UNSET: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

export function createSpanRecorder(o: SpanRecorderOptions): Tracer {
  const sampler = o.sampler ?? DEFAULT_SAMPLER;
  const startSpan = (name: string, options: SpanOptions = {}, parent: Context = contexts.active()): Span => {
    const parentSpan = options.root ? undefined : trace.getSpan(parent);
    const parentSc = parentSpan?.spanContext();
    // A span of ours has valid ids by construction: only a caller's context is checked.
    const valid = parentSc !== undefined && (parentSpan instanceof RecordedSpan || isSpanContextValid(parentSc));
    const spanContext: SpanContext = {
      traceId: valid ? parentSc.traceId : newId(16, ZERO_TRACE),
      spanId: newId(8, ZERO_SPAN),
      traceFlags: TraceFlags.SAMPLED,
    };
    if (valid && parentSc.traceState !== undefined) spanContext.traceState = parentSc.traceState;
    const sampled = valid && sampler.parentBased ? (parentSc.traceFlags & TraceFlags.SAMPLED) !== 0 : sampleRoot(sampler, spanContext.traceId);
    if (!sampled) {
      spanContext.traceFlags = TraceFlags.NONE;
      return trace.wrapSpanContext(spanContext);
    }
    return new RecordedSpan(o, name, options, spanContext, valid ? parentSc : undefined);
  };
  // The API's overloads: (name, fn), (name, options, fn), (name, options, context, fn).
  function startActiveSpan(name: string, ...rest: unknown[]): unknown {
    const fn = rest.pop() as (span: Span) => unknown;
    const [options, parent] = rest as [SpanOptions | undefined, Context | undefined];
    const ctx = parent ?? contexts.active();
    const span = startSpan(name, options, ctx);
    return contexts.with(trace.setSpan(ctx, span), fn, undefined, span);
  }
  return { startSpan, startActiveSpan } as Tracer;
}

function sampleRoot(sampler: SamplerChoice, traceId: string): boolean {
  if (sampler.root === "always_on") return true;
  if (sampler.root === "always_off") return false;
  // The last 56 bits of the id as a fraction of 2^56, in two exact halves of 28 bits.
  const r = Number.parseInt(traceId.slice(18, 25), 16) / 2 ** 28 + Number.parseInt(traceId.slice(25, 32), 16) / 2 ** 56;
  return r >= 1 - sampler.ratio;
}

/** A random id that is not all zeros (W3C: such an id is invalid). */
function newId(bytes: number, zero: string): string {
  let id = randomHex(bytes);
  while (id === zero) id = randomHex(bytes);
  return id;
}

/** One recorded span: the API's Span to the code, the SDK's ReadableSpan to the processor and exporters. */
export class RecordedSpan implements Span, ExportSpan {
  name: string;
  readonly kind: SpanKind;
  readonly attributes: Attributes = {};
  // Most spans get no links or events: one shared empty list until the first is added.
  links: readonly Link[] = NONE;
  events: readonly ExportEvent[] = NONE;
  status: SpanStatus = UNSET;
  readonly resource: { readonly attributes: Attributes };
  readonly instrumentationScope: { readonly name: string; readonly version?: string | undefined };
  droppedAttributesCount = 0;
  droppedEventsCount = 0;
  droppedLinksCount = 0;
  ended = false;
  private attributeCount = 0;
  private readonly startMs: number;
  private endMs = 0;
  /** The wall clock and the monotonic clock read together when the span was made (see nowMs). */
  private readonly anchorWall: number;
  private readonly anchorPerf: number;
  private readonly sink: EndedSpans;
  /** An HrTime given for the start or end, kept exactly (milliseconds would round the nanoseconds). */
  private startHr: HrTime | undefined;
  private endHr: HrTime | undefined;

  constructor(
    o: SpanRecorderOptions,
    name: string,
    options: SpanOptions,
    private readonly context: SpanContext,
    readonly parentSpanContext: SpanContext | undefined,
  ) {
    this.name = name;
    this.kind = options.kind ?? SpanKind.INTERNAL;
    this.resource = o.resource;
    this.instrumentationScope = o.scope;
    this.sink = o.ended;
    this.anchorPerf = performance.now();
    this.anchorWall = Date.now();
    const start = options.startTime;
    this.startMs = start === undefined ? this.anchorWall : this.toMs(start);
    if (Array.isArray(start)) this.startHr = start;
    if (options.attributes) this.setAttributes(options.attributes);
    if (options.links) this.addLinks(options.links);
  }

  get startTime(): HrTime {
    return this.startHr ?? msToHrTime(this.startMs);
  }
  get endTime(): HrTime {
    return this.endHr ?? msToHrTime(this.endMs);
  }
  get duration(): HrTime {
    const [s0, n0] = this.startTime;
    const [s1, n1] = this.endTime;
    return n1 >= n0 ? [s1 - s0, n1 - n0] : [s1 - s0 - 1, n1 - n0 + 1e9];
  }

  spanContext(): SpanContext {
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (this.ended || !isAttributeValue(value)) return this;
    if (!(key in this.attributes)) {
      if (this.attributeCount >= LIMIT) {
        this.droppedAttributesCount++;
        return this;
      }
      this.attributeCount++;
    }
    this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    let attributes: Attributes | undefined;
    if (isTimeInput(attributesOrTime)) time ??= attributesOrTime;
    else if (attributesOrTime) attributes = copyAttributes(attributesOrTime);
    const events = this.events === NONE ? (this.events = []) : (this.events as ExportEvent[]);
    if (events.length >= LIMIT) {
      events.shift();
      this.droppedEventsCount++;
    }
    events.push({ name, time: msToHrTime(time === undefined ? this.nowMs() : this.toMs(time)), attributes });
    return this;
  }

  addLink(link: Link): this {
    if (this.ended) return this;
    const links = this.links === NONE ? (this.links = []) : (this.links as Link[]);
    if (links.length >= LIMIT) {
      links.shift();
      this.droppedLinksCount++;
    }
    links.push(link.attributes ? { context: link.context, attributes: copyAttributes(link.attributes) } : { context: link.context });
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  /** As the SDK: UNSET changes nothing, OK is final, a message is kept only with ERROR. */
  setStatus(status: SpanStatus): this {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status = status.code === SpanStatusCode.ERROR && typeof status.message === "string" ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    const end = endTime === undefined ? this.nowMs() : this.toMs(endTime);
    // An end before the start is read as the start (the SDK's rule: no negative durations).
    this.endMs = Math.max(this.startMs, end);
    if (Array.isArray(endTime) && end >= this.startMs) this.endHr = endTime;
    else if (end < this.startMs) this.endHr = this.startHr;
    this.ended = true;
    this.sink.onEnd(this);
  }

  /**
   * Now, in epoch milliseconds, as the SDK's spans read it: the wall clock when the span was made
   * plus the monotonic time since. The time origin plus performance.now() alone drifts from the
   * wall clock over a long-lived process (NTP steps the wall clock, not the monotonic one), and
   * spans would then be stamped off the time their logs carry.
   */
  private nowMs(): number {
    return this.anchorWall + (performance.now() - this.anchorPerf);
  }

  /** A TimeInput in epoch milliseconds: an HrTime, a Date, or a number (since the epoch, or a performance.now() reading when smaller, as the SDK reads it). */
  private toMs(time: TimeInput): number {
    if (Array.isArray(time)) return time[0] * 1000 + time[1] / 1e6;
    if (time instanceof Date) return time.getTime();
    return time <= performance.now() ? this.anchorWall + (time - this.anchorPerf) : time;
  }

  isRecording(): boolean {
    return !this.ended;
  }

  /** The exception event of the semantic conventions (type, message, stack; the latter two are content). */
  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === "string") attributes["exception.message"] = exception;
    else {
      const type = exception.name ?? (exception.code !== undefined ? String(exception.code) : undefined);
      if (type !== undefined) attributes["exception.type"] = type;
      if (exception.message !== undefined) attributes["exception.message"] = exception.message;
      if (exception.stack !== undefined) attributes["exception.stacktrace"] = exception.stack;
    }
    this.addEvent("exception", attributes, time);
  }
}

function isAttributeValue(value: unknown): value is AttributeValue {
  const type = typeof value;
  return type === "string" || type === "number" || type === "boolean" || Array.isArray(value);
}

function copyAttributes(attributes: Attributes): Attributes {
  const out: Attributes = {};
  let count = 0;
  for (const key in attributes) {
    const value = attributes[key];
    if (!isAttributeValue(value) || count >= LIMIT) continue;
    out[key] = value;
    count++;
  }
  return out;
}

function isTimeInput(value: unknown): value is TimeInput {
  return typeof value === "number" || value instanceof Date || (Array.isArray(value) && value.length === 2 && typeof value[0] === "number");
}

function msToHrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  const nanos = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return [seconds, nanos];
}
