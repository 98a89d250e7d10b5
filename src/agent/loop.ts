/**
 * The agent loop: model turn, tool calls in parallel, results, next turn, until the model
 * answers or the step budget runs out. Steps are counted as RECURSION_LIMIT counts them: a
 * model turn and a tool turn are one step each, so answering takes two and each sequential tool
 * turn two more (limit 50: 24 tool turns, then the answer).
 */
import { AppError } from "../errors.js";
import { type JsonValue, wellFormed } from "../json.js";
import { ATTR } from "../observability/trace-attributes.js";
import type { TraceSpan } from "../observability/tracing.js";
import type { Message, ToolCall } from "../store/ports.js";
import type { RunEvent, Usage } from "./events.js";
import { MAX_ARGUMENT_RETRIES, type Model, type ModelEvent, type ModelRequest, type ToolSpec } from "./model.js";
import { type AnswerChecker, FINAL_ANSWER_TOOL, MAX_STRUCTURED_TRIES, type ResponseSchema, STRUCTURED_RETRY_PREFIX } from "./structured.js";
import { type ParsedCall, parseArguments, runToolCalls, type ToolRunOptions } from "./tool-calls.js";

export { closeOpenToolCalls } from "./tool-calls.js";

/** No try of the answer fitted the response schema (SSE error invalid_structured_response). */
export class StructuredAnswerError extends AppError {
  constructor() {
    super("invalid_structured_response", "No try of the answer fitted the response schema.");
    this.name = "StructuredAnswerError";
  }
}

export const STEP_LIMIT_REPLY =
  "I stopped here because this request needed more steps than one run allows. Say 'continue' and I will pick up where I left off.";

/** Its functions are called as methods of the options (a run passes a class whose methods they are). */
export interface LoopOptions extends ToolRunOptions {
  readonly model: Model;
  readonly system: string;
  readonly recursionLimit: number;
  /** The conversation so far, this run's user message included. */
  readonly messages: Message[];
  readonly emit: (event: RunEvent) => void;
  /** Appends messages to the thread (a checkpoint after every step). */
  persist(messages: readonly Message[]): Promise<void>;
  /** True when the tool call registered an approval to wait for. */
  isPaused(toolCallId: string): boolean;
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
  /** The last messages, not yet written: the caller writes them with the end of the run (one write). */
  final?: Message[];
}

/** Structured answers: how the answer is asked for, and its checker. */
export interface StructuredAnswers {
  readonly strategy: "provider" | "tool";
  readonly schema: ResponseSchema;
  readonly checker: AnswerChecker;
}

export async function runLoop(options: LoopOptions): Promise<LoopResult> {
  const loop = new Loop(options);
  if (options.resume) {
    loop.step += 1;
    if ((await loop.resume(options.resume)).paused) return loop.awaitingApproval();
  }
  for (;;) {
    loop.step += 1;
    const turn = await loop.modelTurn();
    const answer = await loop.structuredAnswer(turn);
    if (answer === "retry") {
      // Another try at the answer, within the same step.
      loop.step -= 1;
      continue;
    }
    if (answer) return answer;
    if (turn.calls.length === 0) return loop.answer(turn.text);
    if (loop.outOfSteps()) return loop.closeAtStepLimit(turn.text);
    const tools = await loop.toolTurn(turn);
    if (tools.paused) return loop.awaitingApproval();
    // Invalid JSON arguments: ask again within the same step, at most twice.
    if (tools.invalidArguments && loop.retries < MAX_ARGUMENT_RETRIES) {
      loop.retries += 1;
      loop.step -= 1;
      continue;
    }
    loop.retries = 0;
    loop.step += 1;
  }
}

/**
 * The turn's text and tool arguments, each laid out in one piece. They were joined a delta at a
 * time, and V8 keeps such a string as a tree of its parts (two small objects a delta, each part
 * possibly a slice holding a larger string) until a character of it is read. The thread's
 * messages keep these strings: in the memory store, an answer of 18 deltas cost about 1.1 KB
 * more than its text; a real model's answer has hundreds of deltas.
 */
function layOut(turn: { text: string; calls: readonly { arguments: string }[] }): void {
  turn.text.charCodeAt(0);
  for (const call of turn.calls) call.arguments.charCodeAt(0);
}

/** The model span's end: token usage, finish reason and, under TRACE_CAPTURE=full, the turn as GenAI output message parts. */
function endModelSpan(span: TraceSpan, full: boolean, model: string, turn: ModelTurn, inputTokens: number, outputTokens: number): void {
  span.usage(inputTokens, outputTokens).set(ATTR.responseModel, model).set(ATTR.finishReasons, [turn.calls.length > 0 ? "tool_call" : "stop"]);
  if (full) {
    const parts: Record<string, JsonValue>[] = turn.text ? [{ type: "text", content: turn.text }] : [];
    for (const c of turn.calls) parts.push({ type: "tool_call", id: c.id, name: c.name, arguments: c.arguments });
    span.content(ATTR.outputMessages, [{ role: "assistant", parts }]);
  }
  span.end();
}

