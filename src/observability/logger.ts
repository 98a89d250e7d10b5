/**
 * Structured logs. One JSON object per line outside dev (text under dev unless LOG_FORMAT says
 * otherwise). Callers pass ids and names only: message text, tool arguments, credentials and
 * query strings are never handed to a logger, so no redaction pass is needed after the fact.
 */

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
    const record: Record<string, unknown> = {
      ts: new Date(sink.now()).toISOString(),
      level,
      logger: this.name,
      message,
      request_id: null,
    };
    // The root's fields first, a child's over its parent's, the line's own last.
    const chain: LogFields[] = [];
    for (let l: BoundLogger | undefined = this; l; l = l.parent) chain.push(l.bound);
    if (fields) chain.unshift(fields);
    for (let i = chain.length - 1; i >= 0; i--) {
      const src = chain[i]!;
      // An undefined field clears what a parent said, as a merged copy would.
      for (const k in src) record[k] = src[k];
    }
    for (const k in record) if (record[k] === undefined) delete record[k];
    sink.write(sink.format === "json" ? JSON.stringify(record) : textLine(record));
  }
}

function textLine(record: Record<string, unknown>): string {
  const { ts, level, logger, message, ...rest } = record;
  const extra = Object.entries(rest)
    .filter(([, v]) => v !== null)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(" ");
  return `${String(ts)} ${String(level).padEnd(8)} ${String(logger)}: ${String(message)}${extra ? ` ${extra}` : ""}`;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warning() {},
  error() {},
  child: () => silentLogger,
};
