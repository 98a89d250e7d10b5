/**
 * What the providers share about one model request: the timeout without progress (MODEL_TIMEOUT_S)
 * and, where a provider retries by itself (MODEL_MAX_RETRIES), which answers it retries and how long
 * it waits. gemini (fetch only) times and retries every attempt here; openai retries here and leaves
 * the wait for the response headers to the SDK's own timeout; anthropic leaves both to its SDK, whose
 * waits watch the signal. All three time the stream here: an SDK's timeout ends with the headers.
 */

/** The longest wait before a retry, whatever the server asks (Retry-After). */
export const MAX_BACKOFF_MS = 2000;
const BASE_BACKOFF_MS = 250;

/**
 * Aborts one request on the caller's signal, or after `timeoutMs` without progress once started
 * (`resume`). `signal` goes to the transport (fetch or the SDK), so a timeout drops the connection.
 */
export class AttemptControl {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onAbort: () => void;
  timedOut = false;

  constructor(
    private readonly parent: AbortSignal,
    private readonly timeoutMs: number | undefined,
  ) {
    this.onAbort = () => this.controller.abort(parent.reason);
    if (parent.aborted) this.onAbort();
    else parent.addEventListener("abort", this.onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** (Re)starts the timeout: before the answer starts, then between streamed events. */
  resume(): void {
    this.pause();
    if (this.timeoutMs === undefined || this.timeoutMs <= 0) return;
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort(new Error("model request timed out"));
    }, this.timeoutMs);
  }

  pause(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The events of a stream opened with `signal`, the timeout restarted at its start and at each
   * event. An SDK ends its stream quietly when its signal aborts: after a timeout this throws.
   */
  async *watch<T>(events: AsyncIterable<T>): AsyncGenerator<T> {
    this.resume();
    for await (const event of events) {
      this.resume();
      yield event;
    }
    this.pause();
    if (this.timedOut) throw this.signal.reason;
  }

  dispose(): void {
    this.pause();
    this.parent.removeEventListener("abort", this.onAbort);
  }
}

/** Whether an error answer is worth another attempt: as the server's x-should-retry says, else 408, 409, 429 and 5xx. */
export function isRetryable(status: number, headers?: Headers | null): boolean {
  const should = headers?.get("x-should-retry");
  if (should === "true") return true;
  if (should === "false") return false;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The wait before retry `attempt` (from 1): what the server asks (retry-after-ms, else Retry-After
 * in seconds or as a date), else exponential backoff with jitter; never more than MAX_BACKOFF_MS.
 */
export function backoffMs(attempt: number, headers?: Headers | null): number {
  const asked = serverDelayMs(headers);
  if (asked !== undefined) return Math.min(asked, MAX_BACKOFF_MS);
  const exp = Math.min(BASE_BACKOFF_MS * 2 ** (attempt - 1), MAX_BACKOFF_MS);
  return exp * (1 - Math.random() * 0.25);
}

function serverDelayMs(headers: Headers | null | undefined): number | undefined {
  const ms = headers?.get("retry-after-ms")?.trim();
  if (ms) {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const retryAfter = headers?.get("retry-after")?.trim();
  if (!retryAfter) return undefined;
  const seconds = Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
