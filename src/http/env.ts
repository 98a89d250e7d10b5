import type { Caller } from "../auth/caller.js";
import type { Logger } from "../observability/logger.js";
import type { TraceSpan } from "../observability/tracing.js";

/** Per-request values set by middleware. */
export interface HttpEnv {
  Variables: {
    requestId: string;
    logger: Logger;
    caller: Caller;
    /** Set by streaming routes: resolves after the last event, so duration covers the stream. */
    streamDone: Promise<unknown>;
    /** The request's server span; unset while tracing is off (the middleware is not installed). */
    span: TraceSpan | undefined;
  };
}
