/**
 * OpenAI and OpenAI-compatible models through the official SDK: chat completions by default, the
 * responses API with `useResponsesApi`. Everything the SDK needs is passed explicitly (key,
 * endpoint, transport, retries, timeout) so it never picks up OPENAI_* from the environment. A
 * failure throws ModelError naming the provider and the status or kind only; the SDK error
 * (which may hold the response body) is kept as the cause, for the log.
 *
 * The SDK's timeout ends with the response headers, and its retry waits sleep out Retry-After
 * whatever the signal says; so the SDK makes one attempt (maxRetries 0) up to the headers, and
 * this provider retries with waits a cancelled run ends at once, and times the stream between
 * events (attempt.ts, as gemini does).
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, type ClientOptions } from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import type {
  FunctionTool,
  ResponseCreateParamsStreaming,
  ResponseInputItem,
  ResponseStreamEvent,
} from "openai/resources/responses/responses";
import { sleep } from "../../clock.js";
import { ConfigurationError, ModelError } from "../../errors.js";
import type { Message } from "../../store/ports.js";
import type { Model, ModelEvent, ModelRequest, ProviderOptions } from "../model.js";
import { AttemptControl, backoffMs, isRetryable } from "./attempt.js";

const OPENAI_BASE_URL = "https://api.openai.com/v1";

export type OpenAIModelOptions = ProviderOptions & { readonly provider: "openai" | "openai-compatible" };

/**
 * The SDK constructor merges OPENAI_CUSTOM_HEADERS from the process environment whatever the
 * options say; this client puts back exactly the headers it was given.
 */
class IsolatedOpenAI extends OpenAI {
  constructor(options: ClientOptions) {
    super(options);
    this._options = { ...this._options, defaultHeaders: options.defaultHeaders };
  }
}

export function createOpenAIModel(options: OpenAIModelOptions): Model {
  const provider = options.provider;
  if (provider === "openai-compatible" && !options.baseURL)
    throw new ConfigurationError("The model is not configured: OPENAI_BASE_URL is not set.");
  // Every value the constructor would otherwise read from the environment is given here, `null`
  // where there is none (a default parameter only applies to `undefined`).
  const client = new IsolatedOpenAI({
    apiKey: options.apiKey,
    baseURL: options.baseURL || OPENAI_BASE_URL,
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    defaultHeaders: {},
    fetch: options.fetch,
    // Retried here (`open`), where a cancelled run ends the wait.
    maxRetries: 0,
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    logLevel: "off",
  });

  const fail = (error: unknown, signal: AbortSignal, control?: AttemptControl): never => {
    if (signal.aborted) throw signal.reason;
    const kind = control?.timedOut ? "timeout" : describe(error);
    throw new ModelError(`${provider} request failed: ${kind}`, { cause: error });
  };

  return {
    provider,
    name: options.model,
    structuredOutput: true,
    stream: options.useResponsesApi
      ? (request) => streamResponses(client, options, request, fail)
      : (request) => streamChat(client, options, request, fail),
  };
}

type Fail = (error: unknown, signal: AbortSignal, control?: AttemptControl) => never;

/**
 * Starts a request (up to the response headers), retrying a refused connection, a timeout and a
 * retryable status up to `maxRetries` times. The wait between attempts ends when the run is
 * cancelled, rejecting with its reason.
 */
async function open<T>(options: OpenAIModelOptions, signal: AbortSignal, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (signal.aborted || attempt > options.maxRetries || !retryable(error)) throw error;
      await sleep(backoffMs(attempt, error instanceof APIError ? error.headers : undefined), signal);
    }
  }
}

function retryable(error: unknown): boolean {
  if (error instanceof APIUserAbortError) return false;
  if (error instanceof APIConnectionError) return true;
  return error instanceof APIError && error.status !== undefined && isRetryable(error.status, error.headers);
}

/** The status or kind of a failure; never the message or body, which may echo the request. */
function describe(error: unknown): string {
  if (error instanceof APIUserAbortError) return "aborted";
  if (error instanceof APIConnectionTimeoutError) return "timeout";
  if (error instanceof APIConnectionError) return "connection error";
  if (error instanceof APIError) return error.status !== undefined ? `status ${error.status}` : "error in stream";
  if (error instanceof ModelError) return error.message;
  if (error instanceof SyntaxError) return "malformed response";
  return "unexpected error";
}

// ---------------------------------------------------------------------------------------------
// Chat completions

