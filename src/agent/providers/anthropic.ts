/**
 * The Anthropic provider over the official SDK. The client is built from explicit options only
 * (key, endpoint, fetch, retries, timeout); nothing is taken from the environment where the SDK
 * lets us choose. Structured answers use the service's final_answer tool strategy. The SDK
 * retries (its waits end when the signal aborts) and times each attempt up to the response
 * headers; the stream after them is timed here, between events (attempt.ts, as gemini does).
 */
import Anthropic, { type ClientOptions } from "@anthropic-ai/sdk";
import type {
  ContentBlockParam,
  MessageParam,
  RawMessageStreamEvent,
  Tool,
} from "@anthropic-ai/sdk/resources/messages/messages";
import { ModelError } from "../../errors.js";
import type { Message } from "../../store/ports.js";
import type { Model, ModelEvent, ModelRequest, ProviderOptions, ToolSpec } from "../model.js";
import { AttemptControl } from "./attempt.js";

const DEFAULT_BASE_URL = "https://api.anthropic.com";
const MAX_TOKENS = 4096;

/**
 * The SDK constructor merges ANTHROPIC_CUSTOM_HEADERS from the process environment whatever the
 * options say; this client puts back exactly the headers it was given (none).
 */
class IsolatedAnthropic extends Anthropic {
  constructor(options: ClientOptions) {
    super(options);
    const self = this as unknown as { _options: ClientOptions };
    self._options = { ...self._options, defaultHeaders: options.defaultHeaders ?? {} };
  }
}

export function createAnthropicModel(options: ProviderOptions): Model {
  const client = new IsolatedAnthropic({
    apiKey: options.apiKey,
    // Every value the constructor would otherwise read from the environment (ANTHROPIC_BASE_URL,
    // ANTHROPIC_LOG, the webhook key) is given here. The SDK logs nothing; failures surface as
    // ModelError.
    baseURL: options.baseURL || DEFAULT_BASE_URL,
    webhookKey: null,
    defaultHeaders: {},
    logLevel: "off",
    fetch: options.fetch,
    maxRetries: options.maxRetries,
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
  });

  return {
    provider: "anthropic",
    name: options.model,
    structuredOutput: false,
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      const { signal } = request;
      if (signal.aborted) throw signal.reason;
      const tools = request.tools.map(toAnthropicTool);
      // Its signal goes to the SDK: the run's abort and the timeout between events both reach the request.
      const control = new AttemptControl(signal, options.timeoutMs);
      let stream: AsyncIterable<RawMessageStreamEvent> & { controller: AbortController };
      try {
        stream = await client.messages.create(
          {
            model: options.model,
            max_tokens: MAX_TOKENS,
            ...(request.system ? { system: request.system } : {}),
            messages: toAnthropicMessages(request.messages),
            ...(tools.length > 0 ? { tools } : {}),
            stream: true,
          },
          { signal: control.signal },
        );
      } catch (error) {
        control.dispose();
        throw toModelError(error, signal, control);
      }

      const blocks = new Map<number, { id: string; name: string; json: string }>();
      let inputTokens = 0;
      let outputTokens = 0;
      let sawUsage = false;
      let finished = false;
      try {
        for await (const event of control.watch(stream)) {
          switch (event.type) {
            case "message_start": {
              const u = event.message.usage;
              inputTokens = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
              outputTokens = u.output_tokens ?? 0;
              sawUsage = true;
              break;
            }
            case "content_block_start": {
              const block = event.content_block;
              if (block.type === "tool_use") blocks.set(event.index, { id: block.id, name: block.name, json: "" });
              break;
            }
            case "content_block_delta": {
              const delta = event.delta;
              if (delta.type === "text_delta") {
                if (delta.text) yield { type: "text", text: delta.text };
              } else if (delta.type === "input_json_delta") {
                const block = blocks.get(event.index);
                if (block) block.json += delta.partial_json;
              }
              break;
            }
            case "content_block_stop": {
              const block = blocks.get(event.index);
              if (block) {
                blocks.delete(event.index);
                yield { type: "tool_call", id: block.id, name: block.name, arguments: block.json.trim() ? block.json : "{}" };
              }
              break;
            }
            case "message_delta": {
              const u = event.usage;
              if (typeof u.output_tokens === "number") outputTokens = u.output_tokens;
              if (typeof u.input_tokens === "number") {
                inputTokens = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
              }
              sawUsage = true;
              break;
            }
            case "message_stop":
              break;
          }
        }
        finished = true;
        // The SDK ends the stream quietly when it is aborted.
        if (signal.aborted) throw signal.reason;
      } catch (error) {
        throw toModelError(error, signal, control);
      } finally {
        // The consumer stopped early (or the stream failed): free the connection.
        if (!finished) stream.controller.abort();
        control.dispose();
      }
      if (sawUsage) yield { type: "usage", input_tokens: inputTokens, output_tokens: outputTokens };
    },
  };
}

function toAnthropicTool(tool: ToolSpec): Tool {
  return {
    name: tool.name,
    description: tool.description,
    input_schema: tool.parameters as unknown as Tool.InputSchema,
  };
}

/**
 * History in Anthropic's shape: tool results become `tool_result` blocks of a user message right
 * after the assistant turn, and consecutive messages of one role are merged (roles alternate).
 */
export function toAnthropicMessages(messages: readonly Message[]): MessageParam[] {
  const out: { role: "user" | "assistant"; content: ContentBlockParam[] }[] = [];
  const push = (role: "user" | "assistant", blocks: ContentBlockParam[]) => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === "user") {
      push("user", [{ type: "text", text: m.content }]);
    } else if (m.role === "assistant") {
      const blocks: ContentBlockParam[] = [];
      if (m.content) blocks.push({ type: "text", text: m.content });
      for (const call of m.tool_calls ?? []) blocks.push({ type: "tool_use", id: call.id, name: call.name, input: call.args });
      push("assistant", blocks);
    } else {
      push("user", [{ type: "tool_result", tool_use_id: m.tool_call_id, content: m.content, is_error: m.is_error }]);
    }
  }
  return out.map(({ role, content }): MessageParam => {
    const only = content.length === 1 ? content[0] : undefined;
    // A lone text block is sent as plain string content.
    const body = only && only.type === "text" ? only.text : content;
    return role === "user" ? { role: "user", content: body } : { role: "assistant", content: body };
  });
}

function toModelError(error: unknown, signal: AbortSignal, control: AttemptControl): unknown {
  if (signal.aborted) return signal.reason;
  const kind = control.timedOut ? "timeout" : failureKind(error);
  return new ModelError(`anthropic request failed: ${kind}`, { cause: error });
}

/** The status or kind of a failure; never the message or body, which may echo the request. */
function failureKind(error: unknown): string {
  if (error instanceof Anthropic.APIUserAbortError) return "aborted";
  if (error instanceof Anthropic.APIConnectionTimeoutError) return "timeout";
  if (error instanceof Anthropic.APIConnectionError) return "connection error";
  if (error instanceof Anthropic.APIError) return typeof error.status === "number" ? `status ${error.status}` : "error in stream";
  if (error instanceof SyntaxError) return "malformed response";
  return "unexpected error";
}
