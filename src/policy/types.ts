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

export const noPolicyClient: ApiClient = {
  async request() {
    throw new ApiPolicyError("No API policy is configured: outbound calls are refused.");
  },
};
