/** The public API: nothing runtime-specific. */
export { createApp, type App, type CreateAppOptions } from "./app.js";
export { defineTool, type Tool, type ToolContext, type ToolDefinition } from "./agent/tools/define.js";
export { AppError, ApiCallError, ApiPolicyError, ConfigurationError, SettingsError, type ErrorCode } from "./errors.js";
export type { ApiClient, ApiRequest, ApiResponse, DeclaredCall } from "./policy/types.js";
export type { PublicPrincipal, Actor } from "./auth/principal.js";
export type { Model, ModelEvent, ModelRequest, ToolSpec } from "./agent/model.js";
export type { Store, ThreadLease, LeaseHandle, Message, RunRecord, ThreadRow } from "./store/ports.js";
export type { Clock } from "./clock.js";
export type { Settings } from "./settings/parse.js";
export type { RunEvent } from "./agent/events.js";
export { checkPolicy, type PolicyCheckResult } from "./policy/check.js";
export { loadPolicy, PolicyError, type PolicyProblem, type Policy, type ApiPolicy } from "./policy/document.js";
export type { ApprovalGate, HeldCall } from "./policy/gate.js";
export type { ReadText } from "./files.js";
export type { AuthPolicy } from "./auth/policy.js";
export type { Principal, Action } from "./auth/principal.js";
export { ACTIONS } from "./auth/principal.js";
export { AuthError, type CustomAuthPolicy, type CustomPrincipal } from "./auth/custom.js";
