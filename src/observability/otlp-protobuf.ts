/**
 * Spans as an OTLP ExportTraceServiceRequest in protobuf (opentelemetry/proto trace/v1), written
 * in one pass into a buffer that is kept between exports. Ours rather than the SDK transformer's
 * serializer because that one measured 5-8 us a span here (a size-estimating pass, then a
 * writing pass, a new buffer and a new array per id): with three spans a chat it cost more of
 * the chat's throughput than everything else tracing does (issue 15, bench-chat --tracing).
 * Web-standard, so the workerd exporter sends protobuf too.
 *
 * A length-delimited field reserves one byte for its length and moves its content when the
 * length needs more (the canonical, shortest varint is always written).
 */
import type { Attributes, AttributeValue, HrTime, SpanContext } from "@opentelemetry/api";
import { type ExportSpan, groupSpans } from "./span-data.js";

/** OTLP Span.flags: bit 8 says whether the parent's remoteness is known, bit 9 that it is remote. */
const FLAGS_HAS_IS_REMOTE = 0x100;
const FLAGS_IS_REMOTE = 0x200;

/**
 * The request body for `spans`, grouped by resource and scope (groupSpans); a span without a
 * resource is put under `resource`.
 */
export function otlpProtobufRequest(spans: readonly ExportSpan[], resource: Attributes = {}): Uint8Array<ArrayBuffer> {
  const w = writer;
  w.pos = 0;
  for (const [res, scopes] of groupSpans(spans, resource)) {
    const resourceSpans = w.open(1);
    const resourceAt = w.open(1);
    w.attributes(1, res.attributes);
    w.close(resourceAt);
    for (const [scope, list] of scopes) {
      const scopeSpans = w.open(2);
      const scopeAt = w.open(1);
      w.string(1, scope.name);
      if (scope.version) w.string(2, scope.version);
      w.close(scopeAt);
      for (const span of list) writeSpan(w, span);
      w.close(scopeSpans);
    }
    w.close(resourceSpans);
  }
  // A copy: the writer's buffer is reused by the next export while this one may still be sending.
  return w.buf.slice(0, w.pos);
}

function writeSpan(w: Writer, span: ExportSpan): void {
  const at = w.open(2);
  const sc = span.spanContext();
  w.hexBytes(1, sc.traceId);
  w.hexBytes(2, sc.spanId);
  const state = sc.traceState?.serialize();
  if (state) w.string(3, state);
  const parent = span.parentSpanContext;
  if (parent?.spanId) w.hexBytes(4, parent.spanId);
  w.name(5, span.name);
  // api SpanKind counts from INTERNAL = 0; OTLP from UNSPECIFIED = 0, INTERNAL = 1.
  w.uint(6, span.kind + 1);
  w.time(7, span.startTime);
  w.time(8, span.endTime);
  w.attributes(9, span.attributes);
  w.uint(10, span.droppedAttributesCount ?? 0);
  for (const event of span.events) {
    const eventAt = w.open(11);
    w.time(1, event.time);
    w.string(2, event.name);
    if (event.attributes) w.attributes(3, event.attributes);
    w.close(eventAt);
  }
  w.uint(12, span.droppedEventsCount ?? 0);
  for (const link of span.links) {
    const linkAt = w.open(13);
    w.hexBytes(1, link.context.traceId);
    w.hexBytes(2, link.context.spanId);
    const linkState = link.context.traceState?.serialize();
    if (linkState) w.string(3, linkState);
    if (link.attributes) w.attributes(4, link.attributes);
    w.fixed32(6, spanFlags(link.context, link.context.isRemote));
    w.close(linkAt);
  }
  w.uint(14, span.droppedLinksCount ?? 0);
  const statusAt = w.open(15);
  if (span.status.message) w.string(2, span.status.message);
  w.uint(3, span.status.code);
  w.close(statusAt);
  w.fixed32(16, spanFlags(sc, parent?.isRemote));
  w.close(at);
}

function spanFlags(sc: SpanContext, remote: boolean | undefined): number {
  return (sc.traceFlags & 0xff) | FLAGS_HAS_IS_REMOTE | (remote ? FLAGS_IS_REMOTE : 0);
}

const TWO_32 = 0x1_0000_0000;
const NAMES_KEPT = 1024;
const INT64_LIMIT = 2 ** 63;

