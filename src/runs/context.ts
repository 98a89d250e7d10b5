/**
 * What the run layer works with, built once by createApp from ready adapters. Nothing above the
 * run layer sees it: routes and the A2A layer get the `Runs` service (runs/index.ts).
 */
import type { Model } from "../agent/model.js";
import type { AnswerChecker, ResponseSchema } from "../agent/structured.js";
import type { Tool } from "../agent/tools/define.js";
import type { DecisionBook } from "../approvals/decide.js";
import type { PauseBook } from "../approvals/gate.js";
import type { Clock } from "../clock.js";
import type { Ids } from "../ids.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { Tracing } from "../observability/tracing.js";
import type { PolicyClient } from "../policy/client.js";
import type { Store } from "../store/ports.js";
import type { DelegationRules } from "./delegation.js";
import type { ThreadLeases } from "./leases.js";
import type { RunRegistry } from "./registry.js";

/** The agent a run drives: model, prompt, tools, structured answers, the outbound client. */
export interface AgentSetup {
  /** Builds the model for a run; throws ConfigurationError naming a missing setting. */
  readonly model: () => Model;
  readonly system: string;
  readonly tools: ReadonlyMap<string, Tool>;
  /** Set when a response schema is configured (spec 4.1). */
  readonly responseSchema: { readonly schema: ResponseSchema; readonly checker: AnswerChecker; readonly strategy: "auto" | "provider" | "tool" } | undefined;
  /** The outbound policy client; undefined without a policy (every call is then refused). */
  readonly policyClient: PolicyClient | undefined;
}

export interface RunLimits {
  readonly runTimeoutS: number;
  readonly recursionLimit: number;
  /** MAX_HISTORY_TOKENS: the newest whole turns of a thread that fit are sent to the model. */
  readonly historyTokens: number;
  readonly dev: boolean;
  /** A run's timer is one interval of the lease renewal period (CreateAppOptions.repeatingRunTimers). */
  readonly repeatingTimer: boolean;
  /** How requests another agent presents are framed (A2A_CALLER_NOTE, A2A_DELEGATED_MENTIONS). */
  readonly delegation: DelegationRules;
}

export interface RunsContext {
  readonly store: Store;
  readonly leases: ThreadLeases;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly agent: AgentSetup;
  readonly limits: RunLimits;
  /** Recording decisions and expiries. */
  readonly decisions: DecisionBook;
  /** Tool calls waiting for approval, per run. */
  readonly pauses: PauseBook;
  readonly registry: RunRegistry;
  /** Run spans (runs/trace.ts); a no-op facade while tracing is off. */
  readonly tracing: Tracing;
  /**
   * Work a run leaves going after its end (what follows a resumed run: reading the paused run,
   * then settling the tasks waiting on the decision), handed to the app from the moment the run
   * starts, so that App.settled() and close() wait for all of it, not only for the part that
   * began after a look-up. Absent: nothing waits for it.
   */
  readonly track?: (work: Promise<unknown>) => void;
}
