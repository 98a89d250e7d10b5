/**
 * A loopback OTLP/HTTP trace receiver (127.0.0.1, a free port) for tests: accepts POST /v1/traces
 * in JSON (`application/json`) and protobuf (`application/x-protobuf`), gzip or not, and keeps the
 * decoded spans. The protobuf decoder is written here from the OTLP trace .proto field numbers:
 * the SDK's transformer only encodes requests, and protobufjs is not installed.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { gunzipSync } from "node:zlib";
import { decodeTraceRequest } from "./otlp-proto.js";

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, unknown>;
  events: { name: string; timeUnixNano: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status: { code: number; message?: string };
  /** Resource attributes of the batch the span came in. */
  resource: Record<string, unknown>;
  scope: string;
}

export interface ReceivedRequest {
  path: string;
  contentType: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: set OTEL_EXPORTER_OTLP_ENDPOINT to it. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  readonly requests: ReceivedRequest[];
  /** The status later requests are answered with (default 200). */
  status: number;
  /** Resolves once `predicate` holds for the spans received (polls every 10 ms). */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: ReceivedRequest[] = [];
  const receiver = { status: 200 } as { status: number };
  const server: Server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const contentType = String(req.headers["content-type"] ?? "").split(";")[0]!.trim();
      requests.push({ path: req.url ?? "", contentType, headers: req.headers });
      if (req.method !== "POST" || req.url !== "/v1/traces") return void res.writeHead(404).end();
      if (receiver.status >= 300) return void res.writeHead(receiver.status).end();
      const raw = req.headers["content-encoding"] === "gzip" ? gunzipSync(body) : body;
      try {
        if (contentType === "application/json") spans.push(...fromJson(JSON.parse(raw.toString("utf8"))));
        else if (contentType === "application/x-protobuf") spans.push(...decodeTraceRequest(raw));
        else return void res.writeHead(415).end();
      } catch (error) {
        return void res.writeHead(400, { "content-type": "text/plain" }).end(String(error));
      }
      res.writeHead(200, { "content-type": contentType }).end(contentType === "application/json" ? "{}" : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return Object.assign(receiver, {
    url,
    spans,
    requests,
    async waitFor(predicate: (spans: ReceivedSpan[]) => boolean, ms = 5000) {
      const until = Date.now() + ms;
      while (!predicate(spans)) {
        if (Date.now() > until) throw new Error(`OTLP receiver: condition not met in ${ms} ms; spans: ${spans.map((s) => s.name).join(", ")}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return spans;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** OTLP/JSON: ids in hex, 64-bit integers as strings or numbers, values as `{stringValue: ...}`. */
function fromJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          name: s.name,
          traceId: s.traceId,
          spanId: s.spanId,
          ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
          ...(s.traceState ? { traceState: s.traceState } : {}),
          kind: s.kind,
          startTimeUnixNano: String(s.startTimeUnixNano),
          endTimeUnixNano: String(s.endTimeUnixNano),
          attributes: jsonAttributes(s.attributes),
          events: (s.events ?? []).map((e: any) => ({ name: e.name, timeUnixNano: String(e.timeUnixNano), attributes: jsonAttributes(e.attributes) })),
          links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId, attributes: jsonAttributes(l.attributes) })),
          status: { code: s.status?.code ?? 0, ...(s.status?.message ? { message: s.status.message } : {}) },
          resource,
          scope: ss.scope?.name ?? "",
        });
      }
    }
  }
  return out;
}

function jsonAttributes(list: any[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = jsonValue(kv.value);
  return out;
}

function jsonValue(v: any): unknown {
  if (v === undefined || v === null) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("arrayValue" in v) return (v.arrayValue.values ?? []).map(jsonValue);
  if ("kvlistValue" in v) return jsonAttributes(v.kvlistValue.values);
  if ("bytesValue" in v) return v.bytesValue;
  return undefined;
}
