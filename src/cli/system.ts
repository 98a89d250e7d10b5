/// <reference types="node" />
/**
 * `agentcli system check FILE` and `agentcli system graph FILE`: the system file (spec 2.9) read
 * by the one loader (src/tooling/system). A file that is unusable exits 3 with each problem as
 * `place: message` (CONTRACT 7).
 */
import { readFileSync } from "node:fs";
import { graphMermaid, graphText } from "../tooling/system/graph.js";
import { loadSystem, type SystemProblem } from "../tooling/system/load.js";
import type { System } from "../tooling/system/types.js";
import { safeLine } from "./escape.js";
import type { Printer } from "./output.js";
import { nodeSystemHost } from "./system-host.js";

/** The loaded system, or the exit code after its problems were printed. */
export async function readSystem(p: Printer, file: string, environment?: string): Promise<System | number> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    return unusable(p, file, [{ place: file, message: (error as { code?: unknown }).code === "ENOENT" ? "there is no such file" : `cannot be read (${(error as Error).message})` }]);
  }
  const loaded = await loadSystem(text, nodeSystemHost(file), { source: file, ...(environment !== undefined ? { environment } : {}) });
  return loaded.ok ? loaded.system : unusable(p, file, loaded.problems);
}

function unusable(p: Printer, file: string, problems: readonly SystemProblem[]): number {
  p.record({ ok: false, file, problems });
  if (!p.json) for (const pr of problems) process.stderr.write(`${safeLine(pr.place)}: ${safeLine(pr.message)}\n`);
  p.error(`the system file ${safeLine(file)} is unusable: ${problems.length} problem${problems.length === 1 ? "" : "s"}`);
  return 3;
}

export async function systemCheck(p: Printer, file: string, environment: string | undefined): Promise<number> {
  const system = await readSystem(p, file, environment);
  if (typeof system === "number") return system;
  const edges = system.agents.reduce((n, a) => n + a.calls.length, 0);
  p.record({ ok: true, file, name: system.name ?? null, agents: system.agents.map((a) => a.name), edges });
  p.text(`ok: system ${safeLine(system.name ?? file)}: ${system.agents.length} agent${system.agents.length === 1 ? "" : "s"}, ${edges} call${edges === 1 ? "" : "s"} between them\n`);
  return 0;
}

export async function systemGraph(p: Printer, file: string, mermaidOnly: boolean): Promise<number> {
  const system = await readSystem(p, file);
  if (typeof system === "number") return system;
  p.record({
    name: system.name ?? null,
    agents: system.agents.map((a) => ({ name: a.name, project: a.project, client_id: a.clientId, actor_id: a.actorId })),
    edges: system.agents.flatMap((a) => a.calls.map((e) => ({ from: a.name, to: e.agent, calls: e.calls, approvals: e.approvals, auth: e.auth }))),
    mermaid: graphMermaid(system),
  });
  if (mermaidOnly) p.text(graphMermaid(system));
  else p.text(`${graphText(system)}\n\`\`\`mermaid\n${graphMermaid(system)}\`\`\`\n`);
  return 0;
}
