/// <reference types="node" />
/**
 * A run's event stream (spec 6.1) shown as it arrives, read through the project's one SSE
 * decoder: the answer's text as it is written, each tool call and its result, then the status,
 * token usage and latency. Under --json each event is one line `{"event", "data"}`. A stream that
 * ends without `message.end` or `error` was cut (spec 6.1: a failed run), and so is one whose
 * connection breaks: both exit 1.
 */
import type { PublicApproval } from "../approvals/view.js";
import { sseEvents } from "../sse-decode.js";
import { safeJson, safeLine, safeText } from "./escape.js";
import type { Printer } from "./output.js";

/** An approval as the service shows it (spec 2.3). */
export type ShownApproval = PublicApproval;

export interface RunOutcome {
  /** 0 a run that ended (ok, step limit, waiting for approval); 1 failed, refused or cut. */
  readonly code: 0 | 1;
  readonly threadId: string | undefined;
  readonly status: string | undefined;
  /** Pending approvals of a run that paused. */
  readonly approvals: readonly ShownApproval[];
}

type Data = Record<string, unknown>;

export async function showRun(res: Response, p: Printer, options: { knownThread?: string | undefined } = {}): Promise<RunOutcome> {
  let threadId: string | undefined;
  let atLineStart = true;
  const write = (s: string) => {
    if (s === "") return;
    p.text(s);
    atLineStart = s.endsWith("\n");
  };
  const newline = () => atLineStart || write("\n");
  let end: Data | undefined;
  let failed: Data | undefined;
  try {
    for await (const frame of sseEvents(res.body)) {
      let data: Data;
      try {
        data = JSON.parse(frame.data) as Data;
      } catch {
        continue;
      }
      if (p.json) p.record({ event: frame.event, data });
      switch (frame.event) {
        case "message.start":
          threadId = String(data.thread_id);
          if (data.decision !== undefined) write(`[${data.decision === "approve" ? "approved" : "rejected"}: approval ${safeLine(String(data.approval_id))}; the run resumes]\n`);
          else if (threadId !== options.knownThread) write(`[thread ${safeLine(threadId)}]\n`);
          break;
        case "message.delta":
          write(safeText(String(data.text ?? "")));
          break;
        case "tool.call":
          newline();
          write(`→ ${safeLine(String(data.name))} ${safeJson(data.args ?? {})}\n`);
          break;
        case "tool.result": {
          newline();
          const result = typeof data.result === "string" ? safeLine(data.result) : safeJson(data.result);
          write(`← ${safeLine(String(data.name))}${data.is_error ? " failed" : ""}: ${result}\n`);
          break;
        }
        case "message.end":
          end = data;
          newline();
          write(`[${statusLine(data)}]\n`);
          break;
        case "error":
          failed = data;
          newline();
          break;
      }
      if (end || failed) break;
    }
  } catch (error) {
    newline();
    p.error((error as Error).name === "AbortError" ? "stopped: the run is cancelled" : `the stream broke before the run ended (${safeLine((error as Error).message)})`);
    return { code: 1, threadId, status: undefined, approvals: [] };
  }
  if (failed) {
    const detail = typeof failed.detail === "string" ? ` (${safeLine(failed.detail)})` : "";
    p.error(`the run failed: ${safeLine(String(failed.code))}: ${safeLine(String(failed.message))}${detail}`);
    return { code: 1, threadId, status: "error", approvals: [] };
  }
  if (!end) {
    newline();
    p.error("the stream ended before the run did (cut): the run failed");
    return { code: 1, threadId, status: undefined, approvals: [] };
  }
  const approvals = ((end.approvals ?? (end.approval ? [end.approval] : [])) as ShownApproval[]).filter((a) => a.status === "pending");
  return { code: 0, threadId: String(end.thread_id ?? threadId), status: String(end.status), approvals };
}

function statusLine(end: Data): string {
  const usage = (end.usage ?? {}) as { input_tokens?: number; output_tokens?: number };
  const status = end.status === "awaiting_approval" ? "awaiting approval" : end.status === "step_limit" ? "step limit reached" : safeLine(String(end.status));
  return `${status} · tokens ${usage.input_tokens ?? 0} in, ${usage.output_tokens ?? 0} out · ${Number(end.latency_ms ?? 0)} ms`;
}
