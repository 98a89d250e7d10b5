/**
 * The outbound API client as tools see it (CONTRACT section 2). The policy client implements
 * it; until a policy is configured every call is refused before anything is sent.
 */
import { ApiPolicyError } from "../errors.js";
import type { JsonValue } from "../json.js";

/** One entry of a tool's declared calls (spec 2.8). */
export interface DeclaredCall {
  readonly api: string;
  readonly method: string;
  readonly operation_id?: string;
  readonly path?: string;
  readonly rpc_method?: string;
  readonly a2a_operation?: "approve" | "reject";
}

export interface ApiRequest {
  readonly method: string;
  readonly path: string;
  readonly pathParams?: Readonly<Record<string, string | number>>;
  readonly operationId?: string;
  readonly query?: Readonly<Record<string, string | number | boolean | readonly (string | number | boolean)[]>>;
  readonly body?: JsonValue;
  readonly headers?: Readonly<Record<string, string>>;
  /** Body and query fields masked in approvals and traces. */
  readonly redact?: readonly string[];
}

export interface ApiResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Parsed when the answer is JSON, else text. */
  readonly body: JsonValue | string;
}

export interface ApiClient {
  request(api: string, request: ApiRequest): Promise<ApiResponse>;
}

/** What a relayed decision's approval records beside the call (approvals/relay.ts builds it). */
export interface RelayRecord {
  readonly nested: Readonly<Record<string, JsonValue>>;
  readonly effect: Readonly<Record<string, JsonValue>>;
  /** The latest the approval here may expire (ISO 8601). */
  readonly expiresBy: string;
}

/** An approval a tool call asked for earlier, as a resumed run's tool reads it back. */
export interface RecordedApproval {
  readonly approvalId: string;
  readonly status: "pending" | "approved" | "rejected" | "expired";
  /** The recorded call's body (null once its answer is kept). */
  readonly body: JsonValue | null;
  /** The answer of the approved call once sent (a run that stopped before its tool returned reads it here). */
  readonly answer: ApiResponse | null;
  readonly nested: JsonValue;
  readonly comment: string | null;
}

/**
 * Internal: the client of one tool call as the built-in peer tools (a2a/peers) use it. A tool made
 * with defineTool is typed with ApiClient and never relies on the rest.
 */
export interface PeerApiClient extends ApiClient {
  /**
   * Sends a decision on a peer agent's approval that relays through this agent: when the policy
   * gates it (it must: spec 2.7), the approval asked here shows `relay` and expires before it.
   */
  relayDecision(api: string, request: ApiRequest, relay: RelayRecord): Promise<ApiResponse>;
  /** The approvals this tool call asked for in earlier runs of the turn, oldest first. */
  recorded(): Promise<readonly RecordedApproval[]>;
  /** The user's own words of this run, to forward to a peer (the origin extension); undefined when unknown. */
  readonly originWords: string | undefined;
}

export function isPeerApiClient(client: ApiClient): client is PeerApiClient {
  return typeof (client as Partial<PeerApiClient>).relayDecision === "function";
}

export const noPolicyClient: ApiClient = {
  async request() {
    throw new ApiPolicyError("No API policy is configured: outbound calls are refused.");
  },
};
