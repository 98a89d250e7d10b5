/**
 * The peer tools (CONTRACT 6): for every `protocol: a2a` API `<api>` of the policy, `ask_<api>`
 * `{message, task_id?}` (SendMessage, or SendStreamingMessage when the card declares streaming),
 * `status_<api>` `{task_id}` (GetTask) and `cancel_<api>` `{task_id}` (CancelTask). Each reads
 * the peer's card first and makes every call through the policy client, which judges it like any
 * other; a tool whose method the policy can never allow is not offered (peer.ts). Refused before
 * anything is sent: a call to this agent, to an agent already in the delegation chain, and
 * outside dev a credential over plain http to a host that is not local (identity.ts).
 */
import { defineTool, type Tool, type ToolContext } from "../../agent/tools/define.js";
import type { PublicPrincipal } from "../../auth/principal.js";
import type { Clock } from "../../clock.js";
import { ApiPolicyError, ConfigurationError } from "../../errors.js";
import type { Logger } from "../../observability/logger.js";
import type { Policy } from "../../policy/document.js";
import type { DeclaredCall } from "../../policy/types.js";
import type { Settings } from "../../settings/parse.js";
import { a2aUrl } from "../card.js";
import { type CardBook, createCardBook } from "./card.js";
import { chainRefusal, contextIdFor, type SelfIdentity, standingRefusal } from "./identity.js";
import { originMetadata } from "./origin.js";
import { describePeers, type Peer } from "./peer.js";
import { type PeerMethod, sendParams, textPart, userMessage } from "./protocol.js";
import { peerResult } from "./result.js";
import { openSession, type PeerSettings, type Session } from "./session.js";
import { resumeRelayed, settle } from "./settle.js";

export type PeerToolSettings = Pick<
  Settings,
  "dev" | "HOST" | "PORT" | "APP_URL" | "A2A_NAME" | "TOKEN_EXCHANGE_CLIENT_ID" | "A2A_FORWARD_ORIGIN" | "A2A_CARD_TTL_S" | "A2A_ORIGIN_MAX_CHARS" | "A2A_REPLY_MAX_CHARS"
>;

