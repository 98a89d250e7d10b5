/**
 * The agent loop: model turn, tool calls in parallel, results, next turn, until the model
 * answers or the step budget runs out. Steps are counted as RECURSION_LIMIT counts them: a
 * model turn and a tool turn are one step each, so answering takes two and each sequential tool
 * turn two more (limit 50: 24 tool turns, then the answer).
 */
import { AppError, isAppError } from "../errors.js";

/** No try of the answer fitted the response schema (SSE error invalid_structured_response). */
export class StructuredAnswerError extends AppError {
  constructor() {
    super("invalid_structured_response", "No try of the answer fitted the response schema.");
    this.name = "StructuredAnswerError";
  }
}
import type { Ids } from "../ids.js";
import { type JsonValue, wellFormed } from "../json.js";
import type { Logger } from "../observability/logger.js";
import type { Message, ToolCall } from "../store/ports.js";
import type { RunEvent, Usage } from "./events.js";
import { INVALID_ARGUMENTS_PREFIX, MAX_ARGUMENT_RETRIES, type Model, type ToolSpec } from "./model.js";
import type { Tool, ToolContext } from "./tools/define.js";
import type { ToolCallScope } from "../policy/client.js";
import { type AnswerChecker, FINAL_ANSWER_TOOL, MAX_STRUCTURED_TRIES, type ResponseSchema, STRUCTURED_RETRY_PREFIX } from "./structured.js";

export const STEP_LIMIT_REPLY =
  "I stopped here because this request needed more steps than one run allows. Say 'continue' and I will pick up where I left off.";


export interface LoopOptions {
  readonly model: Model;
  readonly system: string;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly recursionLimit: number;
  readonly dev: boolean;
  readonly signal: AbortSignal;
  readonly ids: Ids;
  readonly logger: Logger;
  /** The conversation so far, this run's user message included. */
  readonly messages: Message[];
  readonly emit: (event: RunEvent) => void;
  /** Appends messages to the thread (a checkpoint after every step). */
  readonly persist: (messages: readonly Message[]) => Promise<void>;
  readonly toolContext: Omit<ToolContext, "signal" | "api">;
  /** The outbound client for calls made by one tool call. */
  readonly apiFor: (call: ToolCallScope) => ToolContext["api"];
  /** True when the tool call registered an approval to wait for. */
  readonly isPaused: (toolCallId: string) => boolean;
  /** The caller writes the run's last messages itself, together with the end of the run. */
  readonly deferFinal?: boolean;
  /** Set when answers must fit a response schema. */
  readonly structured?: StructuredAnswers;
  /**
   * Set when the run resumes after an approval decision: the calls that waited, the turn's words,
   * and what to do once they were carried out and their results written.
   */
  readonly resume?: { readonly calls: readonly ToolCall[]; readonly reason: string; readonly done: () => Promise<void> };
}

export interface LoopResult {
  status: "ok" | "step_limit" | "awaiting_approval";
  usage: Usage;
  /** The checked answer of a run with a response schema. */
  structured?: JsonValue;
  /** With `deferFinal`: the last messages, not yet written. */
  final?: Message[];
}

/** Structured answers: how the answer is asked for, and its checker. */
export interface StructuredAnswers {
  readonly strategy: "provider" | "tool";
  readonly schema: ResponseSchema;
  readonly checker: AnswerChecker;
}

