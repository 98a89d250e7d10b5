/**
 * The built service (dist/node.js) and the built command-line client (dist/agentcli.js) as real
 * processes on 127.0.0.1, for the agentcli tests. The service listens on PORT=0 and is ready once
 * its "listening on" line names the port. The client runs either with pipes (not a terminal) or
 * under a pseudo-terminal made by util-linux `script`, driven line by line: the test waits for a
 * prompt in the output, then types.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { resolve } from "node:path";

export const CLI = resolve("dist/agentcli.js");
const NODE_ENTRY = resolve("dist/node.js");
const PATH = process.env.PATH ?? "/usr/bin:/bin";

const children = new Set<ChildProcess>();

/** Kills what the tests left running (afterEach/afterAll). */
export function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    children.delete(child);
  }
}

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly base: string;
  output(): string;
  readonly exited: Promise<number | string | null>;
}

/** dist/node.js with `env` (no env file unless `ENV_FILE` says), ready once it listens. */
export async function startService(env: Record<string, string>, options: { cwd?: string } = {}): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [NODE_ENTRY], {
    cwd: options.cwd ?? process.cwd(),
    env: { PATH, HOST: "127.0.0.1", PORT: "0", ENV_FILE: "/nonexistent/.env", LOG_FORMAT: "json", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let out = "";
  child.stdout!.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (out += s));
  const exited = new Promise<number | string | null>((r) => child.once("exit", (code, signal) => r(code ?? signal)));
  const base = await new Promise<string>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`no listening line in 15 s:\n${out}`)), 15_000);
    const check = () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ready(m[1]!);
      }
    };
    child.stdout!.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`the service exited (${code}) before listening:\n${out}`));
    });
  });
  return { child, base, output: () => out, exited };
}

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** dist/agentcli.js with pipes (no terminal); only PATH and `env` in its environment. */
export function cli(
  args: readonly string[],
  env: Record<string, string> = {},
  options: { cwd?: string; input?: string; onStdout?: (soFar: string) => void } = {},
): Promise<CliResult> {
  return new Promise((done) => {
    const child = execFile(process.execPath, [CLI, ...args], { env: { PATH, ...env }, cwd: options.cwd ?? process.cwd(), timeout: 30_000 }, (error, stdout, stderr) =>
      done({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr }),
    );
    children.add(child);
    let soFar = "";
    if (options.onStdout) child.stdout!.on("data", (s: Buffer | string) => options.onStdout!((soFar += String(s))));
    if (options.input !== undefined) child.stdin!.end(options.input);
    else child.stdin!.end();
  });
}

export interface Pty {
  /** Everything the terminal showed so far (stdout and stderr together, `\r\n` made `\n`). */
  output(): string;
  /** Types a line (a newline is added). */
  type(line: string): void;
  /** Ends input (what Ctrl-D at an empty line does). */
  end(): void;
  /** Resolves once the output matches `pattern` after `from` characters; rejects after `ms`. */
  waitFor(pattern: RegExp, from?: number, ms?: number): Promise<void>;
  readonly exited: Promise<number | null>;
}

/** dist/agentcli.js on a pseudo-terminal (util-linux `script -qfec`), so stdin and stdout are TTYs. */
export function cliOnTerminal(args: readonly string[], env: Record<string, string> = {}): Pty {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  const child = spawn("script", ["-qfec", command, "/dev/null"], { env: { PATH, TERM: "dumb", ...env }, stdio: ["pipe", "pipe", "pipe"] });
  children.add(child);
  let out = "";
  const listeners = new Set<() => void>();
  const take = (s: string) => {
    out += s.replace(/\r\n/g, "\n");
    for (const l of listeners) l();
  };
  child.stdout!.setEncoding("utf8").on("data", take);
  child.stderr!.setEncoding("utf8").on("data", take);
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return {
    output: () => out,
    type: (line) => void child.stdin!.write(`${line}\n`),
    end: () => void child.stdin!.end(),
    waitFor(pattern, from = 0, ms = 15_000) {
      return new Promise((ready, fail) => {
        const check = () => {
          if (pattern.test(out.slice(from))) {
            listeners.delete(check);
            clearTimeout(timer);
            ready();
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          fail(new Error(`no ${pattern} in the terminal's output within ${ms} ms:\n${out}`));
        }, ms);
        listeners.add(check);
        check();
      });
    },
    exited,
  };
}
