/**
 * A chain user -> A -> B over A2A is one trace under PROPAGATE_TRACE_HEADERS=peers (spec 6.4):
 * A's call to B carries A's client span as `traceparent`, and B continues it on /a2a/...; under
 * `off` neither side propagates and the chain is two traces. Two instances of this service on
 * loopback (test/support/served.ts), each exporting with the Node entry's trace export to one
 * loopback OTLP receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeTraceExport } from "../../src/runtime/tracing.js";
import { chat, KEY, makeApp, type TestApp } from "../helpers.js";
import { peerPolicy } from "../support/a2a-peers.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp-receiver.js";
import { type Served, slot } from "../support/served.js";

let rx: OtlpReceiver;
beforeAll(async () => {
  rx = await startOtlpReceiver();
});
afterAll(async () => {
  await rx.close();
});

const traced = (service: string, propagate: string) => ({
  TRACING_ENABLED: "true",
  OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_BSP_SCHEDULE_DELAY: "20",
  OTEL_SERVICE_NAME: service,
  PROPAGATE_TRACE_HEADERS: propagate,
});

/** A (its model calls ask_b) and B, both traced, B served on loopback; the spans of one ask. */
async function askThroughChain(propagate: string): Promise<{ a: ReceivedSpan[]; b: ReceivedSpan[] }> {
  rx.spans.length = 0;
  const bSlot = await slot();
  const b: Served = await bSlot.start((base) => makeApp({ APP_URL: base, ...traced("agent-b", propagate) }, { traceExport: nodeTraceExport }));
  let a: TestApp | undefined;
  try {
    a = await makeApp({ PEER_TOKEN: KEY, B_URL: b.base, ...traced("agent-a", propagate) }, { traceExport: nodeTraceExport, policyText: peerPolicy("b", "B_URL", "/a2a/app"), tools: [] });
    const { events } = await chat(a, { message: '/call ask_b {"message":"hi from A"}', thread_id: `t-chain-${propagate}` });
    expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
  } finally {
    await a?.close();
    await b.close();
  }
  const spans = await rx.waitFor((s) => s.some((x) => x.resource["service.name"] === "agent-b" && x.name === "invoke_agent app") && s.some((x) => x.name === "invoke_agent b"));
  return { a: spans.filter((s) => s.resource["service.name"] === "agent-a"), b: spans.filter((s) => s.resource["service.name"] === "agent-b") };
}

const only = (spans: ReceivedSpan[], name: string) => {
  const found = spans.filter((s) => s.name === name);
  expect(found, `${name}: ${spans.map((s) => s.name).join(", ")}`).toHaveLength(1);
  return found[0]!;
};

describe("two services chained over A2A", () => {
  it("are one trace under PROPAGATE_TRACE_HEADERS=peers: B's server span is a child of A's call to B", async () => {
    const { a, b } = await askThroughChain("peers");
    const aChat = only(a, "POST /chat");
    const aRun = only(a, "invoke_agent app");
    const aTool = only(a, "execute_tool ask_b");
    expect(aRun.parentSpanId).toBe(aChat.spanId);
    expect(aTool.parentSpanId).toBe(aRun.spanId);
    // The card read is a plain client span; the message to B is `invoke_agent b`, a client span too.
    const card = only(a, "GET /a2a/app/.well-known/agent-card.json");
    const ask = only(a, "invoke_agent b");
    for (const call of [card, ask]) expect(call).toMatchObject({ kind: 3, parentSpanId: aTool.spanId, attributes: { "agent.api.name": "b" } });
    expect(ask.attributes).toMatchObject({ "http.request.method": "POST", "url.template": "/a2a/app", "agent.api.operation": "SendStreamingMessage", "http.response.status_code": 200 });

    const bServer = only(b.filter((s) => s.name === "POST /a2a/{agent}"), "POST /a2a/{agent}");
    expect(bServer.kind).toBe(2);
    expect(bServer.traceId).toBe(aChat.traceId);
    expect(bServer.parentSpanId).toBe(ask.spanId);
    const bRun = only(b, "invoke_agent app");
    expect(bRun.parentSpanId).toBe(bServer.spanId);
    expect(bRun.traceId).toBe(aChat.traceId);
    expect(bRun.attributes["agent.actor"]).toBeUndefined(); // a shared key names no actor
    // The card read crossed too (a call to a peer), so B's card request continues A's trace as well.
    const bCard = only(b, "GET /a2a/{agent}/.well-known/agent-card.json");
    expect(bCard.parentSpanId).toBe(card.spanId);
    // Every span of both services is in the one trace.
    expect(new Set([...a, ...b].map((s) => s.traceId))).toEqual(new Set([aChat.traceId]));
  });

  it("are two traces under off: nothing crosses and B starts its own", async () => {
    const { a, b } = await askThroughChain("off");
    const aChat = only(a, "POST /chat");
    const bServer = only(b, "POST /a2a/{agent}");
    expect(bServer.parentSpanId).toBeUndefined();
    expect(bServer.traceId).not.toBe(aChat.traceId);
    expect(new Set(a.map((s) => s.traceId))).toEqual(new Set([aChat.traceId]));
    expect(b.every((s) => s.traceId !== aChat.traceId)).toBe(true);
  });
});
