/** Binds the framework-free A2A service to Hono: the card and the JSON-RPC endpoint (spec 4.5). */
import { Hono } from "hono";
import { agentCard } from "../../a2a/card.js";
import { ERR, rpcError, versionOf } from "../../a2a/jsonrpc.js";
import type { A2AService } from "../../a2a/service.js";
import type { Settings } from "../../settings/parse.js";
import { isHttpError, notFound } from "../../problems.js";
import { readJsonBody } from "../body.js";
import type { HttpEnv } from "../env.js";
import type { RequireAuth } from "../middleware/auth.js";
import { SSE_HEADERS } from "../sse.js";

const encoder = new TextEncoder();

export function a2aRoutes({ settings, service, card: cardOptions, requireAuth }: { settings: Settings; service: A2AService; card: { structured: boolean; auth: string }; requireAuth: RequireAuth }) {
  const name = settings.A2A_NAME;
  const card = agentCard(settings, cardOptions);
  const mine = (agent: string) => {
    if (agent !== name) throw notFound();
  };

  return new Hono<HttpEnv>()
    .get("/a2a/:agent/.well-known/agent-card.json", requireAuth("card.read"), (c) => {
      mine(c.req.param("agent"));
      return c.json(card);
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
      const reply = await service.handle(body, { caller: c.get("caller"), version, logger: c.get("logger") });
      if (reply.kind === "json") return c.json(reply.body);
      const iterator = reply.events[Symbol.asyncIterator]();
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await iterator.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`));
        },
        async cancel() {
          await iterator.return?.();
        },
      });
      return new Response(stream, { status: 200, headers: SSE_HEADERS });
    });
}
