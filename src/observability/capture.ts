/**
 * TRACE_CAPTURE applied before export (spec 6.4), to every span whatever made it: the facade
 * already leaves content out under `metadata`, but a library or a later change may set an
 * attribute the facade never saw. Under `metadata` content attributes, content events (the GenAI
 * `gen_ai.*` events carry messages), exception messages and status descriptions go; in both
 * modes credentials and URLs with their query go. A span with nothing to drop is passed through
 * as is (no copy), which is every span the facade made under the right mode.
 */
import type { Attributes, Link } from "@opentelemetry/api";
import type { ExportEvent, ExportSpan } from "./span-data.js";
import { isContentKey, isForbiddenKey } from "./trace-attributes.js";
import type { TraceCapture } from "./tracing.js";

export type CaptureFilter = (span: ExportSpan) => ExportSpan;

/** Keys whose verdict is remembered: attribute names come from code, so a handful recur. */
const VERDICTS_KEPT = 1024;

export function captureFilter(capture: TraceCapture): CaptureFilter {
  const full = capture === "full";
  // Every key of every span is judged: the verdicts are kept (the judging runs regular expressions).
  const verdicts = new Map<string, boolean>();
  const drop = (key: string): boolean => {
    let verdict = verdicts.get(key);
    if (verdict === undefined) {
      verdict = isForbiddenKey(key) || (!full && isContentKey(key));
      if (verdicts.size < VERDICTS_KEPT) verdicts.set(key, verdict);
    }
    return verdict;
  };
  return (span) => {
    const attributes = filterAttributes(span.attributes, drop);
    const events = filterEvents(span.events, drop, full);
    const status = !full && span.status.message ? { code: span.status.code } : span.status;
    const links = filterLinks(span.links, drop);
    if (attributes === span.attributes && events === span.events && status === span.status && links === span.links) return span;
    // The SDK's span keeps its ids behind spanContext() and other fields the OTLP transformer
    // reads: a prototype view keeps them all and overrides only what was filtered.
    return Object.create(span, {
      attributes: { value: attributes, enumerable: true },
      events: { value: events, enumerable: true },
      status: { value: status, enumerable: true },
      links: { value: links, enumerable: true },
    }) as ExportSpan;
  };
}

/** The same attributes object when nothing is dropped. */
export function filterAttributes(attributes: Attributes | undefined, drop: (key: string) => boolean): Attributes {
  if (attributes === undefined) return {};
  let out: Attributes | undefined;
  for (const key in attributes) {
    if (!drop(key)) continue;
    out ??= { ...attributes };
    delete out[key];
  }
  return out ?? attributes;
}

function filterEvents(events: readonly ExportEvent[], drop: (key: string) => boolean, full: boolean): readonly ExportEvent[] {
  let out: ExportEvent[] | undefined;
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    let kept: ExportEvent | undefined = event;
    if (!full && event.name.startsWith("gen_ai.")) kept = undefined;
    else if (event.attributes !== undefined) {
      const attributes = filterAttributes(event.attributes, drop);
      if (attributes !== event.attributes) kept = { name: event.name, time: event.time, attributes };
    }
    if (kept !== event) out ??= events.slice(0, i);
    if (out !== undefined && kept !== undefined) out.push(kept);
  }
  return out ?? events;
}

function filterLinks(links: ExportSpan["links"], drop: (key: string) => boolean): ExportSpan["links"] {
  let out: Link[] | undefined;
  for (let i = 0; i < links.length; i++) {
    const link = links[i]!;
    const attributes = link.attributes && filterAttributes(link.attributes, drop);
    if (attributes !== link.attributes) out ??= links.slice(0, i);
    if (out !== undefined) out.push(attributes === link.attributes ? link : { ...link, attributes });
  }
  return out ?? links;
}
