/**
 * The tool side of the loop: reading the model's arguments, running one turn's calls in parallel,
 * turning a failure into a result the model can read, and answering the calls a stopped run left
 * open. A tool's failure is a result, never a failed run; only the run's stop and an approval's
 * pause leave a call without one.
 */
import { isAppError } from "../errors.js";
import type { Ids } from "../ids.js";
import type { JsonValue } from "../json.js";
import type { Logger } from "../observability/logger.js";
import { ATTR } from "../observability/trace-attributes.js";
import type { TraceSpan, Tracing } from "../observability/tracing.js";
import type { ToolCallScope } from "../policy/client.js";
import type { Message } from "../store/ports.js";
import { INVALID_ARGUMENTS_PREFIX } from "./model.js";
import type { Tool, ToolContext } from "./tools/define.js";

/** What running tool calls needs from the loop's options. */
export interface ToolRunOptions {
  readonly tools: ReadonlyMap<string, Tool>;
  readonly dev: boolean;
  /** Aborted when the run stops (a run may make it only when first asked). */
  readonly signal: AbortSignal;
  /** Throws why the run stopped, if it has (the signal's reason), without asking for the signal. */
  throwIfStopped(): void;
  readonly ids: Ids;
  readonly logger: Logger;
  readonly toolContext: Omit<ToolContext, "signal" | "api" | "toolCallId">;
  /** The outbound client for calls made by one tool call. */
  apiFor(call: ToolCallScope): ToolContext["api"];
  /** The run's span and the facade (tracing on): each model call and tool call is a span under it. */
  readonly trace?: RunSpans | undefined;
}

export interface RunSpans {
  readonly tracing: Tracing;
  readonly run: TraceSpan;
}

/** A call as the model made it; `args` is null when they were not a JSON object. */
export interface ParsedCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, JsonValue> | null;
}

export interface ToolResult {
  content: string;
  is_error: boolean;
  paused?: boolean;
  error_id?: string;
}

/**
 * Deepest nesting of arguments the agent accepts. Legal JSON can nest thousands of levels; such
 * arguments, once stored in the thread, would break every later read of it (serialisers and
 * providers recurse). They are refused like invalid JSON before anything is stored.
 */
export const MAX_ARGUMENT_DEPTH = 64;

export function parseArguments(text: string): Record<string, JsonValue> | null {
  if (text.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
    return depthWithin(value, MAX_ARGUMENT_DEPTH) ? (value as Record<string, JsonValue>) : null;
  } catch {
    return null;
  }
}

/** Whether a parsed JSON value nests at most `max` levels (iterative: no recursion to overflow). */
function depthWithin(root: object, max: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== "object" || value === null) continue;
    if (depth > max) return false;
    for (const child of Object.values(value)) if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
  }
  return true;
}

/** Runs one turn's calls in parallel; a call with invalid arguments is answered without running. */
export function runToolCalls(options: ToolRunOptions, calls: readonly ParsedCall[], reason: string): Promise<ToolResult[]> {
  return Promise.all(
    calls.map((c) =>
      c.args === null
        ? Promise.resolve(
            refused(options, c.id, c.name, "invalid_arguments", `${INVALID_ARGUMENTS_PREFIX} the arguments were not valid JSON (a JSON object nested at most ${MAX_ARGUMENT_DEPTH} levels); call the tool again with a JSON object.`),
          )
        : runTool(options, c.id, c.name, c.args, reason),
    ),
  );
}

/**
 * One call, as `execute_tool <tool>` under the run's span while tracing is on: its arguments and
 * result are content (exported only under TRACE_CAPTURE=full), a failure its error type.
 */
function runTool(options: ToolRunOptions, id: string, name: string, args: Record<string, JsonValue>, reason: string): Promise<ToolResult> {
  const { trace } = options;
  return trace ? tracedTool(trace, options, id, name, args, reason) : runOne(options, id, name, args, reason, undefined);
}

async function tracedTool(trace: RunSpans, options: ToolRunOptions, id: string, name: string, args: Record<string, JsonValue>, reason: string): Promise<ToolResult> {
  const span = trace.tracing.toolSpan(name, trace.run, id, args);
  try {
    const result = await runOne(options, id, name, args, reason, span);
    if (result.paused) span.event("approval_pending");
    else if (!result.is_error) span.content(ATTR.toolResult, result.content);
    return result;
  } catch (error) {
    span.fail(options.signal.aborted ? "cancelled" : error instanceof Error ? error.name : "Error");
    throw error;
  } finally {
    span.end();
  }
}

