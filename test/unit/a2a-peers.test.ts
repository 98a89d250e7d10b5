/** The A2A client's pure parts (src/a2a/peers): the card check, reading replies, the result, ids, the example policy. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { agentCard } from "../../src/a2a/card.js";
import { checkCard } from "../../src/a2a/peers/card.js";
import { contextIdFor } from "../../src/a2a/peers/identity.js";
import { describePeers } from "../../src/a2a/peers/peer.js";
import { readReply } from "../../src/a2a/peers/reply.js";
import { capText, peerResult } from "../../src/a2a/peers/result.js";
import { loadPolicy } from "../../src/policy/document.js";
import { parseSettings } from "../../src/settings/parse.js";

const ENDPOINT = "http://peer.test:8080/a2a/app";
const ok = (body: unknown) => ({ status: 200, headers: {}, body: body as never });

describe("checkCard", () => {
  it("reads this service's own card (1.0 listed first, 0.3 beside it) and the origin extension", () => {
    const settings = parseSettings({ APP_URL: "http://peer.test:8080/", MODEL_NAME: "x" });
    const card = agentCard(settings, { structured: false, auth: "shared-bearer" });
    expect(checkCard("b", card, ENDPOINT)).toEqual({ version: "1.0", streaming: true, origin: true, name: "app" });
  });

  it("reads an @a2a-js/sdk 1.0 card and a 0.3 card; compares the URL after parsing", () => {
    const sdk = { name: "echo", supportedInterfaces: [{ url: "http://PEER.test:8080/a2a/app/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }], capabilities: { streaming: false } };
    expect(checkCard("b", sdk, ENDPOINT)).toMatchObject({ version: "1.0", streaming: false, origin: false });
    const v03 = { name: "old", url: ENDPOINT, protocolVersion: "0.3.0", capabilities: { streaming: true } };
    expect(checkCard("b", JSON.stringify(v03), ENDPOINT)).toMatchObject({ version: "0.3", streaming: true });
    expect(checkCard("b", { ...v03, preferredTransport: "JSONRPC" }, ENDPOINT).version).toBe("0.3");
    const only03 = { supportedInterfaces: [{ url: ENDPOINT, protocolBinding: "JSONRPC", protocolVersion: "0.3" }] };
    expect(checkCard("b", only03, ENDPOINT).version).toBe("0.3");
  });

  it("refuses a card naming another host or path, no JSON-RPC interface, another version or another transport", () => {
    const iface = (url: string, extra: Record<string, string> = {}) => ({ supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0", ...extra }] });
    expect(() => checkCard("b", iface("http://evil.test:8080/a2a/app"), ENDPOINT)).toThrow(/card of agent b names another endpoint/);
    expect(() => checkCard("b", iface("http://peer.test:8081/a2a/app"), ENDPOINT)).toThrow(/another endpoint/);
    expect(() => checkCard("b", iface("http://peer.test:8080/a2a/other"), ENDPOINT)).toThrow(/another endpoint/);
    expect(() => checkCard("b", iface(ENDPOINT, { protocolBinding: "GRPC" }), ENDPOINT)).toThrow(/no JSON-RPC interface/);
    expect(() => checkCard("b", iface(ENDPOINT, { protocolVersion: "2.0" }), ENDPOINT)).toThrow(/no JSON-RPC interface/);
    expect(() => checkCard("b", { url: ENDPOINT, protocolVersion: "0.2.5" }, ENDPOINT)).toThrow(/no A2A version/);
    expect(() => checkCard("b", { url: ENDPOINT, protocolVersion: "0.3.0", preferredTransport: "GRPC" }, ENDPOINT)).toThrow(/JSON-RPC transport/);
    expect(() => checkCard("b", "<html>", ENDPOINT)).toThrow(/not a JSON object/);
  });
});

describe("readReply", () => {
  it("reads a 1.0 task, a 0.3 task and a bare message alike", () => {
    const v10 = readReply("b", ok({ jsonrpc: "2.0", id: 1, result: { task: { id: "t", contextId: "c", status: { state: "TASK_STATE_INPUT_REQUIRED" }, artifacts: [] } } }));
    expect(v10).toMatchObject({ kind: "task", taskId: "t", contextId: "c", state: "input-required" });
    const v03 = readReply("b", ok({ jsonrpc: "2.0", id: 1, result: { kind: "task", id: "t", contextId: "c", status: { state: "canceled" }, artifacts: [{ artifactId: "a", parts: [{ kind: "text", text: "x" }] }] } }));
    expect(peerResult(v03, 100)).toEqual({ task_id: "t", context_id: "c", state: "canceled", text: "x" });
    const message = readReply("b", ok({ jsonrpc: "2.0", id: 1, result: { message: { messageId: "m", role: "ROLE_AGENT", contextId: "c", parts: [{ text: "hello" }, { text: "there" }] } } }));
    expect(peerResult(message, 100)).toEqual({ task_id: null, context_id: "c", state: "completed", text: "hello\nthere", reply: "message" });
  });

  it("folds a stream: the task, status updates and artifact chunks (append joins the text)", () => {
    const ev = (result: unknown) => `data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, result })}\n\n`;
    const text =
      ": keep-alive\n\n" +
      ev({ task: { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } } }) +
      ev({ artifactUpdate: { taskId: "t", contextId: "c", artifact: { artifactId: "r", parts: [{ text: "echo: he" }] }, append: false, lastChunk: false } }) +
      ev({ artifactUpdate: { taskId: "t", contextId: "c", artifact: { artifactId: "r", parts: [{ text: "llo" }] }, append: true, lastChunk: true } }) +
      ev({ statusUpdate: { taskId: "t", contextId: "c", status: { state: "TASK_STATE_COMPLETED" } } });
    expect(peerResult(readReply("b", { status: 200, headers: {}, body: text }), 100)).toEqual({ task_id: "t", context_id: "c", state: "completed", text: "echo: hello" });
    const v03 = ev({ kind: "status-update", taskId: "t", contextId: "c", status: { state: "failed", message: { parts: [{ kind: "text", text: "no" }, { kind: "data", data: { type: "error", code: "run_failed" } }] } }, final: true });
    expect(peerResult(readReply("b", { status: 200, headers: {}, body: v03 }), 100)).toEqual({ task_id: "t", context_id: "c", state: "failed", text: "no", error_code: "run_failed" });
  });

  it("a JSON-RPC error, in a body or in a stream, is a tool error naming its code; so is an HTTP error", () => {
    expect(() => readReply("b", ok({ jsonrpc: "2.0", id: 1, error: { code: -32001, message: "<untrusted>" } }))).toThrow("the agent b answered with JSON-RPC error -32001 (task not found)");
    expect(() => readReply("b", { status: 200, headers: {}, body: `data: ${JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: 7 } })}\n\n` })).toThrow(/JSON-RPC error 7$/);
    expect(() => readReply("b", { status: 401, headers: {}, body: "" })).toThrow(/answered HTTP 401/);
    expect(() => readReply("b", ok({ jsonrpc: "2.0", id: 1, result: { what: 1 } }))).toThrow(/not a task or a message/);
  });
});

describe("the result and the ids", () => {
  it("capText counts code points and marks a cut", () => {
    expect(capText("abc", 3)).toBe("abc");
    expect(capText("😀😀😀😀", 3)).toBe("😀😀😀[truncated]");
    expect(capText("😀😀", 3)).toBe("😀😀");
  });

  it("the context id is a UUID (version 8, a thread id under either runtime), stable per (thread, API, user) and different when any changes", async () => {
    const id = await contextIdFor("thread-1", "b", "alice");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await contextIdFor("thread-1", "b", "alice")).toBe(id);
    const others = await Promise.all([contextIdFor("thread-2", "b", "alice"), contextIdFor("thread-1", "c", "alice"), contextIdFor("thread-1", "b", "bob")]);
    expect(new Set([id, ...others]).size).toBe(4);
  });
});

describe("policy/a2a-peer.yaml", () => {
  it("lets the planner's tools read the card at <a2a.path>/.well-known/agent-card.json and ask; streaming is denied", () => {
    const policy = loadPolicy(readFileSync(new URL("../../policy/a2a-peer.yaml", import.meta.url), "utf8"));
    const [planner] = describePeers(policy, new Map([["planner", "https://planner.example"]]));
    expect(planner).toMatchObject({ cardPath: "/a2a/v1/.well-known/agent-card.json", endpoint: "https://planner.example/a2a/v1" });
    expect(planner!.allows).toMatchObject({ card: "free", SendMessage: "free", SendStreamingMessage: "refused", GetTask: "free", CancelTask: "free" });
    expect(planner!.allows.approve.SendMessage).toBe("gated");
  });
});

describe("replaying relayed decisions", () => {
  it("a decision already sent and answered is not sent again: its kept answer is the peer's task", async () => {
    const { replayDecisions } = await import("../../src/a2a/peers/relay.js");
    const sent: unknown[] = [];
    const answer = { status: 200, headers: {}, body: { jsonrpc: "2.0", id: "c1-2", result: { task: { id: "t-9", contextId: "ctx-1", status: { state: "TASK_STATE_COMPLETED" }, artifacts: [{ name: "response", parts: [{ text: "ordered" }] }] } } } };
    const session = { peer: { name: "b" }, post: async (body: unknown) => void sent.push(body) } as never;
    const replayed = await replayDecisions(session, [
      { approvalId: "a-1", status: "approved", body: null, answer, nested: { approval_id: "p-1", digest: `sha256:${"b".repeat(64)}` }, comment: null },
    ]);
    expect(sent).toEqual([]);
    expect(replayed.task).toMatchObject({ taskId: "t-9", state: "completed" });
    expect(replayed.rejected).toBe(false);
  });
});
