/**
 * What a run came to, read off its events: the answer text, a structured answer, the approvals
 * it waits for, or the error code. A2A tasks are built from it.
 */
import type { PublicApproval } from "../approvals/view.js";
import type { JsonValue } from "../json.js";
import type { RunEvent } from "./events.js";

export interface RunOutcome {
  readonly ended: "ok" | "step_limit" | "awaiting_approval" | "error" | "none";
  readonly text: string;
  readonly structured: JsonValue | undefined;
  readonly approvals: readonly PublicApproval[];
  readonly errorCode: string | undefined;
  readonly runId: string | undefined;
}

export function outcomeCollector(): { observe(event: RunEvent): void; outcome(): RunOutcome } {
  let text = "";
  let ended: RunOutcome["ended"] = "none";
  let structured: JsonValue | undefined;
  let approvals: readonly PublicApproval[] = [];
  let errorCode: string | undefined;
  let runId: string | undefined;
  return {
    observe(event) {
      if (event.type === "message.start") runId = event.run_id;
      else if (event.type === "message.delta") text += event.text;
      else if (event.type === "message.end") {
        ended = event.status;
        structured = event.structured_response;
        approvals = event.approvals ?? [];
      } else if (event.type === "error") {
        ended = "error";
        errorCode = event.code;
      }
    },
    outcome: () => ({ ended, text, structured, approvals, errorCode, runId }),
  };
}
