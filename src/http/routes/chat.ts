/** POST /chat (spec 4.1): validate, start a turn on the thread, stream the run as SSE. */
import { Hono } from "hono";
import type { Ids } from "../../ids.js";
import type { RunHandle, Runs } from "../../runs/index.js";
import type { Settings } from "../../settings/parse.js";
import type { RunRecord } from "../../store/ports.js";
import { readJsonBody } from "../body.js";
import type { HttpEnv } from "../env.js";
import type { RequireAuth } from "../middleware/auth.js";
import { chatRequestSchema } from "../schemas.js";
import { createSseStream, directStreamsEnv } from "../sse.js";
import { parseOrThrow } from "../validation.js";

/** Shared by every chat without metadata (nothing changes a record's metadata). */
const NO_METADATA: RunRecord["metadata"] = Object.freeze({});

export function chatRoutes({ settings, ids, runs, requireAuth }: { settings: Settings; ids: Ids; runs: Runs; requireAuth: RequireAuth }) {
  const schema = chatRequestSchema(settings);
  const heartbeatMs = settings.SSE_HEARTBEAT_S * 1000;

  return new Hono<HttpEnv>().post("/chat", requireAuth("chat.send"), async (c) => {
    const caller = c.get("caller");
    const body = parseOrThrow(schema, await readJsonBody(c.req.raw, settings.MAX_REQUEST_BYTES), "body");

    let run: RunHandle | undefined;
    const sse = createSseStream({ heartbeatMs, onCancel: () => run?.cancel(), direct: directStreamsEnv(c.env) });
    run = await runs.startTurn({
      caller,
      threadId: body.thread_id ?? ids.threadId(),
      message: body.message,
      metadata: (body.metadata ?? NO_METADATA) as RunRecord["metadata"],
      emit: sse.send,
      logger: c.get("logger"),
      span: c.get("span"),
    });
    // One handler for both outcomes (finally would make two).
    const closeStream = () => sse.close();
    c.set("streamDone", run.done.then(closeStream, closeStream));
    return sse.response();
  });
}
