/** The system file once loaded (spec 2.9), and what the loader asks of its host. */
import type { AgentInput, EdgeCall, EnvironmentInput } from "./schema.js";

export type AuthPolicyName = "shared-bearer" | "jwt" | "custom";
export type EdgeAuth = "exchange" | "forward" | "bearer";

/** What the loader needs from the machine it runs on (the command-line client passes one over node:fs). */
export interface SystemHost {
  /**
   * The project directory `project` (as written, relative to the system file) names, in a form
   * where one directory always has one spelling (links resolved); undefined when there is no
   * directory there.
   */
  projectDir(project: string): Promise<string | undefined>;
  /** The auth policy the agent in `dir` runs under (its AUTH_POLICY): it picks an edge's default auth. */
  authPolicy(dir: string): Promise<AuthPolicyName>;
}

export interface SystemEdge {
  /** Where the edge is written (`agents.front.calls[0]`). */
  readonly place: string;
  readonly agent: string;
  readonly approvals: "relay" | "deny";
  readonly auth: EdgeAuth;
  /** False when `auth` is the default of the caller's auth policy. */
  readonly authWritten: boolean;
  readonly scope: string | undefined;
  readonly allowActorless: boolean;
  readonly calls: readonly EdgeCall[];
  readonly description: string | undefined;
}

export interface SystemAgent {
  readonly name: string;
  /** Place in file order: under port_base the agent listens on port_base + index. */
  readonly index: number;
  /** As written in the file. */
  readonly project: string;
  /** As the host resolved it. */
  readonly dir: string;
  readonly clientId: string;
  readonly actorId: string;
  readonly authPolicy: AuthPolicyName;
  readonly calls: readonly SystemEdge[];
}

export type SystemEnvironment =
  | { readonly name: string; readonly kind: "local"; readonly portBase: number }
  | { readonly name: string; readonly kind: "url"; readonly url: string }
  | { readonly name: string; readonly kind: "cluster" };

export interface System {
  readonly name: string | undefined;
  readonly agents: readonly SystemAgent[];
  readonly identity: { readonly issuer: string; readonly tokenUrl: string | Readonly<Record<string, string>> | undefined } | undefined;
  readonly environments: ReadonlyMap<string, SystemEnvironment>;
  readonly maxConnections: Readonly<Record<string, number>>;
  readonly parallel: number;
}

/** An agent as its own schema read it; `input` is undefined when that failed (its name still counts). */
export interface LoadedAgent {
  readonly name: string;
  readonly index: number;
  readonly input: AgentInput | undefined;
}

export type { EdgeCall, EnvironmentInput };
