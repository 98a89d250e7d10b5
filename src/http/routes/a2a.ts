/** Binds the framework-free A2A service to Hono: the card and the JSON-RPC endpoint (spec 4.5). */
import { Hono } from "hono";
import { agentCard } from "../../a2a/card.js";
import { ERR, rpcError, versionOf } from "../../a2a/jsonrpc.js";
import type { A2AService } from "../../a2a/service.js";
import type { JsonValue } from "../../json.js";
import type { Logger } from "../../observability/logger.js";
import type { Settings } from "../../settings/parse.js";
import { isHttpError, notFound } from "../../problems.js";
import { readJsonBody } from "../body.js";
import type { HttpEnv } from "../env.js";
import type { RequireAuth } from "../middleware/auth.js";
import { createSseStream, directStreamsEnv } from "../sse.js";

/**
 * A stream of JSON-RPC responses as server-sent events, through the shared encoder: nameless
 * frames, heartbeats while idle. A client that goes away stops the reading only: the task's run
 * goes on (it is canceled by CancelTask, not by a dropped stream).
 */
function sseResponse(events: AsyncIterable<Record<string, JsonValue>>, heartbeatMs: number, logger: Logger, direct: object | undefined): Response {
  let gone = false;
  const sse = createSseStream({ heartbeatMs, onCancel: () => (gone = true), direct });
  void (async () => {
    try {
      for await (const body of events) {
        if (gone) break;
        sse.sendData(body);
      }
    } catch (error) {
      logger.error("a2a stream failed", { error_type: error instanceof Error ? error.name : typeof error });
    } finally {
      sse.close();
    }
  })();
  return sse.response();
}

export interface CardOptions {
  readonly structured: boolean;
  readonly auth: string;
  /** HOST/PORT do not say where the service is reached (workerd): without APP_URL the card names the request's origin. */
  readonly followsRequest: boolean;
}

export function a2aRoutes({ settings, service, card: cardOptions, requireAuth }: { settings: Settings; service: A2AService; card: CardOptions; requireAuth: RequireAuth }) {
  const name = settings.A2A_NAME;
  // APP_URL, else http://HOST:PORT; a runtime whose HOST/PORT say nothing of where it is reached
  // (workerd) has the card name the origin each request came to when APP_URL is unset.
  const card = agentCard(settings, cardOptions);
  const cardFor = (url: string) =>
    settings.APP_URL === undefined && cardOptions.followsRequest ? agentCard(settings, cardOptions, new URL(url).origin) : card;
  const mine = (agent: string) => {
    if (agent !== name) throw notFound();
  };

  return new Hono<HttpEnv>()
    .get("/a2a/:agent/.well-known/agent-card.json", requireAuth("card.read"), (c) => {
      mine(c.req.param("agent"));
      return c.json(cardFor(c.req.url));
    })
    .post("/a2a/:agent", requireAuth("a2a.invoke"), async (c) => {
      mine(c.req.param("agent"));
      let body: unknown;
      try {
        body = await readJsonBody(c.req.raw, settings.MAX_REQUEST_BYTES);
      } catch (error) {
        if (isHttpError(error) && error.status === 422) return c.json(rpcError(null, ERR.parse, "Parse error"));
        throw error;
      }
      const version = versionOf(c.req.header("a2a-version"));
      if (!version) {
        const id = (body as { id?: unknown } | null)?.id;
        return c.json(rpcError(typeof id === "string" || typeof id === "number" ? id : null, ERR.versionNotSupported, "A2A version not supported: use 1.0 or 0.3"));
      }
      const reply = await service.handle(body, { caller: c.get("caller"), version, logger: c.get("logger"), span: c.get("span") });
      if (reply.kind === "json") return c.json(reply.body);
      return sseResponse(reply.events, settings.SSE_HEARTBEAT_S * 1000, c.get("logger"), directStreamsEnv(c.env));
    });
}
