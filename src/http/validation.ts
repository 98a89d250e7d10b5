/**
 * Request validation with zod, reported as 422 `{type, loc, msg, ctx}` issues that name the
 * field and the rule, never the submitted value (zod 4 leaves `input` out of issues unless asked,
 * and nothing here copies it back in).
 */
import type { z } from "zod";
import { valueAt } from "../json.js";
import { type FieldIssue, unprocessable } from "../problems.js";

type Issue = z.core.$ZodIssue;

export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, where: "body" | "query" | "path"): z.output<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw unprocessable(result.error.issues.flatMap((i) => toFieldIssues(i, where, value)));
}

function toFieldIssues(issue: Issue, where: string, root: unknown): FieldIssue[] {
  const loc = [where, ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
  switch (issue.code) {
    case "invalid_type": {
      const missing = valueAt(root, issue.path) === undefined;
      return [
        missing
          ? { type: "missing", loc, msg: "Field required", ctx: {} }
          : { type: `${issue.expected}_type`, loc, msg: `Input should be of type ${issue.expected}`, ctx: { expected: issue.expected } },
      ];
    }
    case "too_small":
    case "too_big": {
      const small = issue.code === "too_small";
      const bound = Number(small ? (issue as { minimum: number | bigint }).minimum : (issue as { maximum: number | bigint }).maximum);
      if (issue.origin === "string")
        return [
          small
            ? { type: "string_too_short", loc, msg: `String should have at least ${bound} characters`, ctx: { min_length: bound } }
            : { type: "string_too_long", loc, msg: `String should have at most ${bound} characters`, ctx: { max_length: bound } },
        ];
      return [
        small
          ? { type: "greater_than_equal", loc, msg: `Input should be greater than or equal to ${bound}`, ctx: { ge: bound } }
          : { type: "less_than_equal", loc, msg: `Input should be less than or equal to ${bound}`, ctx: { le: bound } },
      ];
    }
    case "invalid_format":
      return [{ type: "string_pattern_mismatch", loc, msg: issue.message, ctx: issue.pattern ? { pattern: issue.pattern } : {} }];
    case "invalid_value":
      return [{ type: "enum", loc, msg: `Input should be one of ${issue.values.map(String).join(", ")}`, ctx: { expected: issue.values.map(String).join(", ") } }];
    case "unrecognized_keys":
      return issue.keys.map((k) => ({ type: "extra_forbidden", loc: [...loc, k], msg: "Extra inputs are not permitted", ctx: {} }));
    case "custom": {
      const params = (issue.params ?? {}) as { type?: string; ctx?: Record<string, string | number | boolean> };
      return [{ type: params.type ?? "value_error", loc, msg: issue.message, ctx: params.ctx ?? {} }];
    }
    default:
      return [{ type: "value_error", loc, msg: "Input is invalid", ctx: {} }];
  }
}
