/** POST /chat (spec 4.1): validate, claim the thread, take its lease, stream the run as SSE. */
import { Hono } from "hono";
import { beginRun } from "../../agent/begin.js";
import type { RunHandle } from "../../agent/runner.js";
import type { Deps } from "../../deps.js";
import type { RunRecord } from "../../store/ports.js";
import { readJsonBody } from "../body.js";
import type { HttpEnv } from "../env.js";
import { requireAuth } from "../middleware/auth.js";
import { chatRequestSchema } from "../schemas.js";
import { createSseStream, SSE_HEADERS } from "../sse.js";
import { parseOrThrow } from "../validation.js";

export function chatRoutes(deps: Deps) {
  const { settings } = deps;
  const schema = chatRequestSchema(settings);
  const heartbeatMs = settings.SSE_HEARTBEAT_S * 1000;

  return new Hono<HttpEnv>().post("/chat", requireAuth(deps, "chat.send"), async (c) => {
    const caller = c.get("caller");
    const body = parseOrThrow(schema, await readJsonBody(c.req.raw, settings.MAX_REQUEST_BYTES), "body");

    let run: RunHandle | undefined;
    const sse = createSseStream({ heartbeatMs, onCancel: () => run?.cancel() });
    run = await beginRun(deps, {
      caller,
      threadId: body.thread_id ?? deps.ids.threadId(),
      message: body.message,
      metadata: (body.metadata ?? {}) as RunRecord["metadata"],
      emit: sse.send,
      logger: c.get("logger"),
    });
    c.set("streamDone", run.done.finally(() => sse.close()));
    return new Response(sse.body, { status: 200, headers: SSE_HEADERS });
  });
}