/** A growing byte buffer with the few protobuf writes OTLP traces need; fields of value 0 are left out. */
class Writer {
  buf: Uint8Array<ArrayBuffer> = new Uint8Array(64 * 1024);
  pos = 0;
  private view = new DataView(this.buf.buffer);
  private readonly encoder = new TextEncoder();
  private readonly names = new Map<string, Uint8Array>();

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + bytes) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  /** A varint below 2^53 (tags, lengths, counts, non-negative ints). */
  private varint(value: number): void {
    this.room(10);
    const b = this.buf;
    let v = value;
    while (v >= TWO_32) {
      b[this.pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    while (v > 127) {
      b[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[this.pos++] = v;
  }

  private tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  /** Starts a length-delimited field; returns what `close` takes. */
  open(field: number): number {
    this.tag(field, 2);
    this.room(1);
    return this.pos++;
  }

  close(at: number): void {
    const length = this.pos - at - 1;
    if (length < 128) {
      this.buf[at] = length;
      return;
    }
    const size = varintSize(length);
    this.room(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    let v = length;
    let i = at;
    while (v > 127) {
      this.buf[i++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[i] = v;
  }

  uint(field: number, value: number): void {
    if (value === 0) return;
    this.tag(field, 0);
    this.varint(value);
  }

  fixed32(field: number, value: number): void {
    this.tag(field, 5);
    this.room(4);
    this.view.setUint32(this.pos, value, true);
    this.pos += 4;
  }

  /** HrTime as fixed64 nanoseconds since the epoch, exactly (the product passes 2^53). */
  time(field: number, [seconds, nanos]: HrTime): void {
    this.tag(field, 1);
    this.room(8);
    // seconds * 1e9 + nanos = high16 * 1e9 * 2^16 + (low16 * 1e9 + nanos), each part exact in a double.
    const high16 = Math.floor(seconds / 65536);
    const upper = high16 * 1e9; // < 2^46, shifted left by 16 below
    const lower = (seconds - high16 * 65536) * 1e9 + nanos; // < 2^47
    const lo = (upper % 65536) * 65536 + (lower % TWO_32);
    const hi = Math.floor(upper / 65536) + Math.floor(lower / TWO_32) + Math.floor(lo / TWO_32);
    this.view.setUint32(this.pos, lo % TWO_32, true);
    this.view.setUint32(this.pos + 4, hi >>> 0, true);
    this.pos += 8;
  }

  /** A trace or span id: lower-case hex as the API keeps it, written as its bytes. */
  hexBytes(field: number, hex: string): void {
    const n = hex.length >>> 1;
    this.tag(field, 2);
    this.varint(n);
    this.room(n);
    const b = this.buf;
    for (let i = 0; i < n; i++) b[this.pos++] = (HEX[hex.charCodeAt(2 * i)]! << 4) | HEX[hex.charCodeAt(2 * i + 1)]!;
  }

  string(field: number, text: string): void {
    this.tag(field, 2);
    this.text(text);
  }

  /**
   * A string that recurs from span to span (attribute keys, span names): its encoded field is
   * kept (length and bytes), so the next one is a copy. The names come from code, not from requests, so the kept
   * set stays small; past NAMES_KEPT it stops growing and the rest are written as they come.
   */
  name(field: number, text: string): void {
    this.tag(field, 2);
    const bytes = this.names.get(text);
    if (bytes === undefined) {
      const start = this.pos;
      this.text(text);
      if (this.names.size < NAMES_KEPT) this.names.set(text, this.buf.slice(start, this.pos));
      return;
    }
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** A string's length and UTF-8 bytes: short ASCII written directly, anything else by encodeInto. */
  private text(text: string): void {
    const n = text.length;
    // At most 3 bytes per UTF-16 unit, and the length's varint in front (room for any varint,
    // so writing the length below never moves the buffer under the encoded bytes).
    const lengthBytes = varintSize(n * 3);
    this.room(n * 3 + 10);
    const b = this.buf;
    const start = this.pos;
    if (n < 128) {
      let i = 0;
      let p = start + 1;
      for (; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c > 127) break;
        b[p++] = c;
      }
      if (i === n) {
        b[start] = n;
        this.pos = p;
        return;
      }
    }
    const written = this.encoder.encodeInto(text, b.subarray(start + lengthBytes)).written;
    const size = varintSize(written);
    if (size < lengthBytes) b.copyWithin(start + size, start + lengthBytes, start + lengthBytes + written);
    this.pos = start;
    this.varint(written);
    this.pos += written;
  }

  attributes(field: number, attributes: Attributes): void {
    for (const key in attributes) {
      const value = attributes[key];
      if (value === undefined || value === null) continue;
      const kv = this.open(field);
      this.name(1, key);
      const at = this.open(2);
      this.anyValue(value);
      this.close(at);
      this.close(kv);
    }
  }

  private anyValue(value: AttributeValue | null | undefined): void {
    switch (typeof value) {
      case "string":
        return this.string(1, value);
      case "boolean":
        this.tag(2, 0);
        return this.varint(value ? 1 : 0);
      case "number":
        // Integers as int64 (as the SDK writes them), anything else as a double.
        if (Number.isInteger(value) && value >= -INT64_LIMIT && value < INT64_LIMIT) {
          this.tag(3, 0);
          return value >= 0 && value <= Number.MAX_SAFE_INTEGER ? this.varint(value) : this.bigVarint(value);
        }
        this.tag(4, 1);
        this.room(8);
        this.view.setFloat64(this.pos, value, true);
        this.pos += 8;
        return;
      default:
        if (Array.isArray(value)) {
          // ArrayValue { repeated AnyValue values = 1 }; an absent element is an empty AnyValue.
          const array = this.open(5);
          for (const item of value as readonly (AttributeValue | null | undefined)[]) {
            const at = this.open(1);
            this.anyValue(item);
            this.close(at);
          }
          this.close(array);
        }
    }
  }

  /** An int64 past the safe range, negative ones as their two's complement (ten bytes). */
  private bigVarint(value: number): void {
    this.room(10);
    let v = BigInt.asUintN(64, BigInt(value));
    while (v > 0x7fn) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }
}

function varintSize(value: number): number {
  let size = 1;
  for (let v = value; v > 127; v = Math.floor(v / 128)) size++;
  return size;
}

/** The value of a hex digit by its char code (0-9, a-f, A-F); the API keeps ids valid. */
const HEX = new Uint8Array(128);
for (let i = 0; i < 16; i++) {
  HEX["0123456789abcdef".charCodeAt(i)] = i;
  HEX["0123456789ABCDEF".charCodeAt(i)] = i;
}

/** One writer per isolate: exports run one at a time on its thread, and each copies its bytes out. */
const writer = new Writer();
