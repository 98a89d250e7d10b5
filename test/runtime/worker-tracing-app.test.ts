/**
 * Tracing in the built module worker (dist/worker.js) in workerd via Miniflare (with wrangler.toml's
 * flags and Durable Objects, test/support/workerd.ts): the worker entry
 * passes workerTraceExport, and each response hands the flush of its spans to `ctx.waitUntil`
 * once streamed (flushAfterResponse), so a streamed /chat's spans reach a loopback OTLP receiver
 * in protobuf (the default OTEL_EXPORTER_OTLP_PROTOCOL, our encoder running in workerd) with
 * nothing else asked of the caller.
 */
import type { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSse } from "../helpers.js";
import { type OtlpReceiver, startOtlpReceiver } from "../support/otlp-receiver.js";
import { startWorkerd } from "../support/workerd.js";

const KEY = "k";

let rx: OtlpReceiver;
let mf: Miniflare;
beforeAll(async () => {
  rx = await startOtlpReceiver();
  mf = await startWorkerd("dist/worker.js", {
    bindings: { API_KEY: KEY, MODEL_PROVIDER: "fake", MODEL_NAME: "fake", TRACING_ENABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_SERVICE_NAME: "agent-on-workerd" },
  });
});
afterAll(async () => {
  await mf?.dispose();
  await rx?.close();
});

describe("tracing in the module worker", () => {
  it("a streamed /chat's spans reach the OTLP receiver after the response, in protobuf", async () => {
    const res = await mf.dispatchFetch("http://localhost/chat", {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ message: '/call calculator {"expression":"2+3"}', thread_id: "t-worker" }),
    });
    const events = parseSse(await res.text());
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    const spans = await rx.waitFor((s) => ["POST /chat", "invoke_agent app", "chat fake", "execute_tool calculator"].every((n) => s.some((x) => x.name === n)));
    expect(rx.requests.every((r) => r.contentType === "application/x-protobuf")).toBe(true);
    const server = spans.find((s) => s.name === "POST /chat")!;
    const run = spans.find((s) => s.name === "invoke_agent app")!;
    expect(run.parentSpanId).toBe(server.spanId);
    expect(run.attributes["gen_ai.conversation.id"]).toBe("t-worker");
    for (const name of ["chat fake", "execute_tool calculator"]) expect(spans.filter((s) => s.name === name).every((s) => s.parentSpanId === run.spanId)).toBe(true);
    expect(server.resource["service.name"]).toBe("agent-on-workerd");
  });
});
