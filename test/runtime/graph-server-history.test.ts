/**
 * The history budget in a graph-server native run: the graph runs its model node again for each
 * step of a turn, on the whole checkpointed thread. The older turns a turn is sent are chosen as
 * it starts, as a standalone run chooses them once, so they do not change between its steps.
 * Composed as the graph server composes the app (composeHost), without the server itself: the
 * node's run is driven directly with the recording fake model.
 */
import { afterEach, describe, expect, it } from "vitest";
import { HISTORY_CUT_NOTE } from "../../src/agent/history.js";
import type { Model, ModelRequest } from "../../src/agent/model.js";
import { createFakeModel } from "../../src/agent/providers/fake.js";
import { composeHost } from "../../src/runtime/graph-server/host.js";
import { nativeRun } from "../../src/runtime/graph-server/native-run.js";
import type { Message } from "../../src/store/ports.js";

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** A native run's model step on `thread` (budget MAX_HISTORY_TOKENS=300): what the model was sent. */
async function sentAtStep(thread: readonly Message[]): Promise<Pick<ModelRequest, "system" | "messages">> {
  const fake = createFakeModel();
  const sent: Pick<ModelRequest, "system" | "messages">[] = [];
  const model: Model = { ...fake, stream: (request) => (sent.push({ system: request.system, messages: [...request.messages] }), fake.stream(request)) };
  const { app, host } = await composeHost({ env: { APP_ENV: "dev", API_KEY: "k", MODEL_PROVIDER: "fake", MAX_HISTORY_TOKENS: "300" }, model });
  closing.push(() => app.close());
  const run = nativeRun(host, {
    configurable: { agent_principal: { id: "alice", roles: [], attributes: {}, actor: null }, thread_id: "00000000-0000-4000-8000-000000000001", run_id: "run-1" },
  });
  await run.loop(thread, []).modelTurn();
  expect(sent).toHaveLength(1);
  return sent[0]!;
}

const user = (id: string, content: string): Message => ({ id, role: "user", content });
const assistant = (id: string, content: string): Message => ({ id, role: "assistant", content });
const ids = (messages: readonly Message[]) => messages.map((m) => m.id);

// An older turn of 208 estimated tokens (two messages of 400 characters), then a turn that calls
// a tool: at its start it fits the budget with the older turn (8 + 208 of 300).
const older = [user("u1", "a".repeat(400)), assistant("a1", "b".repeat(400))];
const turnStart = user("u2", "/call whoami {}");
const call: Message = { id: "a2", role: "assistant", content: "", tool_calls: [{ id: "call_1", name: "whoami", args: {} }] };
// The call and its result make the turn alone 218 tokens: with the older turn, 426 of 300.
const result: Message = { id: "t2", role: "tool", tool_call_id: "call_1", name: "whoami", is_error: false, content: "r".repeat(800) };

describe("history budget under graph-server", () => {
  it("sends a turn's later steps the older turns its first step was sent", async () => {
    const first = await sentAtStep([...older, turnStart]);
    expect(ids(first.messages)).toEqual(["u1", "a1", "u2"]);
    expect(first.system).not.toContain(HISTORY_CUT_NOTE);
    // The second model step of the same turn: the thread now holds the call and its result.
    const second = await sentAtStep([...older, turnStart, call, result]);
    expect(ids(second.messages)).toEqual(["u1", "a1", "u2", "a2", "t2"]);
    expect(second.system).not.toContain(HISTORY_CUT_NOTE);
  });

  it("leaves out an older turn that did not fit as the turn started, at every step, and says so", async () => {
    const long = [user("u0", "z".repeat(800)), assistant("a0", "y".repeat(40)), ...older];
    const first = await sentAtStep([...long, turnStart]);
    expect(ids(first.messages)).toEqual(["u1", "a1", "u2"]);
    expect(first.system).toContain(HISTORY_CUT_NOTE);
    const second = await sentAtStep([...long, turnStart, call, result]);
    expect(ids(second.messages)).toEqual(["u1", "a1", "u2", "a2", "t2"]);
    expect(second.system).toContain(HISTORY_CUT_NOTE);
  });

  it("sends a thread with no user message as it is", async () => {
    const sent = await sentAtStep([assistant("a9", "hello")]);
    expect(ids(sent.messages)).toEqual(["a9"]);
  });
});
