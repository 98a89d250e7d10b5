/**
 * The call graph of a system file, for people: a text listing (one line per edge, then the agents
 * nobody calls and those that call nobody) and a Mermaid flowchart that renders in Markdown
 * viewers. Agent names are identifiers ([a-z][a-z0-9_]*), so they serve as Mermaid node ids as is.
 */
import type { System, SystemEdge } from "./types.js";

function edgeLabel(edge: SystemEdge): string {
  return `${edge.calls.join(", ")}; approvals ${edge.approvals}; auth ${edge.auth}`;
}

export function graphText(system: System): string {
  const lines = [`system ${system.name ?? "(unnamed)"}: ${system.agents.length} agent${system.agents.length === 1 ? "" : "s"}`];
  const called = new Set(system.agents.flatMap((a) => a.calls.map((e) => e.agent)));
  const width = Math.max(0, ...system.agents.map((a) => a.name.length));
  for (const agent of system.agents) {
    if (agent.calls.length === 0) lines.push(`  ${agent.name.padEnd(width)}    (calls no agent)`);
    for (const edge of agent.calls) lines.push(`  ${agent.name.padEnd(width)} -> ${edge.agent}   [${edgeLabel(edge)}]`);
  }
  const roots = system.agents.filter((a) => !called.has(a.name)).map((a) => a.name);
  if (roots.length > 0) lines.push(`entry points (called by no agent): ${roots.join(", ")}`);
  const cycle = findCycle(system);
  if (cycle) lines.push(`cycle: ${cycle.join(" -> ")} (a call back into the delegation chain is refused at run time)`);
  return `${lines.join("\n")}\n`;
}

export function graphMermaid(system: System): string {
  const lines = ["flowchart LR"];
  for (const agent of system.agents) lines.push(`  ${agent.name}["${agent.name}"]`);
  for (const agent of system.agents)
    for (const edge of agent.calls) lines.push(`  ${agent.name} -->|"${edgeLabel(edge)}"| ${edge.agent}`);
  return `${lines.join("\n")}\n`;
}

/** One cycle of calls, first agent repeated at the end, or undefined. */
function findCycle(system: System): string[] | undefined {
  const next = new Map(system.agents.map((a) => [a.name, a.calls.map((e) => e.agent)]));
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (name: string): string[] | undefined => {
    if (state.get(name) === "done") return undefined;
    if (state.get(name) === "open") return [...stack.slice(stack.indexOf(name)), name];
    state.set(name, "open");
    stack.push(name);
    for (const n of next.get(name) ?? []) {
      const found = visit(n);
      if (found) return found;
    }
    stack.pop();
    state.set(name, "done");
    return undefined;
  };
  for (const a of system.agents) {
    const found = visit(a.name);
    if (found) return found;
  }
  return undefined;
}
