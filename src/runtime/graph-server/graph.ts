/// <reference types="node" />
/**
 * Our agent loop as a LangGraph StateGraph (`graphs.agent` in langgraph.json), built from the
 * same steps as the standalone loop (agent/loop.ts's Loop), so the two runtimes cannot drift:
 *
 *   START -> model -> one `tool` branch per call (Send) -> gate -> model ... -> END
 *
 * - `model`: one model turn; an answer ends the run, tool calls are checkpointed and announced;
 * - `tool`: one tool call, through the policy client; a gated call registers its approval and
 *   writes no result;
 * - `gate`: after the turn's branches, a call left without a result waits for a decision: the run
 *   records its pause and stops with interrupt(). Our approval route resumes it (runs/resume.ts
 *   reads the checkpointed messages, carries the decided calls out, sends an approved call once,
 *   and goes on), so a native resume of that interrupt is refused by the auth handler;
 * - `record`: a no-op our own runs (`/chat`, resumed approvals) write their messages as, so a
 *   checkpoint they leave ends the graph.
 *
 * State is the thread's messages in this service's own message shape; events go out on the
 * server's `custom` stream mode, as the `/chat` stream would send them.
 */
import { randomUUID } from "node:crypto";
import { Annotation, Command, END, interrupt, Send, START, StateGraph } from "@langchain/langgraph";
import type { ParsedCall } from "../../agent/tool-calls.js";
import type { Message } from "../../store/ports.js";
import { currentHost } from "./host.js";
import { type NodeConfig, nativeRun } from "./native-run.js";
import { RECORD_NODE } from "./server-threads.js";

const State = Annotation.Root({
  messages: Annotation<Message[]>({ reducer: (left, right) => [...left, ...[right].flat().map(asMessage)], default: () => [] }),
});
type AgentState = typeof State.State;

/** What one tool branch is sent: the call as the model made it and the words of its turn. */
interface ToolInput {
  readonly call: ParsedCall;
  readonly reason: string;
}

async function modelNode(state: AgentState, config: NodeConfig): Promise<Command> {
  const run = nativeRun(await currentHost(), config);
  const out: Message[] = [];
  const loop = run.loop(state.messages, out);
  for (;;) {
    const turn = await loop.modelTurn();
    const answer = await loop.structuredAnswer(turn);
    if (answer === "retry") continue;
    const done = answer ?? (turn.calls.length === 0 ? await loop.answer(turn.text) : undefined);
    if (done) {
      run.forget();
      return new Command({ update: { messages: [...out, ...(done.final ?? [])] }, goto: END });
    }
    const parsed = await loop.announce(turn);
    return new Command({ update: { messages: out }, goto: parsed.map((call) => new Send("tool", { call, reason: turn.text } satisfies ToolInput)) });
  }
}

async function toolNode(input: ToolInput, config: NodeConfig): Promise<{ messages: Message[] }> {
  const run = nativeRun(await currentHost(), config);
  const out: Message[] = [];
  await run.loop([], out).toolStep([input.call], input.reason);
  return { messages: out };
}

async function gateNode(state: AgentState, config: NodeConfig): Promise<Record<string, never>> {
  if (openCalls(state.messages).length === 0) return {};
  const run = nativeRun(await currentHost(), config);
  await run.recordPause();
  const approvals = run.approvalIds();
  run.forget();
  interrupt({ type: "approval_request", approval_ids: approvals, resume_with: "POST /threads/{thread_id}/approvals/{approval_id}" });
  return {};
}

/** The calls of the last tool turn that have no result: they wait for a decision. */
function openCalls(messages: readonly Message[]): string[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "assistant" || !m.tool_calls?.length) continue;
    const answered = new Set(messages.slice(i + 1).flatMap((r) => (r.role === "tool" ? [r.tool_call_id] : [])));
    return m.tool_calls.filter((c) => !answered.has(c.id)).map((c) => c.id);
  }
  return [];
}

/**
 * Messages as the native API may send them (`{role: "user", content}`, LangChain's `human`, no
 * id) become this service's shape; ours pass unchanged.
 */
function asMessage(value: unknown): Message {
  const m = (value ?? {}) as { id?: unknown; role?: unknown; type?: unknown; content?: unknown };
  const id = typeof m.id === "string" && m.id !== "" ? m.id : randomUUID();
  const content = typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "");
  if ((m.role === "assistant" || m.role === "tool") && typeof m.content === "string" && typeof m.id === "string") return value as Message;
  return { id, role: "user", content };
}

export const graph = new StateGraph(State)
  // `record` among its ends only so the graph validates: nothing goes there but our own writes.
  .addNode("model", modelNode, { ends: ["tool", RECORD_NODE, END] })
  .addNode("tool", toolNode)
  .addNode("gate", gateNode)
  .addNode(RECORD_NODE, () => ({}))
  .addEdge(START, "model")
  .addEdge("tool", "gate")
  .addConditionalEdges("gate", (state: AgentState) => (openCalls(state.messages).length > 0 ? END : "model"), ["model", END])
  .addEdge(RECORD_NODE, END)
  .compile();

graph.name = "agent";

export default graph;
