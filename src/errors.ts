/**
 * One error base with a stable `code`. Code branches on `code`, never on `instanceof`: bundles
 * with several entries can hold two copies of a class. Messages never carry untrusted input;
 * they are written to be safe in a log line and, where the HTTP mapping says so, a response.
 */

/** Codes of the domain's refusals: the HTTP and A2A layers each map them in one table. */
export type RefusalCode =
  | "forbidden"
  | "not_found"
  | "thread_busy"
  | "thread_foreign"
  | "approval_pending"
  | "approval_not_found"
  | "not_an_approver"
  | "approval_direct_only"
  | "approval_not_pending"
  | "approval_expired"
  | "approval_digest_mismatch";

export type ErrorCode =
  | RefusalCode
  | "invalid_settings"
  | "invalid_policy"
  | "configuration"
  | "unauthorized"
  | "lease_lost"
  | "recursion_limit"
  | "conflict"
  | "gone"
  | "payload_too_large"
  | "validation"
  | "unavailable"
  | "model_error"
  | "tool_error"
  | "api_policy"
  | "api_call"
  | "paused"
  | "invalid_structured_response"
  | "internal";

export class AppError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = "AppError";
  }
}

/**
 * The domain refused a request before doing anything. `message` is written for the caller (never
 * holds its input); `details` are safe extra fields of the answer (the approvals a thread waits
 * for, the status an approval already has).
 */
export class Refusal extends AppError {
  override readonly code: RefusalCode;
  readonly details: Readonly<Record<string, unknown>>;
  constructor(code: RefusalCode, message: string, details: Record<string, unknown> = {}) {
    super(code, message);
    this.code = code;
    this.name = "Refusal";
    this.details = details;
  }
}

export function isRefusal(e: unknown): e is Refusal {
  return isAppError(e) && typeof (e as Refusal).details === "object" && (e as Refusal).details !== null;
}

/** A fenced write found the thread's lease gone: another run may hold the thread now. */
export class LeaseLost extends AppError {
  constructor(message = "The thread's lease moved on; the write was refused.") {
    super("lease_lost", message);
    this.name = "LeaseLost";
  }
}

export interface SettingsProblem {
  readonly variable: string;
  readonly message: string;
}

/** Thrown by parseSettings with every bad variable at once. */
export class SettingsError extends AppError {
  readonly problems: readonly SettingsProblem[];
  constructor(problems: readonly SettingsProblem[]) {
    super(
      "invalid_settings",
      `Invalid settings (${problems.length}): ${problems.map((p) => `${p.variable} ${p.message}`).join("; ")}`,
    );
    this.name = "SettingsError";
    this.problems = problems;
  }
}

/** A setting the current operation needs is missing; the message names the variable only. */
export class ConfigurationError extends AppError {
  constructor(message: string) {
    super("configuration", message);
    this.name = "ConfigurationError";
  }
}

/** The model provider failed (network, status, malformed answer). Detail goes to the log only. */
export class ModelError extends AppError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("model_error", message, options);
    this.name = "ModelError";
  }
}

/** An outbound call refused by the API policy before anything was sent. The model reads the message. */
export class ApiPolicyError extends AppError {
  constructor(message: string) {
    super("api_policy", message);
    this.name = "ApiPolicyError";
  }
}

/** An outbound call that was sent and failed (network, timeout, capped answer). */
export class ApiCallError extends AppError {
  readonly status: number | undefined;
  constructor(message: string, options?: { status?: number; cause?: unknown }) {
    super("api_call", message, options);
    this.name = "ApiCallError";
    this.status = options?.status;
  }
}

/**
 * Not a failure: a gated call is waiting for a person, so the run pauses. Thrown through the
 * tool; the loop recognises the tool call as paused whatever the tool did with the error.
 */
export class RunPaused extends AppError {
  constructor() {
    super("paused", "The call waits for a person's approval; the run pauses.");
    this.name = "RunPaused";
  }
}

export function isAppError(e: unknown): e is AppError {
  return typeof e === "object" && e !== null && typeof (e as { code?: unknown }).code === "string" && e instanceof Error;
}

export function hasCode(e: unknown, code: ErrorCode): boolean {
  return isAppError(e) && e.code === code;
}

/**
 * A store that is up but cancelled the statement (a lock or statement timeout, a deadlock) and
 * rolled it back, as against one that does not answer: both are `unavailable`, the words differ.
 */
export function storeBusy(e: unknown): boolean {
  return hasCode(e, "unavailable") && (e as { busy?: unknown }).busy === true;
}
