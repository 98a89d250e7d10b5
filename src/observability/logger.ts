/**
 * Structured logs. One JSON object per line outside dev (text under dev unless LOG_FORMAT says
 * otherwise). Callers pass ids and names only: message text, tool arguments, credentials and
 * query strings are never handed to a logger, so no redaction pass is needed after the fact.
 */

import { isoUtcBody } from "../clock.js";

export type LogLevel = "DEBUG" | "INFO" | "WARNING" | "ERROR" | "CRITICAL";
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

const RANK: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40, CRITICAL: 50 };

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warning(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds these fields (request_id, run_id, ...) to every record. */
  child(fields: LogFields, name?: string): Logger;
  /** The request id its records carry, if any (passed on to peers: PROPAGATE_TRACE_HEADERS). */
  readonly requestId?: string | undefined;
}

export interface LoggerOptions {
  level: LogLevel;
  format: "json" | "text";
  /** Where lines go; the runtime entry passes stdout. */
  write: (line: string) => void;
  now?: () => number;
  name?: string;
}

export function createLogger(options: LoggerOptions): Logger {
  const sink: Sink = {
    threshold: RANK[options.level],
    format: options.format,
    write: options.write,
    now: options.now ?? Date.now,
  };
  return new BoundLogger(sink, options.name ?? "agent", {});
}

interface Sink {
  readonly threshold: number;
  readonly format: "json" | "text";
  readonly write: (line: string) => void;
  readonly now: () => number;
}

/**
 * A class, not closures: a logger is bound per request and per run, and thousands of streams
 * can be open at once, so each child is one small object sharing its methods.
 */
class BoundLogger implements Logger {
  constructor(
    private readonly sink: Sink,
    private readonly name: string,
    /** This logger's own fields; its parent's are read through `parent` (no merged copy is kept). */
    private readonly bound: LogFields,
    private readonly parent?: BoundLogger,
  ) {}

  debug(message: string, fields?: LogFields): void {
    this.emit("DEBUG", message, fields);
  }
  info(message: string, fields?: LogFields): void {
    this.emit("INFO", message, fields);
  }
  warning(message: string, fields?: LogFields): void {
    this.emit("WARNING", message, fields);
  }
  error(message: string, fields?: LogFields): void {
    this.emit("ERROR", message, fields);
  }
  child(fields: LogFields, name?: string): Logger {
    return new BoundLogger(this.sink, name ?? this.name, fields, this);
  }
  get requestId(): string | undefined {
    for (let l: BoundLogger | undefined = this; l; l = l.parent) {
      const id = l.bound.request_id;
      if (id !== undefined) return typeof id === "string" ? id : undefined;
    }
    return undefined;
  }

  private emit(level: LogLevel, message: string, fields?: LogFields): void {
    const { sink } = this;
    if (RANK[level] < sink.threshold) return;
    const record: Record<string, unknown> = { ts: logStamp(sink.now()), level, logger: this.name, message, request_id: null };
    // The root's fields first, a child's over its parent's, the line's own last. An undefined
    // field clears what a parent said, as a merged copy would: both formats leave it out.
    this.assignBound(record);
    if (fields) for (const k in fields) record[k] = fields[k];
    sink.write(sink.format === "json" ? JSON.stringify(record) : textLine(record));
  }

  /** The chain's fields into `record`, the root's first (recursion: no array of the chain is built). */
  private assignBound(record: Record<string, unknown>): void {
    this.parent?.assignBound(record);
    const { bound } = this;
    for (const k in bound) record[k] = bound[k];
  }
}

/**
 * The record's `ts` (ISO 8601 with `Z`, unlike records' `+00:00` of clock.ts's isoTime), made once
 * a millisecond: lines written within the same millisecond (a busy process writes several) share
 * it, and `toISOString` was a third of a line's cost.
 */
let lastMs = NaN;
let lastIso = "";
function logStamp(ms: number): string {
  if (ms !== lastMs) {
    lastIso = `${isoUtcBody(ms)}Z`;
    lastMs = ms;
  }
  return lastIso;
}

const HEAD_FIELDS = new Set(["ts", "level", "logger", "message"]);

function textLine(record: Record<string, unknown>): string {
  let extra = "";
  for (const k in record) {
    const v = record[k];
    if (v === null || v === undefined || HEAD_FIELDS.has(k)) continue;
    extra += ` ${k}=${oneLine(v)}`;
  }
  return `${String(record.ts)} ${String(record.level).padEnd(8)} ${String(record.logger)}: ${oneLine(record.message)}${extra}`;
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const ESCAPES: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * A value as the text line shows it, control characters escaped as JSON would: a value that
 * carries a line break (a request path with %0A) cannot start a line of its own that looks like
 * another record.
 */
function oneLine(value: unknown): string {
  const text = String(value);
  if (!CONTROL.test(text)) return text;
  return text.replace(CONTROLS, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warning() {},
  error() {},
  child: () => silentLogger,
};