async function* streamChat(client: OpenAI, options: OpenAIModelOptions, request: ModelRequest, fail: Fail): AsyncIterable<ModelEvent> {
  const { signal } = request;
  const body: ChatCompletionCreateParamsStreaming = {
    model: options.model,
    stream: true,
    stream_options: { include_usage: true },
    messages: chatMessages(request.system, request.messages),
  };
  if (request.tools.length > 0)
    body.tools = request.tools.map(
      (t): ChatCompletionTool => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } }),
    );
  if (options.reasoningEffort) body.reasoning_effort = options.reasoningEffort;
  if (request.responseSchema)
    body.response_format = {
      type: "json_schema",
      json_schema: { name: request.responseSchema.name, schema: request.responseSchema.schema, strict: false },
    };

  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  let usage: ChatCompletionChunk["usage"] = null;
  const control = new AttemptControl(signal, options.timeoutMs);
  try {
    const stream = await open(options, signal, () => client.chat.completions.create(body, { signal: control.signal }));
    for await (const chunk of control.watch(stream)) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices ?? []) {
        const delta = choice.delta;
        if (!delta) continue;
        if (delta.content) yield { type: "text", text: delta.content };
        if (delta.refusal) yield { type: "text", text: delta.refusal };
        for (const piece of delta.tool_calls ?? []) {
          let call = calls.get(piece.index);
          if (!call) calls.set(piece.index, (call = { id: "", name: "", arguments: "" }));
          if (piece.id) call.id = piece.id;
          if (piece.function?.name) call.name += piece.function.name;
          if (piece.function?.arguments) call.arguments += argumentsText(piece.function.arguments);
        }
      }
    }
  } catch (error) {
    fail(error, signal, control);
  } finally {
    control.dispose();
  }
  // The SDK ends the stream quietly when the signal aborts it.
  if (signal.aborted) throw signal.reason;

  for (const [index, call] of [...calls].sort(([a], [b]) => a - b)) {
    if (!call.name) fail(new ModelError(`tool call ${index} without a name`), signal);
    yield { type: "tool_call", id: call.id || `call_${crypto.randomUUID()}`, name: call.name, arguments: call.arguments };
  }
  if (usage) yield { type: "usage", input_tokens: usage.prompt_tokens ?? 0, output_tokens: usage.completion_tokens ?? 0 };
}

function chatMessages(system: string, messages: readonly Message[]): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (system) out.push({ role: "system", content: system });
  for (const m of messages) {
    if (m.role === "user") out.push({ role: "user", content: m.content });
    else if (m.role === "tool") out.push({ role: "tool", tool_call_id: m.tool_call_id, content: m.content });
    else if (m.tool_calls && m.tool_calls.length > 0)
      out.push({
        role: "assistant",
        // Some compatible servers refuse an empty string next to tool calls; null is the API's "no text".
        content: m.content || null,
        tool_calls: m.tool_calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: JSON.stringify(c.args) },
        })),
      });
    else out.push({ role: "assistant", content: m.content });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Responses API

async function* streamResponses(client: OpenAI, options: OpenAIModelOptions, request: ModelRequest, fail: Fail): AsyncIterable<ModelEvent> {
  const { signal } = request;
  const body: ResponseCreateParamsStreaming = {
    model: options.model,
    stream: true,
    input: responseInput(request.messages),
  };
  if (request.system) body.instructions = request.system;
  if (request.tools.length > 0)
    body.tools = request.tools.map(
      (t): FunctionTool => ({ type: "function", name: t.name, description: t.description, parameters: t.parameters, strict: false }),
    );
  if (options.reasoningEffort) body.reasoning = { effort: options.reasoningEffort };
  if (request.responseSchema)
    body.text = {
      format: { type: "json_schema", name: request.responseSchema.name, schema: request.responseSchema.schema, strict: false },
    };

  const control = new AttemptControl(signal, options.timeoutMs);
  try {
    const stream = await open(options, signal, () => client.responses.create(body, { signal: control.signal }));
    for await (const event of control.watch(stream as AsyncIterable<ResponseStreamEvent>)) {
      switch (event.type) {
        case "response.output_text.delta":
        case "response.refusal.delta":
          if (event.delta) yield { type: "text", text: event.delta };
          break;
        case "response.output_item.done":
          if (event.item.type === "function_call") {
            if (!event.item.name) throw new ModelError("tool call without a name");
            yield { type: "tool_call", id: event.item.call_id || `call_${crypto.randomUUID()}`, name: event.item.name, arguments: argumentsText(event.item.arguments) };
          }
          break;
        case "response.completed":
        case "response.incomplete": {
          const usage = event.response.usage;
          if (usage) yield { type: "usage", input_tokens: usage.input_tokens ?? 0, output_tokens: usage.output_tokens ?? 0 };
          break;
        }
        case "response.failed":
          throw new ModelError("response failed");
        case "error":
          throw new ModelError("error event");
      }
    }
  } catch (error) {
    fail(error, signal, control);
  } finally {
    control.dispose();
  }
  if (signal.aborted) throw signal.reason;
}

function responseInput(messages: readonly Message[]): ResponseInputItem[] {
  const out: ResponseInputItem[] = [];
  for (const m of messages) {
    if (m.role === "user") out.push({ type: "message", role: "user", content: m.content });
    else if (m.role === "tool") out.push({ type: "function_call_output", call_id: m.tool_call_id, output: m.content });
    else {
      if (m.content || !m.tool_calls?.length) out.push({ type: "message", role: "assistant", content: m.content });
      for (const c of m.tool_calls ?? [])
        out.push({ type: "function_call", call_id: c.id, name: c.name, arguments: JSON.stringify(c.args) });
    }
  }
  return out;
}

/**
 * A call's arguments as the text the protocol defines. Some servers that speak it send a JSON
 * object instead: that object's JSON text, not "[object Object]" (nor a non-string the loop
 * cannot read); nothing sent reads as no arguments.
 */
function argumentsText(value: unknown): string {
  if (typeof value === "string") return value;
  return value === undefined || value === null ? "" : JSON.stringify(value);
}
