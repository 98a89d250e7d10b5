#!/usr/bin/env node
/// <reference types="node" />
/**
 * agentcli, the package's command-line client (CONTRACT 7, spec 5.9): chat with the service and
 * follow its runs, read and delete threads, decide approvals, read the A2A card; check, draw and
 * start a system of agents (spec 2.9); explain the API policy's verdict on a call. This file only
 * dispatches: each command lives in its own module beside it. `agentcli --help` lists them.
 *
 * Exit codes: 0 done, 1 a run that failed, was refused or was cut, 2 usage (unknown options
 * included), 3 a configuration problem (an unusable system file or policy, each problem placed).
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { argsOf, type CommandLine, intOption, onlyOptions, parseCommandLine, USAGE, UsageError } from "./args.js";
import { chatOnce, chatSession } from "./chat.js";
import { decideCommand, type Session } from "./decide.js";
import { safeLine } from "./escape.js";
import { type Client, ConfigurationProblem, makeClient, Unreachable } from "./http.js";
import { interactiveTerminal, makePrinter, type Printer } from "./output.js";
import { explain } from "./policy.js";
import { openTerminal, type Terminal } from "./prompt.js";
import { approvals, card, deleteThread, messages, threads } from "./reads.js";
import { systemCheck, systemGraph } from "./system.js";
import { systemUp } from "./system-up.js";

const STATUSES = ["pending", "approved", "rejected", "expired"];

export async function run(argv: readonly string[]): Promise<number> {
  let p: Printer = makePrinter(false);
  try {
    const line = parseCommandLine(argv);
    p = makePrinter(Boolean(line.values.json));
    if (line.values.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    return await dispatch(line, p);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`agentcli: ${error.message}\n(agentcli --help lists the commands and options)\n`);
      return 2;
    }
    if (error instanceof ConfigurationProblem) {
      p.error(error.message);
      return 3;
    }
    if (error instanceof Unreachable) {
      p.error(safeLine(error.message));
      return 1;
    }
    throw error;
  }
}

async function dispatch(line: CommandLine, p: Printer): Promise<number> {
  const [command, sub] = line.positionals;
  const v = line.values;
  const client = (): Client => makeClient({ url: v.url, headers: v.header ?? [], cookies: v.cookie ?? [] });
  let terminal: Terminal | undefined;
  const session = (c: Client): Session => ({
    client: c,
    p,
    terminal: interactiveTerminal() && !p.json ? () => (terminal ??= openTerminal()) : undefined,
  });
  try {
    switch (command) {
      case undefined:
        throw new UsageError("a command is needed");
      case "chat": {
        onlyOptions(line, "chat", ["thread"]);
        const [message] = argsOf(line, 1, "chat", ["MESSAGE"], 0);
        const s = session(client());
        if (message !== undefined) return (await chatOnce(s, message, v.thread)).code;
        if (!s.terminal) throw new UsageError("chat needs a MESSAGE (or a terminal, for a session)");
        return await chatSession(s, s.terminal(), v.thread);
      }
      case "threads":
        onlyOptions(line, "threads", ["limit", "offset"]);
        argsOf(line, 1, "threads", []);
        return await threads(client(), p, { limit: intOption(v.limit, "limit", 1, 100), offset: intOption(v.offset, "offset", 0, 1e9) });
      case "messages": {
        onlyOptions(line, "messages", []);
        const [id] = argsOf(line, 1, "messages", ["THREAD_ID"]);
        return await messages(client(), p, id!);
      }
      case "delete": {
        onlyOptions(line, "delete", []);
        const [id] = argsOf(line, 1, "delete", ["THREAD_ID"]);
        return await deleteThread(client(), p, id!);
      }
      case "approvals":
        onlyOptions(line, "approvals", ["status", "limit", "offset"]);
        argsOf(line, 1, "approvals", []);
        if (v.status !== undefined && !STATUSES.includes(v.status)) throw new UsageError(`--status must be one of ${STATUSES.join(", ")}`);
        return await approvals(client(), p, { status: v.status, limit: intOption(v.limit, "limit", 1, 100), offset: intOption(v.offset, "offset", 0, 1e9) });
      case "approve":
      case "reject": {
        onlyOptions(line, command, ["comment"]);
        const [thread, approval] = argsOf(line, 1, command, ["THREAD_ID", "APPROVAL_ID"]);
        return await decideCommand(session(client()), command, thread!, approval!, v.comment);
      }
      case "card": {
        onlyOptions(line, "card", []);
        const [agent] = argsOf(line, 1, "card", ["AGENT"], 0);
        return await card(client(), p, agent ?? "app");
      }
      case "system":
        return await system(line, sub, p);
      case "policy": {
        if (sub !== "explain") throw new UsageError(sub === undefined ? "policy needs a subcommand: explain" : `unknown policy subcommand ${JSON.stringify(sub)}`);
        onlyOptions(line, "policy explain", ["body", "policy", "operation-id"]);
        const [api, method, target] = argsOf(line, 2, "policy explain", ["API", "METHOD", "PATH"]);
        return explain(p, { api: api!, method: method!, target: target!, body: v.body, operationId: v["operation-id"], policy: v.policy });
      }
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } finally {
    terminal?.close();
  }
}

async function system(line: CommandLine, sub: string | undefined, p: Printer): Promise<number> {
  const v = line.values;
  switch (sub) {
    case "check": {
      onlyOptions(line, "system check", ["env"]);
      const [file] = argsOf(line, 2, "system check", ["FILE"]);
      return systemCheck(p, file!, v.env);
    }
    case "graph": {
      onlyOptions(line, "system graph", ["mermaid"]);
      const [file] = argsOf(line, 2, "system graph", ["FILE"]);
      return systemGraph(p, file!, Boolean(v.mermaid));
    }
    case "up": {
      onlyOptions(line, "system up", ["env"]);
      const [file] = argsOf(line, 2, "system up", ["FILE"]);
      if (v.env === undefined) throw new UsageError("system up needs --env NAME (an environment with port_base)");
      return systemUp(p, file!, v.env);
    }
    default:
      throw new UsageError(sub === undefined ? "system needs a subcommand: check, graph or up" : `unknown system subcommand ${JSON.stringify(sub)}`);
  }
}

/** Run when executed (directly or through an npm bin link), not when imported. */
function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  run(process.argv.slice(2)).then(
    // Exit at once: a kept-alive connection must not hold the shell (stdout and stderr are
    // synchronous on Linux for files, pipes and terminals, so nothing written is lost).
    (code) => process.exit(code),
    (error: Error) => {
      process.stderr.write(`agentcli: ${safeLine(error.message)}\n`);
      process.exit(1);
    },
  );
}
