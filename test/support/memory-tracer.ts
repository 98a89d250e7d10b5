/** A real SDK tracer whose ended spans are kept in memory, for tests of what the code puts on spans. */
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import type { Tracer } from "@opentelemetry/api";

export interface MemoryTracer {
  readonly tracer: Tracer;
  /** Ended spans, in the order they ended. */
  spans(): ReadableSpan[];
  byName(name: string): ReadableSpan;
  reset(): void;
}

export function memoryTracer(): MemoryTracer {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const tracer = provider.getTracer("test");
  return {
    tracer,
    spans: () => exporter.getFinishedSpans(),
    byName(name) {
      const found = exporter.getFinishedSpans().filter((s) => s.name === name);
      if (found.length !== 1) throw new Error(`expected one span named ${name}, found ${found.length}: ${exporter.getFinishedSpans().map((s) => s.name).join(", ")}`);
      return found[0]!;
    },
    reset: () => exporter.reset(),
  };
}

/** Every string an exported span holds: name, attribute values, event names and values, status. */
export function everyText(span: ReadableSpan): string {
  const parts: unknown[] = [span.name, span.status.message, span.attributes];
  for (const e of span.events) parts.push(e.name, e.attributes);
  for (const l of span.links) parts.push(l.attributes);
  return JSON.stringify(parts);
}