export async function runLoop(options: LoopOptions): Promise<LoopResult> {
  const { model, system, tools, recursionLimit, signal, ids, messages, emit, persist } = options;
  const specs: ToolSpec[] = [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }));
  const structured = options.structured;
  if (structured?.strategy === "tool")
    specs.push({ name: FINAL_ANSWER_TOOL, description: "Give the final answer, as arguments that fit its schema. Call it exactly once, when done.", parameters: structured.schema });
  const responseSchema = structured?.strategy === "provider" ? { name: "answer", schema: structured.schema } : undefined;
  const usage: Usage = { input_tokens: 0, output_tokens: 0 };
  let step = 0;
  let retries = 0;
  /** Failed structured tries: sent back to the model, never kept in the thread. */
  let scratch: Message[] = [];
  let tries = 0;

  // A run resumed after an approval decision first finishes the tool calls that waited.
  if (options.resume) {
    step += 1;
    const { paused } = await toolStep(options.resume.calls.map((c) => ({ ...c, args: c.args as Record<string, JsonValue> | null })), options.resume.reason);
    await options.resume.done();
    if (paused) return { status: "awaiting_approval", usage };
  }

  for (;;) {
    step += 1;
    let text = "";
    const calls: { id: string; name: string; arguments: string }[] = [];
    const request = { system, messages: scratch.length > 0 ? [...messages, ...scratch] : messages, tools: specs, signal, ...(responseSchema ? { responseSchema } : {}) };
    for await (const event of model.stream(request)) {
      if (event.type === "text") {
        text += event.text;
        // With a response schema only the checked answer is streamed.
        if (!structured) emit({ type: "message.delta", text: event.text });
      } else if (event.type === "tool_call") calls.push(event);
      else {
        usage.input_tokens += event.input_tokens;
        usage.output_tokens += event.output_tokens;
      }
    }
    signal.throwIfAborted();

    if (structured) {
      const final = calls.find((c) => c.name === FINAL_ANSWER_TOOL);
      const candidate = structured.strategy === "tool" ? final?.arguments : calls.length === 0 ? text : undefined;
      if (candidate !== undefined || (structured.strategy === "tool" && calls.length === 0)) {
        const { value, problems } = candidate === undefined ? { value: undefined, problems: [`call the ${FINAL_ANSWER_TOOL} tool with the answer`] } : structured.checker.check(candidate);
        if (problems.length === 0 && value !== undefined) {
          const json = JSON.stringify(value);
          emit({ type: "message.delta", text: json });
          return { status: "ok", usage, structured: value, final: await finish([{ id: ids.messageId(), role: "assistant", content: json }]) };
        }
        tries += 1;
        if (tries >= MAX_STRUCTURED_TRIES) throw new StructuredAnswerError();
        scratch = [
          ...scratch,
          { id: ids.messageId(), role: "assistant", content: candidate ?? text },
          { id: ids.messageId(), role: "user", content: `${STRUCTURED_RETRY_PREFIX} ${problems.join("; ")}. Answer again.` },
        ];
        step -= 1;
        continue;
      }
      scratch = [];
    }

    if (calls.length === 0) return { status: "ok", usage, final: await finish([{ id: ids.messageId(), role: "assistant", content: text }]) };
    // A tool turn needs this step, the tool step and two more to answer afterwards.
    if (recursionLimit - step < 2) {
      emit({ type: "message.delta", text: STEP_LIMIT_REPLY });
      const closing: Message[] = [{ id: ids.messageId(), role: "assistant", content: text ? `${text}\n\n${STEP_LIMIT_REPLY}` : STEP_LIMIT_REPLY }];
      return { status: "step_limit", usage, final: await finish(closing) };
    }

    const parsed = calls.map((c) => ({ id: c.id, name: c.name, args: parseArguments(c.arguments) }));
    const toolCalls: ToolCall[] = parsed.map((c) => ({ id: c.id, name: c.name, args: c.args ?? {} }));
    // Checkpoint the calls before running them, so a stop leaves them visibly open.
    await commit([{ id: ids.messageId(), role: "assistant", content: text, tool_calls: toolCalls }]);
    for (const c of toolCalls) emit({ type: "tool.call", id: c.id, name: c.name, args: c.args });
    if ((await toolStep(parsed, text)).paused) return { status: "awaiting_approval", usage };

    // Invalid JSON arguments: ask again within the same step, at most twice.
    if (parsed.some((c) => c.args === null) && retries < MAX_ARGUMENT_RETRIES) {
      retries += 1;
      step -= 1;
      continue;
    }
    retries = 0;
    step += 1;
  }

  async function commit(batch: Message[]): Promise<void> {
    messages.push(...batch);
    await persist(batch);
  }

  /** The run's last messages: written now, or handed back for the caller to write with the run's end. */
  async function finish(batch: Message[]): Promise<Message[]> {
    if (!options.deferFinal) {
      await commit(batch);
      return [];
    }
    messages.push(...batch);
    return batch;
  }

  /** Runs one turn's calls in parallel; results of calls that wait for approval are not written. */
  async function toolStep(parsed: { id: string; name: string; args: Record<string, JsonValue> | null }[], reason: string): Promise<{ paused: boolean }> {
    const results = await Promise.all(
      parsed.map((c) =>
        c.args === null
          ? Promise.resolve<Result>({ content: `${INVALID_ARGUMENTS_PREFIX} the arguments were not valid JSON; call the tool again with a JSON object.`, is_error: true })
          : runTool(options, c.id, c.name, c.args, reason),
      ),
    );
    signal.throwIfAborted();
    const toolMessages: Message[] = [];
    let paused = false;
    parsed.forEach((c, i) => {
      const r = results[i]!;
      // A call waiting for approval pauses the run, whatever the tool made of the pause.
      if (r.paused || options.isPaused(c.id)) {
        paused = true;
        return;
      }
      const content = wellFormed(r.content);
      emit({ type: "tool.result", id: c.id, name: c.name, result: content, is_error: r.is_error, ...(r.error_id ? { error_id: r.error_id } : {}) });
      toolMessages.push({
        id: ids.messageId(),
        role: "tool",
        content,
        tool_call_id: c.id,
        name: c.name,
        is_error: r.is_error,
        ...(r.error_id ? { error_id: r.error_id } : {}),
      });
    });
    if (toolMessages.length > 0) await commit(toolMessages);
    return { paused };
  }
}

