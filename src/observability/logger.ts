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
  const { level, format, write, now = Date.now } = options;
  const threshold = RANK[level];

  const make = (name: string, bound: LogFields): Logger => {
    const emit = (lvl: LogLevel, message: string, fields?: LogFields) => {
      if (RANK[lvl] < threshold) return;
      const record: Record<string, unknown> = {
        ts: new Date(now()).toISOString(),
        level: lvl,
        logger: name,
        message,
        request_id: null,
      };
      for (const src of [bound, fields]) {
        if (!src) continue;
        for (const k in src) if (src[k] !== undefined) record[k] = src[k];
      }
      write(format === "json" ? JSON.stringify(record) : textLine(record));
    };
    return {
      debug: (m, f) => emit("DEBUG", m, f),
      info: (m, f) => emit("INFO", m, f),
      warning: (m, f) => emit("WARNING", m, f),
      error: (m, f) => emit("ERROR", m, f),
      child: (fields, childName) => make(childName ?? name, { ...bound, ...fields }),
    };
  };
  return make(options.name ?? "agent", {});
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
