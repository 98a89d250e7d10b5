/**
 * The fake model (CONTRACT section 3): deterministic, no network. Directives are the lines of
 * the run's user message that start with `/`; other lines are the text.
 */
import { ModelError } from "../../errors.js";
import { sleep } from "../../clock.js";
import { codePointLength, nextCodePoint, singleUnits } from "../../json.js";
import type { Message } from "../../store/ports.js";
import { FINAL_ANSWER_TOOL, STRUCTURED_RETRY_PREFIX } from "../structured.js";
import { INVALID_ARGUMENTS_PREFIX, MAX_ARGUMENT_RETRIES, type Model, type ModelEvent, type ModelRequest } from "../model.js";

interface Script {
  turns: { name: string; args: string }[][];
  loop: { name: string; args: string } | null;
  answer: string | null;
  json: string[];
  sleepMs: number;
  error: boolean;
  text: string;
}

export function parseScript(message: string): Script {
  const script: Script = { turns: [], loop: null, answer: null, json: [], sleepMs: 0, error: false, text: "" };
  const text: string[] = [];
  let current: { name: string; args: string }[] = [];
  for (const line of message.split("\n")) {
    if (!line.startsWith("/")) {
      text.push(line);
      continue;
    }
    const [word = "", rest = ""] = splitOnce(line.slice(1));
    if (word === "call" || word === "loop") {
      const [name = "", args = ""] = splitOnce(rest);
      if (word === "loop") script.loop = { name, args };
      else current.push({ name, args });
    } else if (word === "step") {
      script.turns.push(current);
      current = [];
    } else if (word === "answer") script.answer = rest;
    else if (word === "json") script.json.push(rest);
    else if (word === "sleep") script.sleepMs = Math.max(0, Number(rest) || 0);
    else if (word === "error") script.error = true;
    else text.push(line);
  }
  script.turns.push(current);
  script.turns = script.turns.filter((t) => t.length > 0);
  script.text = text.join("\n");
  return script;
}

function splitOnce(s: string): [string, string] {
  const i = s.indexOf(" ");
  return i < 0 ? [s, ""] : [s.slice(0, i), s.slice(i + 1)];
}

/** `text` in pieces of at most `size` code points (a surrogate pair is never split). */
export function pieces(text: string, size = 16): string[] {
  const out: string[] = [];
  if (singleUnits(text)) {
    for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
    return out;
  }
  let start = 0;
  let count = 0;
  for (let i = 0; i < text.length; ) {
    i = nextCodePoint(text, i);
    if (++count === size) {
      out.push(text.slice(start, i));
      start = i;
      count = 0;
    }
  }
  if (start < text.length) out.push(text.slice(start));
  return out;
}

export function createFakeModel(name = "fake"): Model {
  const seq = { calls: 0 };
  return {
    provider: "fake",
    name,
    structuredOutput: true,
    stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      const start = lastUserIndex(request.messages);
      const text = start >= 0 ? request.messages[start]!.content : "";
      const script = parseScript(text);
      if (script.sleepMs > 0) return afterSleep(request, text, start, script.sleepMs, seq);
      // A turn that does not wait leaves the run's signal alone (the loop checks the run's stop
      // after the turn): a run that answers at once makes none.
      return turnOf(request, script, start, seq);
    },
  };
}

/**
 * A turn that waits first. Few locals: a run whose model sleeps holds this generator's frame
 * while it waits, and the script is read again after the sleep rather than kept through it.
 */
async function* afterSleep(request: ModelRequest, text: string, start: number, ms: number, seq: { calls: number }): AsyncIterable<ModelEvent> {
  await sleep(ms, request.signal);
  request.signal.throwIfAborted();
  yield* turnOf(request, parseScript(text), start, seq);
}

function turnOf(request: ModelRequest, script: Script, start: number, seq: { calls: number }): AsyncIterable<ModelEvent> {
  if (script.error) return new Replay([], new ModelError("fake model: /error directive"));
  return new Replay(turnEvents(request, script, start, seq));
}

/**
 * A turn known at once, handed out event by event as a model's stream is, without an async
 * generator's suspensions and promises for each event: the fake model stands for a model that
 * costs nothing, and the benchmarks measure the service around it.
 */
