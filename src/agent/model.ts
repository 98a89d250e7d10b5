/**
 * The model port. Providers (fake now; openai, anthropic, gemini later) turn one request into a
 * stream of events. A provider failure throws ModelError; the detail goes to the log only.
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
}

export type ModelEvent =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_call"; readonly id: string; readonly name: string; readonly arguments: string }
  | { readonly type: "usage"; readonly input_tokens: number; readonly output_tokens: number };

export interface Model {
  readonly provider: string;
  readonly name: string;
  stream(request: ModelRequest): AsyncIterable<ModelEvent>;
}

/** Marks the error result the loop gives a call whose arguments were not valid JSON. */
export const INVALID_ARGUMENTS_PREFIX = "Invalid tool arguments:";

/** How often the loop asks again, within one step, after arguments that were not valid JSON. */
export const MAX_ARGUMENT_RETRIES = 2;
