/**
 * The form of a thread id (spec 1, 4.1): 1-128 characters of `[A-Za-z0-9_.:-]` standalone, a
 * UUID under graph-server, whose server keys its threads by UUID. The HTTP schemas and the A2A
 * `contextId` (a thread id by another name) both check it, so neither runtime meets an id its
 * store cannot hold.
 */
export const THREAD_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;

export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export type ThreadIdRuntime = "standalone" | "graph-server";

export function isThreadId(id: string, runtime: ThreadIdRuntime): boolean {
  return (runtime === "graph-server" ? UUID_PATTERN : THREAD_ID_PATTERN).test(id);
}

/** What a thread id must be, for a message that names the rule and never the value. */
export function threadIdRule(runtime: ThreadIdRuntime): string {
  return runtime === "graph-server" ? "a UUID (graph-server runtime)" : "1-128 characters of letters, digits, '_', '.', ':' and '-'";
}
