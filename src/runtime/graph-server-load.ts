/// <reference types="node" />
/**
 * Loading the graph-server runtime for the Node entry (RUNTIME=graph-server). Its packages
 * (`@langchain/*`) are optional dependencies: an install with `--omit=optional` (the default
 * container image) has none of them, and its server needs scripts/graph-server/langgraph.json
 * beside dist/. Either missing stops startup with a line that says what to install or copy
 * (exit 3, a configuration problem, like a TOOLS_MODULE that does not load) instead of a stack
 * trace from deep inside the import, or a "cannot be listened on" once the server fails to start.
 */
import { readFileSync } from "node:fs";
import type { graphServerEntry } from "./graph-server/start.js";

const stop = (line: string): never => {
  process.stderr.write(`The service cannot start: ${line}\n`);
  process.exit(3);
};

/** The `@langchain/*` optional dependencies as package.json pins them (names alone if it cannot be read). */
function pinned(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { optionalDependencies?: Record<string, string> };
    const entries = Object.entries(pkg.optionalDependencies ?? {}).filter(([name]) => name.startsWith("@langchain/"));
    if (entries.length > 0) return entries.map(([name, version]) => `${name}@${version}`).join(" ");
  } catch {
    // fall through
  }
  return "@langchain/langgraph-api @langchain/langgraph @langchain/core @langchain/langgraph-checkpoint @langchain/langgraph-sdk";
}

export async function loadGraphServerEntry(): Promise<ReturnType<typeof graphServerEntry>> {
  let start: typeof import("./graph-server/start.js");
  try {
    start = await import("./graph-server/start.js");
  } catch (error) {
    const missing = (error as { code?: unknown }).code === "ERR_MODULE_NOT_FOUND" ? /Cannot find package '(@langchain\/[^']+)'/.exec((error as Error).message)?.[1] : undefined;
    if (!missing) throw error;
    return stop(
      `RUNTIME is graph-server, but its server package ${missing} is not installed. The LangGraph.js Agent Server packages are optional dependencies (${pinned()}): install them with npm ci (or npm ci --omit=dev), not with --omit=optional; the container image needs --build-arg GRAPH_SERVER=true.`,
    );
  }
  try {
    return start.graphServerEntry();
  } catch (error) {
    return stop(`RUNTIME is graph-server: ${(error as Error).message}`);
  }
}