/** The tools as the model is told of them: made once per tool set (the agent's is shared by its runs). */
const specsByTools = new WeakMap<ToolRunOptions["tools"], readonly ToolSpec[]>();
function specsOf(tools: ToolRunOptions["tools"]): readonly ToolSpec[] {
  let specs = specsByTools.get(tools);
  if (!specs) specsByTools.set(tools, (specs = [...tools.values()].map(({ name, description, parameters }) => ({ name, description, parameters }))));
  return specs;
}

/**
 * One model request. The run's signal is read from the options when the model asks for it: a
 * model that answers at once (the fake one) never does, and the run makes none.
 */
class TurnRequest implements ModelRequest {
  readonly system: string;
  readonly responseSchema?: ModelRequest["responseSchema"];
  constructor(
    private readonly options: LoopOptions,
    readonly messages: readonly Message[],
    readonly tools: readonly ToolSpec[],
    responseSchema: ModelRequest["responseSchema"] | undefined,
  ) {
    this.system = options.system;
    if (responseSchema) this.responseSchema = responseSchema;
  }

  get signal(): AbortSignal {
    return this.options.signal;
  }
}

/** What one model turn said: its words and the tool calls it made. */
export interface ModelTurn {
  readonly text: string;
  readonly calls: readonly { readonly id: string; readonly name: string; readonly arguments: string }[];
}

/**
 * One run of the loop: what it has counted so far, and the steps runLoop is made of. Exported
 * so the graph-server runtime builds its graph nodes from the same steps (model turn, announced
 * calls, one call's run) and the two runtimes cannot drift apart.
 */
export class Loop {
  /** Steps taken, as RECURSION_LIMIT counts them. */
  step = 0;
  /** Times the model was asked again after invalid JSON arguments, within the current step. */
  retries = 0;
  private readonly usage: Usage = { input_tokens: 0, output_tokens: 0 };
  private readonly specs: readonly ToolSpec[];
  private readonly responseSchema: { name: string; schema: ResponseSchema } | undefined;
  /** Failed structured tries: sent back to the model, never kept in the thread. */
  private scratch: Message[] = [];
  private tries = 0;

  constructor(private readonly options: LoopOptions) {
    const { tools, structured } = options;
    this.specs = specsOf(tools);
    if (structured?.strategy === "tool")
      this.specs = [
        ...this.specs,
        { name: FINAL_ANSWER_TOOL, description: "Give the final answer, as arguments that fit its schema. Call it exactly once, when done.", parameters: structured.schema },
      ];
    this.responseSchema = structured?.strategy === "provider" ? { name: "answer", schema: structured.schema } : undefined;
  }

  /** A run resumed after an approval decision first finishes the tool calls that waited. */
  async resume(resume: NonNullable<LoopOptions["resume"]>): Promise<{ paused: boolean }> {
    const { paused } = await this.toolStep(resume.calls.map((c) => ({ ...c, args: c.args as Record<string, JsonValue> | null })), resume.reason);
    await resume.done();
    return { paused };
  }

  /**
   * One model call: `chat <model>` under the run's span while tracing is on. One async function
   * either way, so a run without tracing pays no extra promise per turn; it keeps few locals,
   * since a run waiting on its model holds its frame.
   */
  async modelTurn(): Promise<ModelTurn> {
    const { model, trace } = this.options;
    const request = this.request();
    // The prompt is content: the facade keeps it only under TRACE_CAPTURE=full.
    const span = trace?.tracing.modelSpan(model.name, trace.run, model.provider, request.system, request.messages);
    const before = span ? { ...this.usage } : undefined;
    const turn = { text: "", calls: [] as { id: string; name: string; arguments: string }[] };
    try {
      for await (const event of model.stream(request)) this.take(turn, event);
      this.options.throwIfStopped();
      layOut(turn);
    } catch (error) {
      span?.fail(this.options.signal.aborted ? "cancelled" : error instanceof Error ? error.name : "Error", error instanceof Error ? error.message : undefined).end();
      throw error;
    }
    if (span) endModelSpan(span, trace!.tracing.capture === "full", model.name, turn, this.usage.input_tokens - before!.input_tokens, this.usage.output_tokens - before!.output_tokens);
    return turn;
  }

  private request(): ModelRequest {
    const { scratch } = this;
    const messages = scratch.length > 0 ? [...this.options.messages, ...scratch] : this.options.messages;
    return new TurnRequest(this.options, messages, this.specs, this.responseSchema);
  }