export interface PeerToolsDeps {
  readonly policy: Policy;
  /** Base URL of each API, as the policy client sends to it. */
  readonly baseUrls: ReadonlyMap<string, string>;
  readonly settings: PeerToolSettings;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** What every tool of one peer shares. */
interface Kit {
  readonly peer: Peer;
  readonly cards: CardBook;
  readonly settings: PeerSettings;
  /** Set when every call to this peer is refused (this agent itself, plain http). */
  readonly standing: string | undefined;
}

const TASK_ID = { type: "string", minLength: 1, maxLength: 256, description: "The id of a task of this agent (task_id of an earlier result)." } as const;

function open(kit: Kit, ctx: ToolContext): Session {
  const refusal = kit.standing ?? chainRefusal(kit.peer, ctx.principal);
  if (refusal) throw new ApiPolicyError(`${refusal}; nothing was sent`);
  return openSession(ctx, kit.peer, kit.cards, kit.settings);
}

/** The calls a tool may make, as declared calls (spec 2.8): only those the policy can allow. */
function declared(peer: Peer, methods: readonly PeerMethod[], decisions: boolean): DeclaredCall[] {
  const calls: DeclaredCall[] = [{ api: peer.name, method: "GET", path: peer.cardPath }];
  const post = (rpc_method: string, a2a_operation?: "approve" | "reject"): DeclaredCall => ({ api: peer.name, method: "POST", path: peer.path, rpc_method, ...(a2a_operation ? { a2a_operation } : {}) });
  for (const m of methods) if (peer.allows[m] !== "refused") calls.push(post(m));
  if (decisions)
    for (const op of ["approve", "reject"] as const)
      for (const m of ["SendMessage", "SendStreamingMessage"] as const) if (peer.allows[op][m] === (op === "approve" ? "gated" : "free")) calls.push(post(m, op));
  return calls;
}

function about(peer: Peer): string {
  return `the agent ${peer.name}${peer.description ? ` (${peer.description})` : ""}`;
}

function askTool(kit: Kit): Tool {
  const { peer } = kit;
  return defineTool<{ message: string; task_id?: string }>({
    name: `ask_${peer.name}`,
    description: `Sends a message to ${about(peer)} and waits for its answer. Returns {task_id, context_id, state, text}. Pass task_id to continue a task of that agent (one waiting for input).`,
    parameters: {
      type: "object",
      properties: { message: { type: "string", minLength: 1, description: "What to tell or ask the other agent." }, task_id: TASK_ID },
      required: ["message"],
      additionalProperties: false,
    },
    calls: declared(peer, ["SendMessage", "SendStreamingMessage", "GetTask"], true),
    async run(args, ctx) {
      const s = open(kit, ctx);
      const resumed = await resumeRelayed(s);
      if (resumed) return resumed;
      const card = await s.card();
      const v = card.version;
      const method: PeerMethod = card.streaming && peer.allows.SendStreamingMessage !== "refused" ? "SendStreamingMessage" : "SendMessage";
      const message = userMessage(
        {
          messageId: `ask-${ctx.toolCallId}`,
          parts: [textPart(args.message, v)],
          contextId: await contextIdFor(ctx.threadId, peer.name, ctx.principal.id),
          taskId: args.task_id,
          metadata: originMetadata(s, card),
        },
        v,
      );
      return settle(s, await s.call(method, sendParams(message, v), v), card);
    },
  });
}

function statusTool(kit: Kit): Tool {
  const { peer } = kit;
  return defineTool<{ task_id: string }>({
    name: `status_${peer.name}`,
    description: `Reads where a task of ${about(peer)} stands. Returns {task_id, context_id, state, text}.`,
    parameters: { type: "object", properties: { task_id: TASK_ID }, required: ["task_id"], additionalProperties: false },
    calls: declared(peer, ["GetTask"], true),
    async run(args, ctx) {
      const s = open(kit, ctx);
      const resumed = await resumeRelayed(s);
      if (resumed) return resumed;
      const card = await s.card();
      return settle(s, await s.call("GetTask", { id: args.task_id }, card.version), card);
    },
  });
}

function cancelTool(kit: Kit): Tool {
  const { peer } = kit;
  return defineTool<{ task_id: string }>({
    name: `cancel_${peer.name}`,
    description: `Cancels a task of ${about(peer)}. Returns {task_id, context_id, state, text}.`,
    parameters: { type: "object", properties: { task_id: TASK_ID }, required: ["task_id"], additionalProperties: false },
    calls: declared(peer, ["CancelTask"], false),
    async run(args, ctx) {
      const s = open(kit, ctx);
      const card = await s.card();
      return peerResult(await s.call("CancelTask", { id: args.task_id }, card.version), kit.settings.replyMaxChars);
    },
  });
}

/** This agent, as the refusals of spec 5.8 know it. */
function selfIdentity(settings: PeerToolSettings): SelfIdentity {
  return { agentId: settings.TOKEN_EXCHANGE_CLIENT_ID, url: a2aUrl(settings), dev: settings.dev };
}

/**
 * Spec 5.8 for every call to a peer, not only the peer tools' (the policy client asks before the
 * gate): why a call to API `apiName` is refused for this caller (the API is this agent, or an
 * agent already in the request's delegation chain, or would carry a credential over plain http),
 * or undefined.
 */
export function peerCallRefusal(deps: Pick<PeerToolsDeps, "policy" | "baseUrls" | "settings">): (apiName: string, principal: PublicPrincipal) => string | undefined {
  const self = selfIdentity(deps.settings);
  const peers = new Map(describePeers(deps.policy, deps.baseUrls).map((peer) => [peer.name, peer]));
  return (apiName, principal) => {
    const peer = peers.get(apiName);
    return peer && (standingRefusal(peer, self) ?? chainRefusal(peer, principal));
  };
}

/** The peer tools the policy allows, in policy order; what is left out, and why, is logged. */
export function peerTools(deps: PeerToolsDeps): Tool[] {
  const { settings, logger } = deps;
  const self = selfIdentity(settings);
  const cards = createCardBook(deps.clock, settings.A2A_CARD_TTL_S);
  const shared: PeerSettings = {
    forwardOrigin: settings.A2A_FORWARD_ORIGIN === "auto",
    originMaxChars: settings.A2A_ORIGIN_MAX_CHARS,
    replyMaxChars: settings.A2A_REPLY_MAX_CHARS,
  };
  const tools: Tool[] = [];
  for (const peer of describePeers(deps.policy, deps.baseUrls)) {
    if (peer.allows.card === "refused") {
      logger.warning("peer agent tools left out: the policy refuses reading the agent card", { api: peer.name, path: peer.cardPath });
      continue;
    }
    const standing = standingRefusal(peer, self);
    if (standing) logger.warning("peer agent tools refuse every call", { api: peer.name, reason: standing });
    const kit: Kit = { peer, cards, settings: shared, standing };
    const { allows } = peer;
    if (allows.SendMessage !== "refused" || allows.SendStreamingMessage !== "refused") tools.push(askTool(kit));
    if (allows.GetTask !== "refused") tools.push(statusTool(kit));
    if (allows.CancelTask !== "refused") tools.push(cancelTool(kit));
  }
  return tools;
}

/** Adds the peer tools to the agent's; a tool of the same name given to createApp stops startup. */
export function addPeerTools(tools: Map<string, Tool>, peers: readonly Tool[]): void {
  for (const tool of peers) {
    if (tools.has(tool.name)) throw new ConfigurationError(`A tool is named ${tool.name}, the name of a peer agent tool of the API policy: rename the tool.`);
    tools.set(tool.name, tool);
  }
}
