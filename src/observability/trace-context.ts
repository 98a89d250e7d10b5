/**
 * W3C Trace Context (traceparent, tracestate) read and written by hand, on @opentelemetry/api
 * types only: the core must not depend on the SDK's propagator (@opentelemetry/core), and the
 * global propagator is a no-op until an SDK registers one, which the workerd entry never does.
 * Baggage is never read or written (spec 6.4).
 */
import { createTraceState, isSpanContextValid, type SpanContext, TraceFlags } from "@opentelemetry/api";

/** version-traceid-parentid-flags; a later version may append fields after a dash. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** tracestate is at most 32 list members of at most 256 characters each (W3C 3.3.1.1). */
const MAX_TRACESTATE_CHARS = 32 * 257;

/** `traceparent` for a span context (version 00). */
export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/**
 * Reads `traceparent` (and `tracestate` when the parent is valid) as a remote span context;
 * undefined for anything malformed (W3C 3.2.2: an all-zero id, version ff, extra fields on
 * version 00), so a bad header starts a new trace instead of failing the request.
 */
export function parseTraceparent(traceparent: string | null | undefined, tracestate?: string | null): SpanContext | undefined {
  if (!traceparent) return undefined;
  const m = TRACEPARENT.exec(traceparent.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  const sc: SpanContext = {
    traceId: traceId!,
    spanId: spanId!,
    traceFlags: Number.parseInt(flags!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  if (!isSpanContextValid(sc)) return undefined;
  if (tracestate && tracestate.length <= MAX_TRACESTATE_CHARS) sc.traceState = createTraceState(tracestate);
  return sc;
}
