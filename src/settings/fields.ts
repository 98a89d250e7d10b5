/**
 * Field builders for environment variables. Every value arrives as a string (or is absent);
 * an empty string reads as absent unless the field says otherwise, because `FOO=` in an env
 * file almost always means "not set". Messages name the rule, never the value: a value can be
 * a secret.
 */
import { z } from "zod";

const blankToUndefined = (value: unknown) => (value === "" ? undefined : value);

/** A string that keeps the empty string (for settings where empty has a meaning of its own). */
export const rawString = () => z.string();

export const text = () => z.preprocess(blankToUndefined, z.string().optional());

export const textWithDefault = (fallback: string) =>
  z.preprocess(blankToUndefined, z.string().default(fallback));

export const int = (fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .regex(/^\s*-?\d+\s*$/, { message: "must be a whole number" })
      .transform((s) => Number(s.trim()))
      .pipe(
        z
          .number()
          .min(min, { message: `must be at least ${min}` })
          .max(max, { message: `must be at most ${max}` }),
      )
      .default(fallback),
  ) as unknown as z.ZodType<number, unknown>;

/** A decimal number from 0 to 1 (a probability). */
export const fraction = (fallback: number) =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .regex(/^\s*(\d+\.?\d*|\.\d+)\s*$/, { message: "must be a number from 0 to 1" })
      .transform((s) => Number(s.trim()))
      .pipe(z.number().max(1, { message: "must be a number from 0 to 1" }))
      .default(fallback),
  ) as unknown as z.ZodType<number, unknown>;

const TRUE = new Set(["true", "1", "yes", "on"]);
const FALSE = new Set(["false", "0", "no", "off"]);

/** A boolean written the usual ways (true/false, 1/0, yes/no, on/off, any case). */
export const bool = () =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .optional()
      .transform((s, ctx) => {
        if (s === undefined) return undefined;
        const v = s.trim().toLowerCase();
        if (TRUE.has(v)) return true;
        if (FALSE.has(v)) return false;
        ctx.addIssue({ code: "custom", message: "must be true or false" });
        return z.NEVER;
      }),
  ) as unknown as z.ZodType<boolean | undefined, unknown>;

export const boolWithDefault = (fallback: boolean) =>
  bool().transform((v) => v ?? fallback) as unknown as z.ZodType<boolean, unknown>;

/** One of a fixed set of words, compared exactly. */
export function oneOf<const T extends readonly [string, ...string[]]>(values: T): z.ZodType<T[number] | undefined, unknown>;
export function oneOf<const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]): z.ZodType<T[number], unknown>;
export function oneOf<const T extends readonly [string, ...string[]]>(values: T, fallback?: T[number]) {
  const e = z.enum(values, { message: `must be one of ${values.join(", ")}` });
  return z.preprocess(blankToUndefined, fallback === undefined ? e.optional() : e.default(fallback as never));
}

/** A comma-separated list; blanks between commas are dropped. */
export const csv = () =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .optional()
      .transform((s) =>
        s === undefined
          ? []
          : s
              .split(",")
              .map((p) => p.trim())
              .filter((p) => p.length > 0),
      ),
  ) as unknown as z.ZodType<string[], unknown>;

export const url = () =>
  z.preprocess(
    blankToUndefined,
    z
      .string()
      .optional()
      .refine((s) => s === undefined || isHttpUrl(s), { message: "must be an absolute http(s) URL" }),
  ) as unknown as z.ZodType<string | undefined, unknown>;

export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}

/** A URL host (brackets of an IPv6 literal allowed) that never leaves the machine: localhost, ::1, 127.0.0.0/8. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
}

/** Header or environment variable names. */
export const name = (pattern: RegExp, rule: string) =>
  z.preprocess(blankToUndefined, z.string().regex(pattern, { message: rule }).optional());
