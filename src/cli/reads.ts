/// <reference types="node" />
/**
 * The commands that read or delete: `threads`, `messages`, `delete`, `approvals`, `card`. People
 * get one line per row; `--json` gives one JSON object per line (a list as one row a line).
 */
import { safeJson, safeLine, safeText } from "./escape.js";
import { type Client, problemOf, seg } from "./http.js";
import type { Printer } from "./output.js";

type Row = Record<string, unknown>;

async function getJson(client: Client, p: Printer, path: string): Promise<unknown | undefined> {
  const res = await client.send("GET", path);
  if (res.status !== 200) {
    p.error(await problemOf(res));
    return undefined;
  }
  return res.json();
}

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  return q.size > 0 ? `?${q}` : "";
}

function rows(p: Printer, list: Row[], human: (r: Row) => string, empty: string): number {
  for (const r of list) p.record(r);
  p.text(list.length === 0 ? `${empty}\n` : `${list.map((r) => safeLine(human(r))).join("\n")}\n`);
  return 0;
}

export async function threads(client: Client, p: Printer, page: { limit?: number | undefined; offset?: number | undefined }): Promise<number> {
  const list = (await getJson(client, p, `/threads${query(page)}`)) as Row[] | undefined;
  if (!list) return 1;
  return rows(p, list, (t) => `${String(t.thread_id)}  updated ${String(t.updated_at)}`, "(no threads)");
}

export async function messages(client: Client, p: Printer, threadId: string): Promise<number> {
  const list = (await getJson(client, p, `/threads/${seg(threadId)}/messages`)) as Row[] | undefined;
  if (!list) return 1;
  for (const m of list) p.record(m);
  for (const m of list) {
    if (m.role === "tool") p.text(`← ${safeLine(String(m.name))}${m.is_error ? " failed" : ""}: ${safeLine(String(m.content))}\n`);
    else {
      if (m.content !== "" || m.role === "user") p.text(`${String(m.role)}: ${safeText(String(m.content))}\n`);
      for (const call of (m.tool_calls ?? []) as Row[]) p.text(`→ ${safeLine(String(call.name))} ${safeJson(call.args)}\n`);
    }
  }
  return 0;
}

export async function deleteThread(client: Client, p: Printer, threadId: string): Promise<number> {
  const res = await client.send("DELETE", `/threads/${seg(threadId)}`);
  if (res.status !== 204) {
    p.error(await problemOf(res));
    return 1;
  }
  p.record({ deleted: threadId });
  p.text(`deleted ${safeLine(threadId)}\n`);
  return 0;
}

export async function approvals(client: Client, p: Printer, filter: { status?: string | undefined; limit?: number | undefined; offset?: number | undefined }): Promise<number> {
  const list = (await getJson(client, p, `/approvals${query(filter)}`)) as Row[] | undefined;
  if (!list) return 1;
  return rows(
    p,
    list,
    (a) => `${String(a.approval_id)}  ${String(a.status).padEnd(8)}  thread ${String(a.thread_id)}  ${String(a.method)} ${String(a.path)} on ${String(a.api)}  ${String(a.created_at)}`,
    "(no approvals)",
  );
}

export async function card(client: Client, p: Printer, agent: string): Promise<number> {
  const c = (await getJson(client, p, `/a2a/${seg(agent)}/.well-known/agent-card.json`)) as Row | undefined;
  if (!c) return 1;
  p.record(c);
  const interfaces = (c.supportedInterfaces ?? []) as Row[];
  const caps = (c.capabilities ?? {}) as Row;
  const lines = [
    `${String(c.name)} ${String(c.version ?? "")}`.trim(),
    `  ${String(c.description ?? "")}`,
    ...interfaces.map((i) => `  ${String(i.protocolBinding)} ${String(i.protocolVersion)} at ${String(i.url)}`),
    `  streaming: ${caps.streaming ? "yes" : "no"}`,
    `  skills: ${((c.skills ?? []) as Row[]).map((s) => String(s.id)).join(", ")}`,
    `  security: ${Object.keys((c.securitySchemes ?? {}) as Row).join(", ") || "none"}`,
  ];
  p.text(`${lines.map(safeLine).join("\n")}\n`);
  return 0;
}