  private take(turn: { text: string; calls: { id: string; name: string; arguments: string }[] }, event: ModelEvent): void {
    if (event.type === "text") {
      turn.text += event.text;
      // With a response schema only the checked answer is streamed.
      if (!this.options.structured) this.options.emit({ type: "message.delta", text: event.text });
    } else if (event.type === "tool_call") turn.calls.push(event);
    else {
      this.usage.input_tokens += event.input_tokens;
      this.usage.output_tokens += event.output_tokens;
    }
  }

  /**
   * With a response schema: the run's end when the turn's answer fits, "retry" when it does not
   * (its problems go back to the model), undefined when the turn offers no answer to check.
   */
  async structuredAnswer({ text, calls }: ModelTurn): Promise<LoopResult | "retry" | undefined> {
    const { structured, ids, emit } = this.options;
    if (!structured) return undefined;
    const final = calls.find((c) => c.name === FINAL_ANSWER_TOOL);
    const candidate = structured.strategy === "tool" ? final?.arguments : calls.length === 0 ? text : undefined;
    if (candidate === undefined && !(structured.strategy === "tool" && calls.length === 0)) {
      this.scratch = [];
      return undefined;
    }
    const { value, problems } = candidate === undefined ? { value: undefined, problems: [`call the ${FINAL_ANSWER_TOOL} tool with the answer`] } : structured.checker.check(candidate);
    if (problems.length === 0 && value !== undefined) {
      const json = JSON.stringify(value);
      emit({ type: "message.delta", text: json });
      return { status: "ok", usage: this.usage, structured: value, final: await this.finish([{ id: ids.messageId(), role: "assistant", content: json }]) };
    }
    this.tries += 1;
    if (this.tries >= MAX_STRUCTURED_TRIES) throw new StructuredAnswerError();
    this.scratch = [
      ...this.scratch,
      { id: ids.messageId(), role: "assistant", content: candidate ?? text },
      { id: ids.messageId(), role: "user", content: `${STRUCTURED_RETRY_PREFIX} ${problems.join("; ")}. Answer again.` },
    ];
    return "retry";
  }

  async answer(text: string): Promise<LoopResult> {
    return { status: "ok", usage: this.usage, final: await this.finish([{ id: this.options.ids.messageId(), role: "assistant", content: text }]) };
  }

  /** A tool turn needs this step, the tool step and two more to answer afterwards. */
  outOfSteps(): boolean {
    return this.options.recursionLimit - this.step < 2;
  }

  async closeAtStepLimit(text: string): Promise<LoopResult> {
    this.options.emit({ type: "message.delta", text: STEP_LIMIT_REPLY });
    const closing: Message[] = [{ id: this.options.ids.messageId(), role: "assistant", content: text ? `${text}\n\n${STEP_LIMIT_REPLY}` : STEP_LIMIT_REPLY }];
    return { status: "step_limit", usage: this.usage, final: await this.finish(closing) };
  }

  /** The turn's calls: checkpointed, announced, run, and their results written. */
  async toolTurn(turn: ModelTurn): Promise<{ paused: boolean; invalidArguments: boolean }> {
    const parsed = await this.announce(turn);
    const { paused } = await this.toolStep(parsed, turn.text);
    return { paused, invalidArguments: parsed.some((c) => c.args === null) };
  }

  /** The turn's calls read, checkpointed before they run (a stop leaves them visibly open) and announced. */
  async announce({ text, calls }: ModelTurn): Promise<ParsedCall[]> {
    const { ids, emit } = this.options;
    const parsed = calls.map((c) => ({ id: c.id, name: c.name, args: parseArguments(c.arguments) }));
    const toolCalls: ToolCall[] = parsed.map((c) => ({ id: c.id, name: c.name, args: c.args ?? {} }));
    await this.commit([{ id: ids.messageId(), role: "assistant", content: text, tool_calls: toolCalls }]);
    for (const c of toolCalls) emit({ type: "tool.call", id: c.id, name: c.name, args: c.args });
    return parsed;
  }

  awaitingApproval(): LoopResult {
    return { status: "awaiting_approval", usage: this.usage };
  }

  /** Runs one turn's calls in parallel; results of calls that wait for approval are not written. */
  async toolStep(parsed: readonly ParsedCall[], reason: string): Promise<{ paused: boolean }> {
    const { ids, emit } = this.options;
    const results = await runToolCalls(this.options, parsed, reason);
    this.options.throwIfStopped();
    const toolMessages: Message[] = [];
    let paused = false;
    parsed.forEach((c, i) => {
      const r = results[i]!;
      // A call waiting for approval pauses the run, whatever the tool made of the pause.
      if (r.paused || this.options.isPaused(c.id)) {
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
    if (toolMessages.length > 0) await this.commit(toolMessages);
    return { paused };
  }

  private async commit(batch: Message[]): Promise<void> {
    this.options.messages.push(...batch);
    await this.options.persist(batch);
  }

  /** The run's last messages, handed back for the caller to write with the run's end. */
  private async finish(batch: Message[]): Promise<Message[]> {
    this.options.messages.push(...batch);
    return batch;
  }
}
