/**
 * One tool call's exchange with one peer: every call goes through the policy client
 * (`ctx.api.request`, or `relayDecision` for a decision this agent relays), as one JSON-RPC POST
 * to `a2a.path`. JSON-RPC ids and message ids are derived from the tool call's id, so a run that
 * resumes after an approval and runs the same tool call again builds the very same bodies (the
 * approval gate recognizes a call by its digest).
 */
import type { ToolContext } from "../../agent/tools/define.js";
import { sleep } from "../../clock.js";
import type { JsonValue } from "../../json.js";
import { isPeerApiClient, type RelayRecord } from "../../policy/types.js";
import type { A2AVersion } from "../jsonrpc.js";
import type { CardBook, PeerCard } from "./card.js";
import type { Peer } from "./peer.js";
import { type PeerMethod, rpcBody, rpcHeaders, versionOfBody } from "./protocol.js";
import { type PeerTask, readReply } from "./reply.js";

type Json = Record<string, JsonValue>;

/** How long to wait between GetTask calls while a peer's task is still working. */
const POLL_FIRST_MS = 200;
const POLL_MAX_MS = 2_000;

export interface PeerSettings {
  /** A2A_FORWARD_ORIGIN is `auto`. */
  readonly forwardOrigin: boolean;
  readonly originMaxChars: number;
  readonly replyMaxChars: number;
}

export interface Session {
  readonly ctx: ToolContext;
  readonly peer: Peer;
  readonly settings: PeerSettings;
  /** The peer's checked card (cached per A2A_CARD_TTL_S). */
  card(): Promise<PeerCard>;
  /** A JSON-RPC id unique within the tool call, the same when the tool call runs again. */
  nextId(): string;
  call(method: PeerMethod, params: Json, v: A2AVersion): Promise<PeerTask>;
  /** Sends a whole JSON-RPC body (built here or recorded by the gate); a relay marks a relayed decision. */
  post(body: Json, relay?: RelayRecord): Promise<PeerTask>;
  /** Asks GetTask until the task leaves submitted/working (only where the policy allows GetTask). */
  untilSettled(task: PeerTask, v: A2AVersion): Promise<PeerTask>;
}

export function openSession(ctx: ToolContext, peer: Peer, cards: CardBook, settings: PeerSettings): Session {
  let seq = 0;
  const session: Session = {
    ctx,
    peer,
    settings,
    card: () => cards.get(ctx.api, peer),
    nextId: () => `${ctx.toolCallId}-${++seq}`,
    call: (method, params, v) => session.post(rpcBody(session.nextId(), method, params, v)),
    async post(body, relay) {
      const request = { method: "POST", path: peer.path, body, headers: rpcHeaders(versionOfBody(body)) };
      const response = relay && isPeerApiClient(ctx.api) ? await ctx.api.relayDecision(peer.name, request, relay) : await ctx.api.request(peer.name, request);
      return readReply(peer.name, response);
    },
    async untilSettled(task, v) {
      let wait = POLL_FIRST_MS;
      let current = task;
      while ((current.state === "working" || current.state === "submitted") && current.kind === "task" && current.taskId && peer.allows.GetTask !== "refused") {
        await sleep(wait, ctx.signal);
        wait = Math.min(POLL_MAX_MS, wait * 2);
        current = await session.call("GetTask", { id: current.taskId }, v);
      }
      return current;
    },
  };
  return session;
}