async function runOne(options: ToolRunOptions, id: string, name: string, args: Record<string, JsonValue>, reason: string, span: TraceSpan | undefined): Promise<ToolResult> {
  const tool = options.tools.get(name);
  if (!tool) {
    span?.fail("unknown_tool");
    return refused(options, id, name, "unknown_tool", `There is no tool named ${JSON.stringify(name)}.`);
  }
  const problems = tool.check(args);
  if (problems.length > 0) {
    span?.fail("invalid_arguments");
    return refused(options, id, name, "invalid_arguments", `The arguments do not fit the tool's parameters: ${problems.join("; ")}`);
  }
  try {
    const api = options.apiFor({ tool: name, toolCallId: id, reason, ...(tool.redact ? { redact: tool.redact } : {}), span, args });
    const value = await tool.run(args, { ...options.toolContext, api, signal: options.signal, toolCallId: id });
    return { content: typeof value === "string" ? value : JSON.stringify(value ?? null), is_error: false };
  } catch (error) {
    options.throwIfStopped();
    if (isAppError(error) && error.code === "paused") return { content: "", is_error: false, paused: true };
    // The store stopped answering (the approval gate reads and writes it: the claim, the answer),
    // or the run held an approved call past its lease: the run fails as unavailable instead of
    // telling the model the tool failed. A resumed run then leaves its approved calls due, and
    // the next holder of the thread carries them out.
    if (isAppError(error) && (error.code === "unavailable" || error.code === "lease_lost")) throw error;
    const errorId = options.ids.errorId();
    const errorType = isAppError(error) ? error.name : error instanceof Error ? error.name : "Error";
    span?.fail(errorType, error instanceof Error ? error.message : undefined);
    options.logger.warning("tool call failed", { error_id: errorId, tool: name, error_type: errorType, tool_call_id: id });
    // Policy refusals and failed calls carry a reason written for the model (spec 7.4).
    if (isAppError(error) && (error.code === "api_policy" || error.code === "api_call"))
      return { content: `${error.name}: ${error.message}`, is_error: true, error_id: errorId };
    const detail = options.dev && error instanceof Error ? `: ${error.message}` : "";
    return { content: `The tool failed${detail}. Reference: ${errorId}.`, is_error: true, error_id: errorId };
  }
}

/**
 * A call answered without running a tool: no such tool, or arguments that do not fit. Its text is
 * written for the model to correct the call, as a policy refusal's is (spec 7.4), and it carries
 * an error id like every failed result (spec 2.2, 6.1), logged with the tool's name when it is
 * one (never the arguments) so the reference leads somewhere.
 */
function refused(options: ToolRunOptions, id: string, name: string, errorType: "unknown_tool" | "invalid_arguments", content: string): ToolResult {
  const errorId = options.ids.errorId();
  // A name no tool has is the model's own text: not logged.
  options.logger.warning("tool call refused", { error_id: errorId, ...(options.tools.has(name) ? { tool: name } : {}), error_type: errorType, tool_call_id: id });
  return { content, is_error: true, error_id: errorId };
}

/**
 * Tool calls left open by a stopped run, answered with error results before the next run; each
 * carries an error id like every failed result (spec 2.2), logged with the tool call.
 */
export function closeOpenToolCalls(messages: readonly Message[], ids: Ids, logger: Logger): Message[] {
  const answered = new Set<string>();
  for (const m of messages) if (m.role === "tool") answered.add(m.tool_call_id);
  const out: Message[] = [];
  for (const m of messages) {
    if (m.role !== "assistant" || !m.tool_calls) continue;
    for (const call of m.tool_calls) {
      if (answered.has(call.id)) continue;
      const errorId = ids.errorId();
      logger.warning("tool call closed: its run stopped before it finished", { error_id: errorId, tool_call_id: call.id });
      out.push({
        id: ids.messageId(),
        role: "tool",
        content: "This tool call was interrupted before it finished; its result is unknown.",
        tool_call_id: call.id,
        name: call.name,
        is_error: true,
        error_id: errorId,
      });
    }
  }
  return out;
}
