/**
 * Errors that carry their HTTP answer. The one mapping to a Response lives in
 * middleware/errors.ts and branches on `code`.
 */
import { AppError, type ErrorCode } from "./errors.js";

export interface FieldIssue {
  readonly type: string;
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly ctx: Readonly<Record<string, string | number | boolean>>;
}

export class HttpError extends AppError {
  readonly status: number;
  readonly body: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;
  constructor(code: ErrorCode, status: number, body: Record<string, unknown>, headers: Record<string, string> = {}) {
    super(code, typeof body.detail === "string" ? body.detail : code);
    this.name = "HttpError";
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const unauthorized = (detail: string, invalid: boolean) =>
  new HttpError("unauthorized", 401, { detail }, { "WWW-Authenticate": invalid ? 'Bearer error="invalid_token"' : "Bearer" });

export const forbidden = (detail: string) => new HttpError("forbidden", 403, { detail });

export const notFound = (detail = "Not found.") => new HttpError("not_found", 404, { detail });

export const threadBusy = () =>
  new HttpError("thread_busy", 409, { code: "thread_busy", detail: "A run is in progress on this thread." });

export const payloadTooLarge = (max: number) =>
  new HttpError("payload_too_large", 413, { detail: `Request body exceeds MAX_REQUEST_BYTES (${max} bytes).` });

export const unprocessable = (issues: readonly FieldIssue[]) => new HttpError("validation", 422, { detail: issues });

/** 503 carries an error id so an operator can find the logged cause. */
export const unavailable = (detail: string, errorId: string) =>
  new HttpError("unavailable", 503, { detail, error_id: errorId });

export const THREAD_FOREIGN = "This thread belongs to another principal.";

/** Branches on shape, not `instanceof` (bundles with several entries can hold two copies of a class). */
export function isHttpError(e: unknown): e is HttpError {
  return (
    typeof e === "object" &&
    e !== null &&
    typeof (e as HttpError).code === "string" &&
    typeof (e as HttpError).status === "number" &&
    typeof (e as HttpError).body === "object"
  );
}
