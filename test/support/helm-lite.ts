/**
 * Renders the Helm chart under scripts/deploy/helm with the subset of Helm's template language
 * its templates use, since Helm does not run here: `{{ .Values.a.b }}`, `.Release.*`, `.Chart.*`
 * (Chart.yaml's fields, capitalised as Helm does), the functions `quote`, `toYaml`, `nindent N`,
 * `indent N` in pipelines, and `{{-` / `-}}` trimming. Anything else, or a value path that is not
 * there, throws: a template using more of the language than this, or naming a value that
 * values.yaml lacks, fails the test instead of rendering wrong.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";

export interface Rendered {
  /** Template file name -> rendered text. */
  readonly files: Record<string, string>;
  readonly values: Record<string, unknown>;
}

const capitalise = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export function renderChart(dir: string, release = { Name: "test", Namespace: "default" }): Rendered {
  const values = parse(readFileSync(join(dir, "values.yaml"), "utf8")) as Record<string, unknown>;
  const chart = parse(readFileSync(join(dir, "Chart.yaml"), "utf8")) as Record<string, unknown>;
  const scope = { Values: values, Release: release, Chart: Object.fromEntries(Object.entries(chart).map(([k, v]) => [capitalise(k), v])) };
  const files: Record<string, string> = {};
  for (const name of readdirSync(join(dir, "templates")).filter((n) => n.endsWith(".yaml")).sort()) {
    files[name] = renderTemplate(readFileSync(join(dir, "templates", name), "utf8"), scope, name);
  }
  return { files, values };
}

export function renderTemplate(template: string, scope: Record<string, unknown>, where = "template"): string {
  return template.replace(/(\s*)\{\{(-?)\s*(.*?)\s*(-?)\}\}(\s*)/gs, (_all, before: string, trimLeft: string, expr: string, trimRight: string, after: string) => {
    const value = evaluate(expr, scope, where);
    return `${trimLeft ? "" : before}${value}${trimRight ? "" : after}`;
  });
}

function lookup(path: string, scope: Record<string, unknown>, where: string): unknown {
  if (!/^(\.[A-Za-z_][A-Za-z0-9_]*)+$/.test(path)) throw new Error(`${where}: unsupported expression ${JSON.stringify(path)}`);
  let current: unknown = scope;
  for (const key of path.slice(1).split(".")) {
    if (typeof current !== "object" || current === null || !(key in current)) throw new Error(`${where}: no value at ${path}`);
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

const indentLines = (text: string, n: number) =>
  text
    .split("\n")
    .map((line) => (line === "" ? line : " ".repeat(n) + line))
    .join("\n");

function evaluate(expr: string, scope: Record<string, unknown>, where: string): string {
  const stages = expr.split("|").map((s) => s.trim().split(/\s+/));
  // The first stage is a path, or a function applied to a path (`toYaml .Values.x`).
  const [head, ...rest] = stages;
  let value: unknown = head!.length === 1 ? lookup(head![0]!, scope, where) : undefined;
  if (head!.length === 2) value = apply(head![0]!, [], lookup(head![1]!, scope, where), where);
  else if (head!.length !== 1) throw new Error(`${where}: unsupported expression ${JSON.stringify(expr)}`);
  for (const [fn, ...args] of rest) value = apply(fn!, args, value, where);
  if (typeof value === "object" && value !== null) throw new Error(`${where}: ${expr} renders an object without toYaml`);
  return String(value);
}

function apply(fn: string, args: string[], value: unknown, where: string): unknown {
  const count = () => {
    const n = Number(args[0]);
    if (args.length !== 1 || !Number.isInteger(n)) throw new Error(`${where}: ${fn} takes one integer`);
    return n;
  };
  switch (fn) {
    case "quote":
      return JSON.stringify(String(value));
    case "toYaml":
      return stringify(value).replace(/\n$/, "");
    case "nindent":
      return `\n${indentLines(String(value), count())}`;
    case "indent":
      return indentLines(String(value), count());
    default:
      throw new Error(`${where}: unsupported function ${fn}`);
  }
}
