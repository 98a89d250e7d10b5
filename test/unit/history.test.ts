import { describe, expect, it } from "vitest";
import { messageTokens, turnStartSettled, turnStartWindow, windowHistory, windowSettled } from "../../src/agent/history.js";
import { STEP_LIMIT_REPLY } from "../../src/agent/loop.js";
import { readHistory } from "../../src/runs/history.js";
import type { Message, Store } from "../../src/store/ports.js";

let n = 0;
const user = (chars: number): Message => ({ id: `m${n++}`, role: "user", content: "u".repeat(chars) });
const said = (chars: number): Message => ({ id: `m${n++}`, role: "assistant", content: "a".repeat(chars) });
const call = (id: string): Message => ({ id: `m${n++}`, role: "assistant", content: "", tool_calls: [{ id, name: "lookup", args: { q: "x" } }] });
const result = (id: string, chars: number): Message => ({ id: `m${n++}`, role: "tool", content: "r".repeat(chars), tool_call_id: id, name: "lookup", is_error: false });

describe("windowHistory", () => {
  it("estimates a quarter of the characters, tool calls included, plus 4 a message", () => {
    expect(messageTokens(user(8))).toBe(6);
    expect(messageTokens(user(9))).toBe(7);
    expect(messageTokens(call("c1"))).toBe(Math.ceil(("lookup".length + '{"q":"x"}'.length) / 4) + 4);
  });

  it("counts characters as code points: an emoji is one, not two UTF-16 units", () => {
    expect(messageTokens({ id: "e", role: "user", content: "😀".repeat(400) })).toBe(104);
    const args = { q: "😀".repeat(8) };
    expect(messageTokens({ id: "c", role: "assistant", content: "", tool_calls: [{ id: "c", name: "lookup", args }] })).toBe(Math.ceil((6 + 16) / 4) + 4);
  });

  it("keeps the newest whole turns that fit and says it cut; a thread that fits is sent whole", () => {
    const turns = [[user(396), said(396)], [user(396), call("c1"), result("c1", 396), said(396)], [user(396), said(396)]];
    const all = turns.flat();
    const [t1, t2, t3] = turns.map((t) => t.reduce((sum, m) => sum + messageTokens(m), 0)) as [number, number, number];
    expect(windowHistory(all, 10_000)).toEqual({ messages: all, cut: false });
    expect(windowHistory(all, t1 + t2 + t3)).toEqual({ messages: all, cut: false });
    expect(windowHistory(all, t1 + t2 + t3 - 1)).toEqual({ messages: [...turns[1]!, ...turns[2]!], cut: true });
    expect(windowHistory(all, t2 + t3)).toEqual({ messages: [...turns[1]!, ...turns[2]!], cut: true });
    expect(windowHistory(all, t2 + t3 - 1)).toEqual({ messages: turns[2], cut: true });
  });

  it("keeps the current turn whole however large, and starts no window inside a turn", () => {
    const all = [user(40), said(40), user(4000), call("c9"), result("c9", 4000)];
    expect(windowHistory(all, 10)).toEqual({ messages: all.slice(2), cut: true });
    // A page that begins inside a turn: the window starts at its first user message.
    const page = [result("c0", 40), said(40), user(40), said(40)];
    expect(windowHistory(page, 10_000)).toEqual({ messages: page.slice(2), cut: true });
    // The entire thread, told so: sent as it is when it fits, whatever it begins with.
    expect(windowHistory(page, 10_000, true)).toEqual({ messages: page, cut: false });
    expect(windowHistory(page, 20, true)).toEqual({ messages: page.slice(2), cut: true });
    // Nothing starts a turn: sent as it is.
    expect(windowHistory([said(40), said(40)], 10)).toEqual({ messages: [expect.anything(), expect.anything()], cut: false });
  });

  it("keeps the turn the step limit ended with the turn after it (its continue), whatever their size", () => {
    const stopped = { id: `m${n++}`, role: "assistant", content: `worked on it\n\n${STEP_LIMIT_REPLY}` } satisfies Message;
    const all = [user(40), said(40), user(4000), call("c7"), result("c7", 4000), stopped, user(8)];
    expect(windowHistory(all, 10)).toEqual({ messages: all.slice(2), cut: true });
    // Only the turn just before: an older stopped turn is windowed as any other.
    const later = [...all, said(8), user(8)];
    expect(windowHistory(later, 10)).toEqual({ messages: later.slice(-1), cut: true });
  });

  it("a page is settled only when older messages could not change its window", () => {
    const stopped = { id: `m${n++}`, role: "assistant", content: STEP_LIMIT_REPLY } satisfies Message;
    // Over the budget with the newest turn's start in it: settled.
    expect(windowSettled([said(400), user(8), said(400)], 10)).toBe(true);
    // Fits: an older turn might fit too.
    expect(windowSettled([user(8), said(8)], 10_000)).toBe(false);
    // The continue after a stopped turn whose start is older than the page: not settled until it is in.
    const tail = [result("c8", 4000), stopped, user(8)];
    expect(windowSettled(tail, 10)).toBe(false);
    expect(windowSettled([user(40), call("c8"), ...tail], 10)).toBe(true);
    // The newest turn starts the page: the turn before it may have been stopped, so read on.
    expect(windowSettled([user(400), said(400)], 10)).toBe(false);
  });

  it("a turn under way keeps the older turns chosen at its start: its own growth does not count", () => {
    const older = [user(400), said(400)];
    const turn = [user(8), call("c1"), result("c1", 4000)];
    const atStart = [...older, turn[0]!].reduce((sum, m) => sum + messageTokens(m), 0);
    expect(turnStartWindow([...older, ...turn], atStart)).toEqual({ messages: [...older, ...turn], cut: false });
    expect(windowHistory([...older, ...turn], atStart)).toEqual({ messages: turn, cut: true });
    expect(turnStartWindow([...older, ...turn], atStart - 1)).toEqual({ messages: turn, cut: true });
    // Nothing starts a turn: windowed as it is.
    const answers = [said(8), said(8)];
    expect(turnStartWindow(answers, 1)).toEqual({ messages: answers, cut: false });
    // Settled only once the turn's user message is read, and then by what came before it.
    expect(turnStartSettled([call("c2"), result("c2", 4000)], 10)).toBe(false);
    expect(turnStartSettled([said(400), ...turn], 10)).toBe(true);
    expect(turnStartSettled([said(8), ...turn], 10_000)).toBe(false);
    expect(windowSettled([said(8), ...turn], 10_000)).toBe(false);
    expect(windowSettled([said(8), ...turn], 1_000)).toBe(true);
    expect(turnStartSettled([said(8), ...turn], 1_000)).toBe(false);
  });

  it("a resumed turn that starts exactly at a page's start still gets the stopped turn before it", async () => {
    const stoppedTurn = [user(8), { id: `m${n++}`, role: "assistant", content: `w\n\n${STEP_LIMIT_REPLY}` } satisfies Message];
    const current: Message[] = [user(8)];
    for (let k = 0; current.length < 63; k++) current.push(call(`p${k}`), result(`p${k}`, 8));
    current.push(call("held"));
    const thread = [...stoppedTurn, ...current];
    expect(current).toHaveLength(64);
    const store = { getMessagePage: async (_id: string, page: { limit: number }) => thread.slice(-page.limit) } as unknown as Store;
    const { messages, whole } = await readHistory(store, "t", 100);
    expect(windowHistory(messages, 100, whole).messages[0]).toBe(stoppedTurn[0]);
    // As a resumed run reads it: the turn under way's own messages do not settle the page.
    const underWay = await readHistory(store, "t", 100, true);
    expect(turnStartWindow(underWay.messages, 100, underWay.whole).messages[0]).toBe(stoppedTurn[0]);
  });
});
