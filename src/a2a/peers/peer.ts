/**
 * Each `protocol: a2a` API of the policy as a peer agent: where it is reached, who it is, and
 * which of its JSON-RPC methods the policy can ever allow. The policy's own judge decides, once at
 * startup, on a representative call of each method (POST to `a2a.path` naming the method, and
 * for decisions `a2a_operation`): a tool whose method can never be allowed is not offered, and a
 * decision the policy would send without asking a person is never relayed.
 */
import type { ApiPolicy, Policy } from "../../policy/document.js";
import { describeCall, judge } from "../../policy/judge.js";
import type { PeerMethod } from "./protocol.js";

/** What the policy does with one kind of call: refuses it, lets it through, or holds it for a person. */
export type Allowance = "refused" | "free" | "gated";

export interface PeerAllowances {
  readonly card: Allowance;
  readonly SendMessage: Allowance;
  readonly SendStreamingMessage: Allowance;
  readonly GetTask: Allowance;
  readonly CancelTask: Allowance;
  /** Decisions on the peer's approvals, by the method that would carry them. */
  readonly approve: { readonly SendMessage: Allowance; readonly SendStreamingMessage: Allowance };
  readonly reject: { readonly SendMessage: Allowance; readonly SendStreamingMessage: Allowance };
}

export interface Peer {
  /** The API name: the tools are `ask_<name>`, `status_<name>`, `cancel_<name>`. */
  readonly name: string;
  readonly description: string | undefined;
  /** `a2a.path`: every JSON-RPC call is a POST here. */
  readonly path: string;
  readonly cardPath: string;
  /** Base URL + `a2a.path`: the card must name this endpoint. */
  readonly endpoint: string;
  /** The peer's agent id: the audience its tokens are minted for (`exchange.audience`), when known. */
  readonly agentId: string | undefined;
  /** The API sends a credential (bearer, forward or exchange). */
  readonly credential: boolean;
  readonly allows: PeerAllowances;
}

function allowance(api: ApiPolicy, method: string, path: string, rpcMethod?: string, a2aOperation?: "approve" | "reject"): Allowance {
  const verdict = judge(api, describeCall(method, path, { rpcMethod, a2aOperation }));
  if (!verdict.allowed) return "refused";
  return verdict.gate ? "gated" : "free";
}

export function describePeers(policy: Policy, baseUrls: ReadonlyMap<string, string>): Peer[] {
  const peers: Peer[] = [];
  for (const api of policy.apis.values()) {
    if (api.protocol !== "a2a" || api.a2aPath === undefined) continue;
    const path = api.a2aPath;
    const cardPath = `${path.replace(/\/+$/, "")}/.well-known/agent-card.json`;
    const rpc = (m: PeerMethod, op?: "approve" | "reject") => allowance(api, "POST", path, m, op);
    peers.push({
      name: api.name,
      description: api.description,
      path,
      cardPath,
      endpoint: `${baseUrls.get(api.name) ?? ""}${path}`,
      agentId: api.exchange?.audience,
      credential: api.auth !== "none",
      allows: {
        card: allowance(api, "GET", cardPath),
        SendMessage: rpc("SendMessage"),
        SendStreamingMessage: rpc("SendStreamingMessage"),
        GetTask: rpc("GetTask"),
        CancelTask: rpc("CancelTask"),
        approve: { SendMessage: rpc("SendMessage", "approve"), SendStreamingMessage: rpc("SendStreamingMessage", "approve") },
        reject: { SendMessage: rpc("SendMessage", "reject"), SendStreamingMessage: rpc("SendStreamingMessage", "reject") },
      },
    });
  }
  return peers;
}
