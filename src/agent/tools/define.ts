/** Tools: what the model may call. `defineTool` checks a definition once, at module load. */
import { Validator } from "@cfworker/json-schema";
import type { PublicPrincipal } from "../../auth/principal.js";
import type { JsonValue } from "../../json.js";
import type { ApiClient, DeclaredCall } from "../../policy/types.js";

export interface ToolContext {
  readonly principal: PublicPrincipal;
  readonly threadId: string;
  readonly runId: string;
  /** The model's id of this tool call (stable when a resumed run runs the tool again). */
  readonly toolCallId: string;
  /** Aborted when the run is cancelled, times out or is interrupted. */
  readonly signal: AbortSignal;
  /** Every outbound call goes through this client (the policy decides it). */
  readonly api: ApiClient;
  /**
   * require_user_mentioned: true when the user's own words in this run contain `value` (case
   * insensitive). For a request another agent presents, A2A_DELEGATED_MENTIONS decides what the
   * user's words are: `origin` (the words the agent forwarded with the origin extension),
   * `request` (the agent's request text) or `refuse` (none: always false).
   */
  userMentioned(value: string): boolean;
}

export interface ToolDefinition<A extends Record<string, JsonValue> = Record<string, JsonValue>> {
  readonly name: string;
  readonly description: string;
  /** JSON Schema object of the arguments. */
  readonly parameters: Readonly<Record<string, JsonValue>>;
  /** The tool's declared outbound calls (spec 2.8); empty for tools that call nothing. */
  readonly calls: readonly DeclaredCall[];
  readonly redact?: readonly string[];
  run(args: A, ctx: ToolContext): Promise<string | JsonValue> | string | JsonValue;
}

export interface Tool extends ToolDefinition {
  /** Checks arguments against `parameters`; returns the problems (empty when they fit). */
  check(args: Record<string, JsonValue>): string[];
}

const TOOL_NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

export function defineTool<A extends Record<string, JsonValue>>(definition: ToolDefinition<A>): Tool {
  const { name, description, parameters, calls } = definition;
  if (!TOOL_NAME.test(name)) throw new TypeError(`defineTool: name must match ${TOOL_NAME.source}`);
  if (typeof description !== "string" || description.length === 0)
    throw new TypeError(`defineTool(${name}): description is required`);
  if (typeof parameters !== "object" || parameters === null || parameters.type !== "object")
    throw new TypeError(`defineTool(${name}): parameters must be a JSON Schema with type "object"`);
  if (!Array.isArray(calls)) throw new TypeError(`defineTool(${name}): calls must be a list (may be empty)`);
  // @cfworker/json-schema interprets schemas (no code generation), so it runs on workerd too.
  const validator = new Validator(parameters as object, "2020-12", false);
  return Object.freeze({
    ...definition,
    calls: Object.freeze([...calls]),
    run: definition.run as Tool["run"],
    check(args: Record<string, JsonValue>) {
      const result = validator.validate(args);
      if (result.valid) return [];
      return result.errors
        .filter((e) => e.keyword !== "properties" && e.keyword !== "$ref")
        .map((e) => `${e.instanceLocation.replace(/^#/, "") || "/"}: ${e.error}`);
    },
  });
}
