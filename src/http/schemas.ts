/**
 * Request schemas: the same zod objects validate requests and generate /openapi.json. Limits
 * come from the settings, so the schemas are built once per app.
 */
import { z } from "zod";
import { codePointLength } from "../json.js";
import type { Settings } from "../settings/parse.js";
import { COMMENT_CONTROL, COMMENT_MAX_CHARS } from "../approvals/decide.js";
import { DIGEST_FORM } from "../approvals/digest.js";
import { THREAD_ID_PATTERN, UUID_PATTERN } from "../thread-ids.js";

/** A thread id in the runtime's form (src/thread-ids.ts). */
export const threadId = (runtime: Settings["runtime"] = "standalone") =>
  runtime === "graph-server"
    ? z.string().regex(UUID_PATTERN, { message: "String should be a UUID" }).describe("A UUID (graph-server runtime).")
    : z
        .string()
        .min(1)
        .max(128)
        .regex(THREAD_ID_PATTERN, { message: "String should match pattern '^[A-Za-z0-9_.:-]{1,128}$'" })
        .describe("1-128 characters of letters, digits, '_', '.', ':' and '-'.");

const metadataValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** What a check reads and reports to: the value, and the issues found so far. */
type CheckPayload<T> = { readonly value: T; readonly issues: unknown[] };

/**
 * Reports a custom issue as superRefine's `addIssue` does (`continue: true`: the checks after it
 * still run). A check given to `.check()` reports straight to its payload: superRefine makes a
 * closure (`addIssue`) on every parse, which each /chat paid and left as garbage.
 */
function report(payload: CheckPayload<unknown>, message: string, params: { type: string; ctx?: Record<string, number> }, path?: PropertyKey[]): void {
  payload.issues.push({ code: "custom", message, params, input: payload.value, continue: true, ...(path ? { path } : {}) });
}

/** Counts code points (CONTRACT 5) and rejects lone surrogates, reporting the rule only. */
function text(max: number, min: number) {
  return z.string().check((payload: CheckPayload<string>) => {
    const s = payload.value;
    if (!s.isWellFormed()) return report(payload, "String is not valid Unicode (lone surrogate)", { type: "invalid_unicode" });
    const n = codePointLength(s);
    if (n < min) report(payload, `String should have at least ${min} characters`, { type: "string_too_short", ctx: { min_length: min } });
    if (n > max) report(payload, `String should have at most ${max} characters`, { type: "string_too_long", ctx: { max_length: max } });
  });
}

export function chatRequestSchema(s: Settings) {
  const maxKeys = s.MAX_METADATA_KEYS;
  const maxChars = s.MAX_METADATA_VALUE_CHARS;
  // Checked on the object as parsed from JSON, own keys and all: a record schema would rebuild it
  // by assignment, where a `__proto__` key sets the prototype and its value silently disappears.
  const metadata = z
    .custom<Record<string, unknown>>((v) => typeof v === "object" && v !== null && !Array.isArray(v), { message: "Input should be a valid dictionary" })
    .check((payload: CheckPayload<Record<string, unknown>>) => {
      const record = payload.value;
      const keys = Object.keys(record);
      if (keys.length > maxKeys) report(payload, `Metadata should have at most ${maxKeys} keys`, { type: "too_many_keys", ctx: { max_keys: maxKeys } });
      for (const key of keys) {
        const value = record[key];
        // The key is reported by position, never by name: it is client input too.
        if (!key.isWellFormed() || codePointLength(key) > maxChars)
          report(payload, `Metadata keys should be valid Unicode of at most ${maxChars} characters`, { type: "key_too_long", ctx: { max_length: maxChars } });
        else if (!metadataValue.safeParse(value).success)
          report(payload, "Metadata values should be a string, number, boolean or null (no nesting)", { type: "metadata_value_type" }, [key]);
        else if (typeof value === "string" && (!value.isWellFormed() || codePointLength(value) > maxChars))
          report(payload, `Metadata strings should be valid Unicode of at most ${maxChars} characters`, { type: "string_too_long", ctx: { max_length: maxChars } }, [key]);
      }
    })
    .describe(`Flat object: at most ${maxKeys} keys; values string, number, boolean or null; keys and strings at most ${maxChars} characters.`);

  return z
    .strictObject({
      message: text(s.MAX_MESSAGE_CHARS, 1).describe(`1 to ${s.MAX_MESSAGE_CHARS} characters of valid Unicode.`),
      thread_id: threadId(s.runtime).optional().describe("Omit to start a thread; send to continue one you own."),
      metadata: metadata.optional(),
    })
    .meta({ title: "ChatRequest" });
}

export const listThreadsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
  scope: z.enum(["own", "all"]).default("own"),
});

/** Most messages a page holds; with no paging asked, a thread this small is read whole (spec 4.2's answer). */
export const MESSAGES_PAGE_MAX = 1000;

/**
 * A message id as a page's anchor: any id a thread can hold, so every `Link` the route gives is
 * followed. Ours are hex, but a graph-server native run keeps the ids its client sent, whatever
 * their characters. It is only compared with the thread's ids, and never echoed back.
 */
const messageCursor = z.string().min(1).max(8192);

export const messagesQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(MESSAGES_PAGE_MAX).default(MESSAGES_PAGE_MAX),
    before: messageCursor.optional().describe("The messages just before this message id (older)."),
    after: messageCursor.optional().describe("The messages just after this message id (newer)."),
  })
  .refine((q) => q.before === undefined || q.after === undefined, { message: "give before or after, not both", path: ["after"] });

export const threadRow = z
  .object({
    thread_id: z.string(),
    owner: z.string().describe("Hashed principal id."),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ title: "Thread" });

export const message = z
  .object({
    id: z.string(),
    role: z.enum(["user", "assistant", "tool"]),
    content: z.string(),
    tool_calls: z.array(z.object({ id: z.string(), name: z.string(), args: z.record(z.string(), z.unknown()) })).optional(),
    tool_call_id: z.string().optional(),
    name: z.string().optional(),
    is_error: z.boolean().optional(),
    error_id: z.string().optional(),
  })
  .meta({ title: "Message" });

export const decisionSchema = z
  .strictObject({
    decision: z.enum(["approve", "reject"]),
    // zod counts a string's length in code points, as CONTRACT 5 does.
    comment: z
      .string()
      .max(COMMENT_MAX_CHARS)
      .check((payload: CheckPayload<string>) => {
        if (COMMENT_CONTROL.test(payload.value)) report(payload, "Comment must not contain control characters other than newline and tab", { type: "control_characters" });
      })
      .optional(),
    digest: z
      .string()
      .max(80)
      .regex(DIGEST_FORM, "Digest should be sha256: followed by 64 lowercase hex characters")
      .optional()
      .describe("sha256:<hex> of the call as shown; required of a relaying agent"),
  })
  .meta({ title: "ApprovalDecision" });

export const listApprovalsQuery = z.object({
  status: z.enum(["pending", "approved", "rejected", "expired"]).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
});
