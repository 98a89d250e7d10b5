/// <reference types="node" />
/**
 * The command line (CONTRACT 7): node:util parseArgs in strict mode over every option any command
 * takes, then the command's own rules (its words, its positional arguments, the options it
 * accepts). Anything else is a usage error, exit code 2, unknown options included.
 */
import { parseArgs } from "node:util";

export const OPTIONS = {
  url: { type: "string" },
  json: { type: "boolean" },
  header: { type: "string", multiple: true },
  cookie: { type: "string", multiple: true },
  help: { type: "boolean", short: "h" },
  thread: { type: "string" },
  limit: { type: "string" },
  offset: { type: "string" },
  status: { type: "string" },
  comment: { type: "string" },
  env: { type: "string" },
  mermaid: { type: "boolean" },
  body: { type: "string" },
  policy: { type: "string" },
  "operation-id": { type: "string" },
} as const;

export type OptionName = keyof typeof OPTIONS;
export type Values = { -readonly [K in OptionName]?: (typeof OPTIONS)[K] extends { multiple: true } ? string[] : (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

/** Options every command takes. */
export const GLOBAL: readonly OptionName[] = ["url", "json", "header", "cookie", "help"];

export const USAGE = `usage: agentcli COMMAND [options]

  chat [MESSAGE] [--thread ID]     stream the agent's answer; without MESSAGE on a terminal, a
                                   session that reads one message a line
  threads [--limit N] [--offset N] your threads, most recent first
  messages THREAD_ID               a thread's messages
  delete THREAD_ID                 delete a thread
  approvals [--status S] [--limit N] [--offset N]
                                   approvals you may see (S: pending, approved, rejected, expired)
  approve THREAD_ID APPROVAL_ID [--comment C]
  reject THREAD_ID APPROVAL_ID [--comment C]
                                   decide an approval; the resumed run streams
  card [AGENT]                     the A2A agent card (AGENT defaults to app)
  system check FILE [--env NAME]   check a system file; each problem as place: message
  system graph FILE [--mermaid]    the call graph of a system file, as text and Mermaid
  system up FILE --env NAME        start every agent of a port_base environment; Ctrl-C stops them
  policy explain API METHOD PATH [--body JSON] [--operation-id ID] [--policy FILE]
                                   which rule of the API policy allows, denies or gates a call

options:
  --url URL                the service (default $AGENTCLI_URL or http://127.0.0.1:8000)
  --json                   one JSON object per line
  --header 'Name: value'   send a header (repeatable; for custom auth policies)
  --cookie name=value      send a cookie (repeatable)
  -h, --help               this text

The bearer credential is read from the process variable AGENTCLI_API_KEY only (never from a file).
Exit codes: 0 done, 1 a run that failed, was refused or was cut, 2 usage, 3 configuration.
`;

export class UsageError extends Error {}

export interface CommandLine {
  readonly positionals: readonly string[];
  readonly values: Values;
  /** The options written, by name, in order (to refuse those the command does not take). */
  readonly given: readonly OptionName[];
}

export function parseCommandLine(argv: readonly string[]): CommandLine {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: true, tokens: true });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_")) throw new UsageError((error as Error).message.replace(/\n/g, " "));
    throw error;
  }
  const given: OptionName[] = [];
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    const name = token.name as OptionName;
    const multiple = "multiple" in OPTIONS[name];
    if (!multiple && OPTIONS[name].type === "string" && given.includes(name)) throw new UsageError(`${token.rawName} is given twice`);
    if (OPTIONS[name].type === "string" && token.value === "") throw new UsageError(`${token.rawName} needs a value`);
    given.push(name);
  }
  return { positionals: parsed.positionals, values: parsed.values as Values, given };
}

/** Refuses options the command does not take. */
export function onlyOptions(line: CommandLine, command: string, allowed: readonly OptionName[]): void {
  for (const name of line.given) if (!GLOBAL.includes(name) && !allowed.includes(name)) throw new UsageError(`${command} does not take --${name}`);
}

/** The positional arguments after the command's words: at least `min`, at most `max`. */
export function argsOf(line: CommandLine, words: number, command: string, names: readonly string[], min = names.length): string[] {
  const args = line.positionals.slice(words);
  if (args.length < min) throw new UsageError(`${command} needs ${names.slice(args.length, min).join(" and ")}`);
  if (args.length > names.length) throw new UsageError(`${command} takes ${names.length === 0 ? "no arguments" : names.join(" ")}; got ${JSON.stringify(args[names.length])} too`);
  return args;
}

/** A whole number option, or undefined when not given. */
export function intOption(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  return Number(value);
}