class Replay implements AsyncIterableIterator<ModelEvent> {
  private at = 0;
  constructor(
    private readonly events: readonly ModelEvent[],
    /** Thrown once the events are out. */
    private error?: Error,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ModelEvent>> {
    if (this.at < this.events.length) return Promise.resolve({ value: this.events[this.at++]!, done: false });
    const error = this.error;
    if (error) {
      this.error = undefined;
      return Promise.reject(error);
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  return(): Promise<IteratorResult<ModelEvent>> {
    this.at = this.events.length;
    this.error = undefined;
    return Promise.resolve({ value: undefined, done: true });
  }
}

/** What the script says for this turn: tool calls, or the answer's pieces, then the usage. */
function turnEvents(request: ModelRequest, script: Script, start: number, seq: { calls: number }): ModelEvent[] {
  const { messages } = request;
  const events: ModelEvent[] = [];
  const after = messages.slice(start + 1).filter((m) => !isRetryNote(m));
  const tries = messages.slice(start + 1).filter(isRetryNote).length;
  const turn = completedTurns(after);
  const input = Math.ceil(charsSent(request) / 4);
  let produced = 0;

  const calls = script.loop ? [script.loop] : script.turns[turn];
  const candidate = script.json[Math.min(tries, script.json.length - 1)];
  const finalTool = request.tools.some((t) => t.name === FINAL_ANSWER_TOOL);
  if ((!calls || calls.length === 0) && candidate !== undefined && finalTool) {
    // Structured answers, tool strategy: the answer is the final_answer tool's arguments.
    produced += codePointLength(candidate);
    events.push({ type: "tool_call", id: `call_${++seq.calls}`, name: FINAL_ANSWER_TOOL, arguments: candidate });
  } else if (calls && calls.length > 0) {
    for (const call of calls) {
      produced += codePointLength(call.name) + codePointLength(call.args);
      events.push({ type: "tool_call", id: `call_${++seq.calls}`, name: call.name, arguments: call.args });
    }
  } else {
    const answer =
      request.responseSchema && candidate !== undefined
        ? candidate
        : (script.answer ?? (script.turns.length > 0 ? `done: ${lastResults(after).join("; ")}` : `echo: ${script.text}`));
    produced += codePointLength(answer);
    for (const piece of pieces(answer)) events.push({ type: "text", text: piece });
  }
  events.push({ type: "usage", input_tokens: input, output_tokens: Math.ceil(produced / 4) });
  return events;
}

/** The run's user message: the last one that is not the loop's note about a failed structured try. */
function lastUserIndex(messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === "user" && !isRetryNote(messages[i]!)) return i;
  return -1;
}

function isRetryNote(m: Message): boolean {
  return m.role === "user" && m.content.startsWith(STRUCTURED_RETRY_PREFIX);
}

/**
 * Tool-call turns already made after the user message. A turn answered with an invalid-arguments
 * error is asked again (up to twice, as the loop does), so it repeats instead of counting.
 */
function completedTurns(after: readonly Message[]): number {
  let turns = 0;
  let retries = 0;
  for (let i = 0; i < after.length; i++) {
    const m = after[i]!;
    if (m.role !== "assistant" || !m.tool_calls?.length) continue;
    const results = after.slice(i + 1, i + 1 + m.tool_calls.length);
    const invalid = results.some((r) => r.role === "tool" && r.is_error && r.content.startsWith(INVALID_ARGUMENTS_PREFIX));
    if (invalid && retries < MAX_ARGUMENT_RETRIES) retries++;
    else {
      turns++;
      retries = 0;
    }
  }
  return turns;
}

function lastResults(after: readonly Message[]): string[] {
  const out: string[] = [];
  for (let i = after.length - 1; i >= 0; i--) {
    const m = after[i]!;
    if (m.role === "tool") out.unshift(m.content);
    else break;
  }
  return out;
}

/** The system prompt's length, kept for the last one seen: every run of an agent sends the same. */
let lastSystem = { text: "", length: 0 };

function charsSent(request: ModelRequest): number {
  if (lastSystem.text !== request.system) lastSystem = { text: request.system, length: codePointLength(request.system) };
  let n = lastSystem.length;
  for (const m of request.messages) {
    n += codePointLength(m.content);
    if (m.role === "assistant" && m.tool_calls) n += codePointLength(JSON.stringify(m.tool_calls));
  }
  return n;
}