interface Result {
  content: string;
  is_error: boolean;
  paused?: boolean;
  error_id?: string;
}

function parseArguments(text: string): Record<string, JsonValue> | null {
  if (text.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, JsonValue>) : null;
  } catch {
    return null;
  }
}

async function runTool(options: LoopOptions, id: string, name: string, args: Record<string, JsonValue>, reason: string): Promise<Result> {
  const tool = options.tools.get(name);
  if (!tool) return { content: `There is no tool named ${JSON.stringify(name)}.`, is_error: true };
  const problems = tool.check(args);
  if (problems.length > 0)
    return { content: `The arguments do not fit the tool's parameters: ${problems.join("; ")}`, is_error: true };
  try {
    const value = await tool.run(args, { ...options.toolContext, api: options.apiFor({ tool: name, toolCallId: id, reason }), signal: options.signal });
    return { content: typeof value === "string" ? value : JSON.stringify(value ?? null), is_error: false };
  } catch (error) {
    if (options.signal.aborted) throw options.signal.reason;
    if (isAppError(error) && error.code === "paused") return { content: "", is_error: false, paused: true };
    const errorId = options.ids.errorId();
    const errorType = isAppError(error) ? error.name : error instanceof Error ? error.name : "Error";
    options.logger.warning("tool call failed", { error_id: errorId, tool: name, error_type: errorType, tool_call_id: id });
    // Policy refusals and failed calls carry a reason written for the model (spec 7.4).
    if (isAppError(error) && (error.code === "api_policy" || error.code === "api_call"))
      return { content: `${error.name}: ${error.message}`, is_error: true, error_id: errorId };
    const detail = options.dev && error instanceof Error ? `: ${error.message}` : "";
    return { content: `The tool failed${detail}. Reference: ${errorId}.`, is_error: true, error_id: errorId };
  }
}

/** Tool calls left open by a stopped run, answered with error results before the next run. */
export function closeOpenToolCalls(messages: readonly Message[], ids: Ids): Message[] {
  const answered = new Set<string>();
  for (const m of messages) if (m.role === "tool") answered.add(m.tool_call_id);
  const out: Message[] = [];
  for (const m of messages) {
    if (m.role !== "assistant" || !m.tool_calls) continue;
    for (const call of m.tool_calls) {
      if (answered.has(call.id)) continue;
      out.push({
        id: ids.messageId(),
        role: "tool",
        content: "This tool call was interrupted before it finished; its result is unknown.",
        tool_call_id: call.id,
        name: call.name,
        is_error: true,
      });
    }
  }
  return out;
}
