/**
 * Decodes an OTLP ExportTraceServiceRequest from protobuf, by the field numbers of
 * opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto. Only what the tests read;
 * unknown fields are skipped by wire type, as protobuf readers must.
 */
import type { ReceivedSpan } from "./otlp-receiver.js";

class Reader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error("truncated varint");
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  tag(): [field: number, wire: number] {
    const t = Number(this.varint());
    return [t >>> 3, t & 7];
  }
  bytes(): Uint8Array {
    const len = Number(this.varint());
    if (this.pos + len > this.buf.length) throw new Error("truncated field");
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
  string(): string {
    return new TextDecoder().decode(this.bytes());
  }
  fixed64(): bigint {
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getBigUint64(0, true);
    this.pos += 8;
    return v;
  }
  double(): number {
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8).getFloat64(0, true);
    this.pos += 8;
    return v;
  }
  fixed32(): number {
    const v = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 4).getUint32(0, true);
    this.pos += 4;
    return v;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

/** Calls `on(field, wire, reader)` for each field of the message in `buf`; `on` returns false to skip it. */
function fields(buf: Uint8Array, on: (field: number, wire: number, r: Reader) => boolean | void): void {
  const r = new Reader(buf);
  while (!r.done) {
    const [field, wire] = r.tag();
    if (on(field, wire, r) === false) r.skip(wire);
  }
}

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

function anyValue(buf: Uint8Array): unknown {
  let out: unknown;
  fields(buf, (f, w, r) => {
    if (f === 1 && w === 2) out = r.string();
    else if (f === 2 && w === 0) out = r.varint() !== 0n;
    else if (f === 3 && w === 0) out = Number(BigInt.asIntN(64, r.varint()));
    else if (f === 4 && w === 1) out = r.double();
    else if (f === 5 && w === 2) {
      const values: unknown[] = [];
      fields(r.bytes(), (f2, w2, r2) => (f2 === 1 && w2 === 2 ? void values.push(anyValue(r2.bytes())) : false));
      out = values;
    } else if (f === 6 && w === 2) {
      const kv: Record<string, unknown> = {};
      fields(r.bytes(), (f2, w2, r2) => (f2 === 1 && w2 === 2 ? void keyValue(r2.bytes(), kv) : false));
      out = kv;
    } else if (f === 7 && w === 2) out = hex(r.bytes());
    else return false;
  });
  return out;
}

function keyValue(buf: Uint8Array, into: Record<string, unknown>): void {
  let key = "";
  let value: unknown;
  fields(buf, (f, w, r) => {
    if (f === 1 && w === 2) key = r.string();
    else if (f === 2 && w === 2) value = anyValue(r.bytes());
    else return false;
  });
  into[key] = value;
}

function attributesOf(on: (collect: (buf: Uint8Array) => void) => void): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  on((buf) => keyValue(buf, out));
  return out;
}

function span(buf: Uint8Array, resource: Record<string, unknown>, scope: string): ReceivedSpan {
  const s: ReceivedSpan = { name: "", traceId: "", spanId: "", kind: 0, startTimeUnixNano: "0", endTimeUnixNano: "0", attributes: {}, events: [], links: [], status: { code: 0 }, resource, scope };
  fields(buf, (f, w, r) => {
    if (f === 1 && w === 2) s.traceId = hex(r.bytes());
    else if (f === 2 && w === 2) s.spanId = hex(r.bytes());
    else if (f === 3 && w === 2) s.traceState = r.string();
    else if (f === 4 && w === 2) {
      const parent = hex(r.bytes());
      if (parent) s.parentSpanId = parent;
    } else if (f === 5 && w === 2) s.name = r.string();
    else if (f === 6 && w === 0) s.kind = Number(r.varint());
    else if (f === 7 && w === 1) s.startTimeUnixNano = r.fixed64().toString();
    else if (f === 8 && w === 1) s.endTimeUnixNano = r.fixed64().toString();
    else if (f === 9 && w === 2) keyValue(r.bytes(), s.attributes);
    else if (f === 11 && w === 2) {
      const e = { name: "", timeUnixNano: "0", attributes: {} as Record<string, unknown> };
      fields(r.bytes(), (f2, w2, r2) => {
        if (f2 === 1 && w2 === 1) e.timeUnixNano = r2.fixed64().toString();
        else if (f2 === 2 && w2 === 2) e.name = r2.string();
        else if (f2 === 3 && w2 === 2) keyValue(r2.bytes(), e.attributes);
        else return false;
      });
      s.events.push(e);
    } else if (f === 13 && w === 2) {
      const l = { traceId: "", spanId: "", attributes: {} as Record<string, unknown> };
      fields(r.bytes(), (f2, w2, r2) => {
        if (f2 === 1 && w2 === 2) l.traceId = hex(r2.bytes());
        else if (f2 === 2 && w2 === 2) l.spanId = hex(r2.bytes());
        else if (f2 === 4 && w2 === 2) keyValue(r2.bytes(), l.attributes);
        else return false;
      });
      s.links.push(l);
    } else if (f === 15 && w === 2) {
      fields(r.bytes(), (f2, w2, r2) => {
        if (f2 === 2 && w2 === 2) s.status.message = r2.string();
        else if (f2 === 3 && w2 === 0) s.status.code = Number(r2.varint());
        else return false;
      });
    } else if (f === 16 && w === 5) r.fixed32();
    else return false;
  });
  return s;
}

export function decodeTraceRequest(buf: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  fields(buf, (f, w, r) => {
    if (f !== 1 || w !== 2) return false;
    // ResourceSpans: 1 resource, 2 scope_spans. The resource may follow its spans on the wire.
    const scopeBufs: Uint8Array[] = [];
    const resource = attributesOf((collect) =>
      fields(r.bytes(), (f2, w2, r2) => {
        if (f2 === 1 && w2 === 2) fields(r2.bytes(), (f3, w3, r3) => (f3 === 1 && w3 === 2 ? collect(r3.bytes()) : false));
        else if (f2 === 2 && w2 === 2) scopeBufs.push(r2.bytes());
        else return false;
      }),
    );
    for (const ss of scopeBufs) {
      let scope = "";
      const spans: Uint8Array[] = [];
      fields(ss, (f2, w2, r2) => {
        if (f2 === 1 && w2 === 2) fields(r2.bytes(), (f3, w3, r3) => (f3 === 1 && w3 === 2 ? void (scope = r3.string()) : false));
        else if (f2 === 2 && w2 === 2) spans.push(r2.bytes());
        else return false;
      });
      for (const sp of spans) out.push(span(sp, resource, scope));
    }
  });
  return out;
}
