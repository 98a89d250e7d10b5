/**
 * The model port. Providers (fake, openai, openai-compatible, anthropic, gemini) turn one request
 * into a stream of events. A provider failure throws ModelError; the detail goes to the log only.
 */
import type { Message } from "../store/ports.js";
import type { JsonValue } from "../json.js";

export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  /** JSON Schema object of the arguments. */
  readonly parameters: Readonly<Record<string, JsonValue>>;
}

export interface ModelRequest {
  readonly system: string;
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
  /** Aborted when the run is cancelled, times out or is interrupted. */
  readonly signal: AbortSignal;
  /**
   * Structured answers with the provider strategy: the final answer must be JSON fitting this
   * schema (object root). Only sent to models whose `structuredOutput` is true.
   */
  readonly responseSchema?: { readonly name: string; readonly schema: Readonly<Record<string, JsonValue>> };
}

export type ModelEvent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_call"; readonly id: string; readonly name: string; readonly arguments: string }
  | { readonly type: "usage"; readonly input_tokens: number; readonly output_tokens: number };

export interface Model {
  readonly provider: string;
  readonly name: string;
  /** True when the provider can constrain the answer to a JSON schema with tools bound. */
  readonly structuredOutput?: boolean;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

/** What every provider is built from (the settings, read once by app.ts). */
export interface ProviderOptions {
  readonly model: string;
  readonly apiKey: string;
  /** Endpoint override (OPENAI_BASE_URL for openai-compatible; tests point SDKs at loopback). */
  readonly baseURL?: string | undefined;
  /** One model request; undefined keeps the SDK default (MODEL_TIMEOUT_S=0). */
  readonly timeoutMs?: number | undefined;
  readonly maxRetries: number;
  /** openai and openai-compatible only. */
  readonly reasoningEffort?: "none" | "minimal" | "low" | "medium" | "high" | "xhigh" | undefined;
  /** openai and openai-compatible only: the responses API instead of chat completions. */
  readonly useResponsesApi?: boolean | undefined;
  /** Passed to the SDK explicitly (never let an SDK pick its own transport or environment). */
  readonly fetch: typeof fetch;
}

/** Marks the error result the loop gives a call whose arguments were not valid JSON. */
export const INVALID_ARGUMENTS_PREFIX = "Invalid tool arguments:";

/** How often the loop asks again, within one step, after arguments that were not valid JSON. */
export const MAX_ARGUMENT_RETRIES = 2;
