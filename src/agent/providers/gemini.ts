/**
 * The Gemini provider over the REST API with `fetch` only (no SDK): streamGenerateContent with
 * server-sent events. Retries, backoff and the per-request timeout are done here (with
 * attempt.ts). Structured answers use the service's final_answer tool strategy (Gemini 2.x refuses
 * a JSON response type together with function calling), so `structuredOutput` is false and no
 * response schema is sent.
 */
import { ModelError } from "../../errors.js";
import { sleep } from "../../clock.js";
import type { JsonValue } from "../../json.js";
import { sseEvents } from "../../sse-decode.js";
import type { Message } from "../../store/ports.js";
import type { Model, ModelEvent, ModelRequest, ProviderOptions, ToolSpec } from "../model.js";
import { AttemptControl, backoffMs, isRetryable } from "./attempt.js";

const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";
/**
 * Gemini 3 rejects a replayed function call without its thought signature; Google documents this
 * value for history whose signature is unknown (kept in another process, or older than the cache).
 */
const SKIP_SIGNATURE = "skip_thought_signature_validator";
const SIGNATURE_CACHE_SIZE = 2000;

/** Thought signatures by tool call id (ids are unique), so a replayed call carries the real one. */
const signatures = new Map<string, string>();

function rememberSignature(id: string, signature: string): void {
  signatures.delete(id);
  signatures.set(id, signature);
  while (signatures.size > SIGNATURE_CACHE_SIZE) {
    const oldest = signatures.keys().next().value;
    if (oldest === undefined) break;
    signatures.delete(oldest);
  }
}

interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { id?: string; name: string; args?: Record<string, JsonValue> };
  functionResponse?: { name: string; response: Record<string, JsonValue> };
}

interface GeminiContent {
  role: "user" | "model";
  parts: GeminiPart[];
}

interface GeminiChunk {
  candidates?: { content?: { parts?: GeminiPart[] } }[];
  usageMetadata?: { promptTokenCount?: number; candidatesTokenCount?: number; thoughtsTokenCount?: number };
  error?: unknown;
}

export function createGeminiModel(options: ProviderOptions): Model {
  const base = (options.baseURL || DEFAULT_BASE_URL).replace(/\/+$/, "");
  const modelId = options.model.replace(/^models\//, "");
  const url = `${base}/v1beta/models/${encodeURIComponent(modelId)}:streamGenerateContent?alt=sse`;
  const fetchImpl = options.fetch;
  // Gemini 1.x/2.x neither send nor check thought signatures on function calls.
  const needsSignature = !/^gemini-[12](\.|-)/.test(modelId);

  return {
    provider: "gemini",
    name: options.model,
    structuredOutput: false,
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      const { signal } = request;
      const body = JSON.stringify(buildBody(request, needsSignature));
      const headers = {
        "content-type": "application/json",
        accept: "text/event-stream",
        "x-goog-api-key": options.apiKey,
      };

      let attempt = 0;
      let response: Response;
      let control: AttemptControl;
      for (;;) {
        if (signal.aborted) throw signal.reason;
        control = new AttemptControl(signal, options.timeoutMs);
        control.resume();
        let failure: { kind: string; cause: unknown; headers: Headers | null } | null = null;
        try {
          response = await fetchImpl(url, { method: "POST", headers, body, signal: control.signal, redirect: "error" });
          control.resume();
          if (response.ok && response.body) break;
          const detail = response.ok ? "no body" : await readSnippet(response);
          failure = {
            kind: response.ok ? "empty response" : `status ${response.status}`,
            cause: new Error(`HTTP ${response.status}: ${detail}`),
            headers: response.headers,
          };
          if (response.ok || !isRetryable(response.status, response.headers)) {
            control.dispose();
            throw new ModelError(`gemini request failed: ${failure.kind}`, { cause: failure.cause });
          }
        } catch (error) {
          control.dispose();
          if (signal.aborted) throw signal.reason;
          if (failure === null) failure = { kind: control.timedOut ? "timeout" : "connection error", cause: error, headers: null };
          else if (error instanceof ModelError) throw error;
        }
        control.dispose();
        if (attempt >= options.maxRetries) throw new ModelError(`gemini request failed: ${failure.kind}`, { cause: failure.cause });
        attempt++;
        await sleep(backoffMs(attempt, failure.headers), signal);
      }

      let inputTokens = 0;
      let outputTokens = 0;
      let sawUsage = false;
      let seq = 0;
      try {
        // An event cut off by the end of the stream is still read: half a chunk fails as malformed.
        for await (const { data } of sseEvents(response.body, { dispatchUnterminated: true })) {
          const trimmed = data.trim();
          if (!trimmed || trimmed === "[DONE]") continue;
          control.resume();
          let chunk: GeminiChunk;
          try {
            chunk = JSON.parse(data) as GeminiChunk;
          } catch (error) {
            throw new ModelError("gemini request failed: malformed response", { cause: error });
          }
          if (chunk.error !== undefined) {
            throw new ModelError("gemini request failed: error in stream", { cause: new Error(JSON.stringify(chunk.error).slice(0, 1000)) });
          }
          const parts = chunk.candidates?.[0]?.content?.parts ?? [];
          for (const part of parts) {
            if (part.functionCall) {
              // A call the loop could not name, nor send back in the next turn.
              if (typeof part.functionCall.name !== "string" || part.functionCall.name === "") throw new ModelError("gemini request failed: malformed response");
              const id = part.functionCall.id || `call_${randomId()}_${++seq}`;
              if (part.thoughtSignature) rememberSignature(id, part.thoughtSignature);
              yield { type: "tool_call", id, name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) };
            } else if (typeof part.text === "string" && part.text && !part.thought) {
              yield { type: "text", text: part.text };
            }
          }
          const u = chunk.usageMetadata;
          if (u) {
            inputTokens = u.promptTokenCount ?? 0;
            outputTokens = (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0);
            sawUsage = true;
          }
        }
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (error instanceof ModelError) throw error;
        throw new ModelError(`gemini request failed: ${control.timedOut ? "timeout" : "stream interrupted"}`, { cause: error });
      } finally {
        control.dispose();
      }
      if (sawUsage) yield { type: "usage", input_tokens: inputTokens, output_tokens: outputTokens };
    },
  };
}

