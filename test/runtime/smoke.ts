/**
 * One smoke suite for every runtime (issue 16), written once and run against each real runtime
 * (hono's runtime-tests, h3's describeMatrix): health and readiness, bearer auth, a chat with a
 * tool call, a gated call approved and sent once, an A2A SendMessage, and a 409 thread_busy.
 *
 *   describeSmoke("node, memory", (setup) => start a service with setup.env, return its base URL)
 *
 * The service under test runs with `setup.env`: the fake model, the key, and the example tools
 * (examples/tools/tickets.mjs as TOOLS_MODULE, its policy as API_POLICY_PATH) calling a recording
 * upstream on loopback. A runtime without files (workerd) bundles SMOKE_TOOLS_MODULE itself and
 * passes `setup.policyText` as the API_POLICY binding.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSse, readRest, readUntil } from "../helpers.js";
import { recordingUpstream } from "../support/upstream.js";

/** The example TOOLS_MODULE (list_tickets, and create_ticket, which waits for approval). */
export const SMOKE_TOOLS_MODULE = fileURLToPath(new URL("../../examples/tools/tickets.mjs", import.meta.url));
/** Its API policy: GET /tickets free, POST /tickets gated for the requester. */
export const SMOKE_POLICY_PATH = fileURLToPath(new URL("../../examples/tools/api-policy.yaml", import.meta.url));

export const SMOKE_KEY = "smoke-key-0123456789";
const TICKETS_TOKEN = "ticket-token";

export interface SmokeSetup {
  /** The environment to serve with (TICKETS_API_URL points at the recording upstream). */
  readonly env: Readonly<Record<string, string>>;
  /** The policy document's text, for a runtime that reads no files. */
  readonly policyText: string;
}

export interface SmokeService {
  /** Where the service answers, without a trailing slash. */
  readonly base: string;
  /** Stops it (called once, after the suite). */
  stop(): Promise<void>;
}

export type StartSmoke = (setup: SmokeSetup) => Promise<SmokeService>;

export function describeSmoke(name: string, start: StartSmoke): void {
  describe(`smoke: ${name}`, () => {
    const upstream = recordingUpstream();
    let service: SmokeService | undefined;
    let base = "";

    beforeAll(async () => {
      service = await start({
        env: {
          API_KEY: SMOKE_KEY,
          MODEL_PROVIDER: "fake",
          MODEL_NAME: "fake",
          LOG_FORMAT: "json",
          TOOLS_MODULE: SMOKE_TOOLS_MODULE,
          API_POLICY_PATH: SMOKE_POLICY_PATH,
          TICKETS_API_URL: `${upstream.base}/api`,
          TICKETS_API_TOKEN: TICKETS_TOKEN,
        },
        policyText: readFileSync(SMOKE_POLICY_PATH, "utf8"),
      });
      base = service.base;
    }, 60_000);
    afterAll(async () => {
      await service?.stop();
    }, 30_000);

    const send = (method: string, path: string, body?: unknown, key: string | null = SMOKE_KEY) =>
      fetch(`${base}${path}`, {
        method,
        headers: { ...(key !== null ? { Authorization: `Bearer ${key}` } : {}), ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    const chat = async (body: Record<string, unknown>) => parseSse(await (await send("POST", "/chat", body)).text());

    it("health and readiness", async () => {
      const health = await send("GET", "/health", undefined, null);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: "ok" });
      const ready = await send("GET", "/ready", undefined, null);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: "ready" });
    });

    it("bearer auth (no key, a wrong key: 401)", async () => {
      expect((await send("POST", "/chat", { message: "hi" }, null)).status).toBe(401);
      expect((await send("POST", "/chat", { message: "hi" }, "not-the-key")).status).toBe(401);
      expect((await send("GET", "/threads", undefined, "not-the-key")).status).toBe(401);
      expect((await send("GET", "/threads")).status).toBe(200);
    });

    it("a chat with a tool call (through the policy client)", async () => {
      upstream.hits.length = 0;
      const events = await chat({ message: '/call list_tickets {"limit":2}\n/answer listed' });
      expect(events.find((e) => e.event === "tool.call")?.data).toMatchObject({ name: "list_tickets", args: { limit: 2 } });
      const result = events.find((e) => e.event === "tool.result")!;
      expect(result.data).toMatchObject({ name: "list_tickets", is_error: false });
      expect(JSON.stringify(result.data.result)).toContain("created");
      expect(events.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      expect(upstream.hits.map((h) => [h.method, h.url, h.headers.authorization])).toEqual([["GET", "/api/tickets?status=open&limit=2", `Bearer ${TICKETS_TOKEN}`]]);
    });

    it("a gated call approved (sent once)", async () => {
      upstream.hits.length = 0;
      const paused = await chat({ message: '/call create_ticket {"title":"printer on fire"}' });
      const end = paused.at(-1)!;
      expect(end.data.status).toBe("awaiting_approval");
      const approval = end.data.approval as { approval_id: string };
      expect(end.data.approval).toMatchObject({ api: "tickets", method: "POST", path: "/tickets" });
      expect(upstream.hits).toEqual([]);
      const res = await send("POST", `/threads/${end.data.thread_id}/approvals/${approval.approval_id}`, { decision: "approve" });
      expect(res.status).toBe(200);
      const resumed = parseSse(await res.text());
      expect(resumed.at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      // exactly the recorded call (a JSON store may keep the arguments' keys in another order)
      expect(upstream.hits.map((h) => [h.method, h.url, JSON.parse(h.body)])).toEqual([["POST", "/api/tickets", { title: "printer on fire", body: "" }]]);
      // decided once: a second decision changes nothing and sends nothing
      const again = await send("POST", `/threads/${end.data.thread_id}/approvals/${approval.approval_id}`, { decision: "approve" });
      expect(again.status).toBeGreaterThanOrEqual(400);
      await again.body?.cancel();
      expect(upstream.hits).toHaveLength(1);
    });

    it("A2A SendMessage (task completed)", async () => {
      const res = await fetch(`${base}/a2a/app`, {
        method: "POST",
        headers: { Authorization: `Bearer ${SMOKE_KEY}`, "Content-Type": "application/json", "A2A-Version": "1.0" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "SendMessage",
          params: { message: { messageId: `smoke-${Date.now()}`, role: "ROLE_USER", parts: [{ text: "hello over a2a" }] } },
        }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { error?: unknown; result: { task: { status: { state: string }; artifacts?: { parts: { text?: string }[] }[] } } };
      expect(body.error).toBeUndefined();
      expect(body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
      expect(body.result.task.artifacts?.[0]?.parts.map((p) => p.text ?? "").join("")).toBe("echo: hello over a2a");
    });

    it("409 thread_busy (a second chat while a run goes on)", async () => {
      const thread_id = `smoke-busy-${Date.now()}`;
      const first = await send("POST", "/chat", { message: "/sleep 1500\nslow", thread_id });
      expect(first.status).toBe(200);
      const { reader, text: head } = await readUntil(first, (events) => events.some((e) => e.event === "message.start"));
      const busy = await send("POST", "/chat", { message: "second", thread_id });
      expect(busy.status).toBe(409);
      expect(await busy.json()).toMatchObject({ code: "thread_busy" });
      expect(parseSse(await readRest(reader, head)).at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
      // free again once the run ended
      expect((await chat({ message: "third", thread_id })).at(-1)).toMatchObject({ event: "message.end", data: { status: "ok" } });
    });
  });
}
