/**
 * A run of our graph as one graph node sees it: the caller (from the run context the auth
 * handler wrote, never from the request), the thread and run ids the server assigned, and the
 * agent loop's steps (agent/loop.ts) wired to this app's model, tools and policy client exactly
 * as a standalone run wires them (runs/execute.ts). Native runs skip the `/chat` guardrails
 * (spec 4.6): no timeout, no thread lease, no run record, except the record a pause needs so our
 * approval route can resume the run.
 */
import { HISTORY_CUT_NOTE, turnStartWindow } from "../../agent/history.js";
import type { RunEvent } from "../../agent/events.js";
import { Loop } from "../../agent/loop.js";
import { ACTIONS, type Principal } from "../../auth/principal.js";
import { isoTime } from "../../clock.js";
import type { JsonValue } from "../../json.js";
import { noPolicyClient } from "../../policy/types.js";
import type { Message, RunRecord } from "../../store/ports.js";
import type { GraphServerHost } from "./host.js";

/** What a node reads of the server's run configuration. */
export interface NodeConfig {
  readonly configurable?: Record<string, unknown>;
  readonly signal?: AbortSignal;
  readonly writer?: (chunk: unknown) => void;
}

interface RunCaller {
  readonly id: string;
  readonly roles: string[];
  readonly attributes: Record<string, JsonValue>;
  readonly actor: Principal["actor"];
}

export class NativeRunRefused extends Error {
  constructor(why: string) {
    super(why);
    this.name = "NativeRunRefused";
  }
}

export interface NativeRun {
  readonly threadId: string;
  readonly runId: string;
  /** The loop's steps over `messages`; what they write goes to `out` (the node's update). */
  loop(messages: readonly Message[], out: Message[]): Loop;
  /** The record our approval route resumes a paused run by (written once per run). */
  recordPause(): Promise<void>;
  /** Ids of the approvals this run waits for. */
  approvalIds(): string[];
  forget(): void;
}

export function nativeRun(host: GraphServerHost, config: NodeConfig): NativeRun {
  const configurable = config.configurable ?? {};
  const caller = configurable.agent_principal as RunCaller | undefined;
  const threadId = configurable.thread_id;
  const runId = configurable.run_id;
  // Only runs the auth handler let through carry a caller: nothing runs as nobody.
  if (!caller || typeof caller.id !== "string" || typeof threadId !== "string" || typeof runId !== "string")
    throw new NativeRunRefused("the run has no caller: it was not created through the auth handler");
  const ctx = host.parts.runs;
  const principal: Principal = {
    id: caller.id,
    roles: caller.roles,
    permissions: new Set(ACTIONS),
    attributes: Object.fromEntries(Object.entries(caller.attributes).filter(([k]) => k !== "@actor")),
    credentials: {},
    actor: caller.actor,
  };
  const signal = config.signal ?? new AbortController().signal;
  const logger = ctx.logger.child({ run_id: runId, thread_id: threadId, native: true });
  // Our events go out on the server's `custom` stream mode.
  const emit = (event: RunEvent) => config.writer?.(event);

  const loop = (all: readonly Message[], out: Message[]) => {
    // The same history budget as a standalone run (agent/history.ts): the newest whole turns.
    const { messages, cut, words } = turnWindow(all, ctx.limits.historyTokens);
    const haystack = words.toLowerCase();
    const rs = ctx.agent.responseSchema;
    const model = ctx.agent.model();
    const strategy = rs && (rs.strategy === "tool" || (rs.strategy === "auto" && !model.structuredOutput) ? "tool" : "provider");
    return new Loop({
      model,
      system: cut ? `${ctx.agent.system}\n\n${HISTORY_CUT_NOTE}` : ctx.agent.system,
      tools: ctx.agent.tools,
      recursionLimit: ctx.limits.recursionLimit,
      dev: ctx.limits.dev,
      signal,
      throwIfStopped: () => signal.throwIfAborted(),
      ids: ctx.ids,
      logger,
      messages,
      emit,
      persist: async (batch) => void out.push(...batch),
      isPaused: (toolCallId) => ctx.pauses.isPaused(runId, toolCallId),
      toolContext: {
        principal: Object.freeze({ id: caller.id, roles: [...caller.roles], attributes: { ...caller.attributes }, actor: caller.actor }),
        threadId,
        runId,
        userMentioned: (value) => value.trim() !== "" && haystack.includes(value.trim().toLowerCase()),
      },
      apiFor: ctx.agent.policyClient
        ? ctx.agent.policyClient.forRun({ threadId, runId, principal, signal, logger, resumed: false, originWords: words })
        : () => noPolicyClient,
      ...(rs && strategy ? { structured: { schema: rs.schema, checker: rs.checker, strategy } } : {}),
    });
  };

  return {
    threadId,
    runId,
    loop,
    async recordPause() {
      if (await ctx.store.getRun(runId)) return;
      const at = isoTime(ctx.clock.now());
      const record: RunRecord = {
        run_id: runId,
        thread_id: threadId,
        status: "awaiting_approval",
        error_type: null,
        error_id: null,
        principal_hash: await host.parts.hashPrincipal(principal.id),
        actor: principal.actor?.id ?? null,
        metadata: { native: true },
        usage: { input_tokens: 0, output_tokens: 0 },
        created_at: at,
        updated_at: at,
        ended_at: at,
        latency_ms: null,
        resumed_from: null,
        resumed_by: null,
      };
      await ctx.store.createRun(record);
    },
    approvalIds: () => ctx.pauses.approvalIds(runId),
    forget: () => ctx.pauses.forget(runId),
  };
}

/**
 * The window of a step of the turn being answered (turnStartWindow: the older turns as the turn
 * started, then the turn's own steps), and the user's words that started the turn. Each step runs
 * this node again on the whole thread; choosing again with the turn's growth would drop an older
 * turn between two model steps of one turn.
 */
function turnWindow(all: readonly Message[], budget: number): { messages: Message[]; cut: boolean; words: string } {
  return { ...turnStartWindow(all, budget, true), words: all.findLast((m) => m.role === "user")?.content ?? "" };
}
