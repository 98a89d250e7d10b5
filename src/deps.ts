/** Everything the routes and the domain need, built once by createApp from ready adapters. */
import type { Model } from "./agent/model.js";
import type { AnswerChecker, ResponseSchema } from "./agent/structured.js";
import type { Tool } from "./agent/tools/define.js";
import type { AuthPolicy } from "./auth/policy.js";
import type { PrincipalHasher } from "./auth/hashing.js";
import type { Clock } from "./clock.js";
import type { Ids } from "./ids.js";
import type { Logger } from "./observability/logger.js";
import type { Metrics } from "./observability/metrics.js";
import type { PolicyClient } from "./policy/client.js";
import type { Settings } from "./settings/parse.js";
import type { Store, ThreadLease } from "./store/ports.js";
import type { RunRegistry } from "./agent/registry.js";
import type { LeaseTimings } from "./agent/runner.js";
import type { PauseBook } from "./approvals/gate.js";
import type { ApprovalRecord } from "./approvals/types.js";
import type { RunOutcome } from "./agent/outcome.js";

export interface Deps {
  readonly settings: Settings;
  readonly store: Store;
  readonly lease: ThreadLease;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly auth: AuthPolicy;
  readonly hashPrincipal: PrincipalHasher;
  /** Builds the model for a run; throws ConfigurationError naming a missing setting. */
  readonly model: () => Model;
  readonly system: string;
  /** Set when a response schema is configured (spec 4.1). */
  readonly responseSchema: { readonly schema: ResponseSchema; readonly checker: AnswerChecker; readonly strategy: "auto" | "provider" | "tool" } | undefined;
  readonly tools: ReadonlyMap<string, Tool>;
  /** The outbound policy client; undefined without a policy (every call is then refused). */
  readonly policyClient: PolicyClient | undefined;
  readonly runs: RunRegistry;
  /** A development API key to prefill in the playground (only set by `npm run dev`). */
  readonly playgroundKey: string | undefined;
  readonly leaseTimings: LeaseTimings;
  /** Called when a run resumed after an approval decision has ended (A2A tasks take its outcome). */
  afterResume?: ((approval: ApprovalRecord, outcome: RunOutcome) => Promise<void> | void) | undefined;
  /** The store holds the thread lease too (Postgres): a run can end in one write. */
  readonly leaseInStore: boolean;
  /** Tool calls waiting for approval, per run. */
  readonly pauses: PauseBook;
  /** Distinguishes this process's lease holders from other replicas'. */
  readonly instanceId: string;
}