export function buildBody(request: ModelRequest, needsSignature = true): Record<string, unknown> {
  const body: Record<string, unknown> = { contents: toGeminiContents(request.messages, needsSignature) };
  if (request.system) body.systemInstruction = { parts: [{ text: request.system }] };
  if (request.tools.length > 0) body.tools = [{ functionDeclarations: request.tools.map(toDeclaration) }];
  return body;
}

/**
 * Full JSON Schema goes in `parametersJsonSchema` (Gemini's `parameters` takes only an OpenAPI
 * subset and refuses keywords such as `additionalProperties`).
 */
function toDeclaration(tool: ToolSpec): Record<string, unknown> {
  const { $schema: _schema, ...parameters } = tool.parameters;
  return { name: tool.name, description: tool.description, parametersJsonSchema: parameters };
}

/** History in Gemini's shape; consecutive contents of one role are merged. */
export function toGeminiContents(messages: readonly Message[], needsSignature = true): GeminiContent[] {
  const out: GeminiContent[] = [];
  const push = (role: "user" | "model", parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else out.push({ role, parts });
  };
  for (const m of messages) {
    if (m.role === "user") {
      push("user", [{ text: m.content }]);
    } else if (m.role === "assistant") {
      const parts: GeminiPart[] = [];
      if (m.content) parts.push({ text: m.content });
      (m.tool_calls ?? []).forEach((call, i) => {
        const part: GeminiPart = { functionCall: { name: call.name, args: call.args } };
        const signature = signatures.get(call.id) ?? (needsSignature && i === 0 ? SKIP_SIGNATURE : undefined);
        if (signature) part.thoughtSignature = signature;
        parts.push(part);
      });
      push("model", parts);
    } else {
      const response: Record<string, JsonValue> = { content: m.content };
      if (m.is_error) response.is_error = true;
      push("user", [{ functionResponse: { name: m.name, response } }]);
    }
  }
  return out;
}

/** The start of an error answer, for the log (the ModelError message never carries it). */
async function readSnippet(response: Response): Promise<string> {
  try {
    const text = await response.text();
    return text.slice(0, 1000);
  } catch {
    return "";
  }
}

function randomId(): string {
  const bytes = new Uint8Array(9);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
