/// <reference types="node" />
/**
 * Where the client writes: people read text on stdout; `--json` makes stdout one JSON object per
 * line for programs (human lines are dropped then); problems go to stderr as `agentcli: ...`
 * in both modes.
 */
export interface Printer {
  readonly json: boolean;
  /** Human text, written as is (callers make server text safe first); dropped under --json. */
  text(s: string): void;
  /** One JSON object on its own line; only under --json. */
  record(value: unknown): void;
  /** `agentcli: <line>` on stderr. */
  error(line: string): void;
}

export function makePrinter(json: boolean): Printer {
  return {
    json,
    text: (s) => void (json || process.stdout.write(s)),
    record: (value) => void (json && process.stdout.write(`${JSON.stringify(value)}\n`)),
    error: (line) => void process.stderr.write(`agentcli: ${line}\n`),
  };
}

/** True when a person is at the keyboard and the screen: both stdin and stdout are terminals. */
export function interactiveTerminal(): boolean {
  return Boolean(process.stdin.isTTY && process.stdout.isTTY);
}
