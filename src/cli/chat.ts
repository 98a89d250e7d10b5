/// <reference types="node" />
/**
 * `agentcli chat`: one message and its streamed answer, or, with no message on a terminal, a
 * session that sends each line typed (a line ending in `\` continues on the next, for the fake
 * model's multi-line directives) on one thread until end of input (Ctrl-D). In the session Ctrl-C
 * stops the run being streamed (the service cancels it when the client goes) and ends the session
 * when nothing runs.
 */
import { followRun, type Session } from "./decide.js";
import { problemOf } from "./http.js";
import type { Terminal } from "./prompt.js";
import { type ShownApproval, showRun } from "./stream.js";

/** One message: its run shown, approvals followed. */
export async function chatOnce(s: Session, message: string, thread: string | undefined, signal?: AbortSignal): Promise<{ code: number; thread: string | undefined }> {
  const res = await s.client.send("POST", "/chat", { body: { message, ...(thread ? { thread_id: thread } : {}) }, accept: "text/event-stream", ...(signal ? { signal } : {}) });
  if (res.status !== 200) {
    const body = res.status === 409 ? ((await res.clone().json().catch(() => undefined)) as { code?: string; approvals?: ShownApproval[] } | undefined) : undefined;
    s.p.error(await problemOf(res));
    // The thread waits for a decision: show what waits and how to decide it (asked on a terminal).
    // The message itself was refused, whatever is decided now: exit 1.
    if (body?.code === "approval_pending" && Array.isArray(body.approvals) && body.approvals.length > 0)
      await followRun(s, { code: 0, threadId: thread, status: "awaiting_approval", approvals: body.approvals.filter((a) => a.status === "pending") }, STARTED);
    return { code: 1, thread };
  }
  const outcome = await showRun(res, s.p, { knownThread: thread });
  return { code: await followRun(s, outcome, STARTED), thread: outcome.threadId ?? thread };
}

/** A chat's runs are the caller's own (the thread is its): it is their requester. */
const STARTED = { started: true } as const;

export async function chatSession(s: Session, terminal: Terminal, thread: string | undefined): Promise<number> {
  s.p.text("Type a message and press Enter (a line ending in \\ continues). Ctrl-D ends the session.\n");
  let code = 0;
  let current = thread;
  for (;;) {
    const message = await readMessage(terminal);
    if (message === undefined) break;
    if (message.trim() === "") continue;
    const abort = new AbortController();
    terminal.onInterrupt(() => abort.abort());
    try {
      const turn = await chatOnce(s, message, current, abort.signal);
      code = turn.code;
      current = turn.thread;
    } catch (error) {
      if ((error as Error).name !== "AbortError") throw error;
      s.p.error("stopped");
      code = 1;
    } finally {
      terminal.onInterrupt(undefined);
    }
  }
  s.p.text("\n");
  return code;
}

async function readMessage(terminal: Terminal): Promise<string | undefined> {
  const parts: string[] = [];
  let line = await terminal.ask("you> ");
  while (line !== undefined && line.endsWith("\\")) {
    parts.push(line.slice(0, -1));
    line = await terminal.ask("...> ");
  }
  if (line === undefined) return parts.length > 0 ? parts.join("\n") : undefined;
  parts.push(line);
  return parts.join("\n");
}
