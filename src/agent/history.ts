/**
 * The history budget (MAX_HISTORY_TOKENS, issue 20): what of a thread the model is sent. Every
 * turn used to send the whole thread, so a turn's cost grew with the thread's length and a real
 * model's context overflowed long before the thread ended.
 *
 * The rule: the thread is cut into turns, each a user message and everything after it up to the
 * next user message (the answer, tool calls and their results, so a call is never separated from
 * its result). The newest whole turns whose size fits the budget are sent; older turns are left
 * out, and the system prompt then says so. The current turn is always sent whole, even when it
 * alone is over the budget, and so is the turn before it when the step limit ended that turn (a
 * `continue` resumes its work). The older turns are chosen as a turn starts and stay the same
 * while it grows, also across an approval (turnStartWindow). Sizes are estimated, as the fake
 * model counts tokens: a quarter of the characters (code points) of the content and tool calls
 * (rounded up), plus 4 per message.
 */
import { codePointLength } from "../json.js";
import type { Message } from "../store/ports.js";
import { STEP_LIMIT_REPLY } from "./loop.js";

/** Told to the model (after the system prompt) when older turns are left out. */
export const HISTORY_CUT_NOTE = "Earlier turns of this conversation are not shown here.";

/** The estimated tokens of one message. */
export function messageTokens(m: Message): number {
  let chars = codePointLength(m.content);
  if (m.role === "assistant" && m.tool_calls) for (const c of m.tool_calls) chars += codePointLength(c.name) + codePointLength(JSON.stringify(c.args));
  return Math.ceil(chars / 4) + 4;
}

/**
 * The newest whole turns of `messages` (in thread order) that fit `budget`, and whether anything
 * before them was left out. Unless `whole` says `messages` are the entire thread, they may begin
 * in the middle of a turn (a page of a longer thread), so a window starts at a user message. The
 * entire thread is sent as it is when it fits, whatever it begins with, and so are messages
 * with no user message at all (nothing in them starts a turn).
 */
export function windowHistory(messages: readonly Message[], budget: number, whole = false): { messages: Message[]; cut: boolean } {
  const { start, broke, tokens } = scan(messages, budget);
  // Without a break, `tokens` is the whole of `messages`.
  if (whole && !broke && tokens <= budget) return { messages: messages.slice(), cut: false };
  if (start <= 0) return { messages: messages.slice(), cut: false };
  return { messages: messages.slice(start), cut: true };
}

/**
 * The window of a turn under way: the older turns chosen as the turn started (`messages` up to
 * the newest user message), then every message of the turn since. A run that stops and resumes
 * within one turn (an approval) is sent the older turns it started with, however far its turn
 * grew with tool results in between; choosing again with the grown turn would drop an older
 * turn the model had seen a step earlier. Messages with no user message are windowed as they are.
 */
export function turnStartWindow(messages: readonly Message[], budget: number, whole = false): { messages: Message[]; cut: boolean } {
  const start = newestUser(messages);
  if (start < 0) return windowHistory(messages, budget, whole);
  const w = windowHistory(messages.slice(0, start + 1), budget, whole);
  for (let i = start + 1; i < messages.length; i++) w.messages.push(messages[i]!);
  return w;
}

/** As windowSettled, for the window turnStartWindow chooses: false until the turn's user message is read. */
export function turnStartSettled(messages: readonly Message[], budget: number): boolean {
  const start = newestUser(messages);
  return start >= 0 && windowSettled(messages.slice(0, start + 1), budget);
}

function newestUser(messages: readonly Message[]): number {
  let i = messages.length - 1;
  while (i >= 0 && messages[i]!.role !== "user") i--;
  return i;
}

/**
 * True when messages older than `messages` could not change its window: an older turn was
 * already found not to fit, or everything here is over the budget and the turns that are always
 * sent (the newest, and a turn the step limit ended just before it) start here.
 */
export function windowSettled(messages: readonly Message[], budget: number): boolean {
  const { broke, tokens, kept, mustKeep, newest } = scan(messages, budget);
  // A newest turn that starts the page: whether the step limit ended the turn before it is not known yet.
  return broke || (tokens > budget && kept >= mustKeep && newest > 0);
}

/** From the newest message back: where the window starts, and how the search ended. */
function scan(messages: readonly Message[], budget: number): { start: number; broke: boolean; tokens: number; kept: number; mustKeep: number; newest: number } {
  let tokens = 0;
  let newest = -1;
  let start = -1;
  let kept = 0;
  let mustKeep = 1;
  for (let i = messages.length - 1; i >= 0; i--) {
    tokens += messageTokens(messages[i]!);
    if (messages[i]!.role !== "user") continue;
    // The newest turn is kept whatever its size, and so is a turn the step limit stopped just
    // before it (its `continue` resumes that work); an older one only while the total fits.
    if (kept >= mustKeep && tokens > budget) return { start, broke: true, tokens, kept, mustKeep, newest };
    if (kept === 0) {
      newest = i;
      if (stoppedAtStepLimit(messages[i - 1])) mustKeep = 2;
    }
    start = i;
    kept++;
  }
  return { start, broke: false, tokens, kept, mustKeep, newest };
}

/** The closing reply of a turn the step limit ended (agent/loop.ts writes it). */
function stoppedAtStepLimit(m: Message | undefined): boolean {
  return m?.role === "assistant" && m.content.endsWith(STEP_LIMIT_REPLY);
}
