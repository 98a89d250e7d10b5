/**
 * A demonstration tool that needs no network: arithmetic on + - * / % ^ and parentheses,
 * parsed by a small recursive-descent parser (never `eval`, which workerd refuses anyway).
 */
import { defineTool } from "./define.js";

export const calculator = defineTool<{ expression: string }>({
  name: "calculator",
  description: "Evaluate an arithmetic expression with + - * / % ^ and parentheses, e.g. (2 + 3) * 4.",
  parameters: {
    type: "object",
    properties: { expression: { type: "string", minLength: 1, maxLength: 200 } },
    required: ["expression"],
    additionalProperties: false,
  },
  calls: [],
  run: ({ expression }) => String(evaluate(expression)),
});

export function evaluate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|[-+*/%^()]|\S/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = () => tokens[i++];

  const primary = (): number => {
    const t = take();
    if (t === "(") {
      const v = sum();
      if (take() !== ")") throw new Error("missing closing parenthesis");
      return v;
    }
    if (t !== undefined && /^\d/.test(t)) return Number(t);
    throw new Error(t === undefined ? "unexpected end of expression" : "unexpected symbol in expression");
  };
  // `^` binds tighter than unary minus (-2^2 = -4) and is right-associative.
  const power = (): number => {
    const base = primary();
    if (peek() === "^") {
      take();
      return base ** unary();
    }
    return base;
  };
  const unary = (): number => {
    if (peek() === "-") {
      take();
      return -unary();
    }
    if (peek() === "+") {
      take();
      return unary();
    }
    return power();
  };
  const product = (): number => {
    let v = unary();
    for (let op = peek(); op === "*" || op === "/" || op === "%"; op = peek()) {
      take();
      const r = unary();
      if ((op === "/" || op === "%") && r === 0) throw new Error("division by zero");
      v = op === "*" ? v * r : op === "/" ? v / r : v % r;
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    for (let op = peek(); op === "+" || op === "-"; op = peek()) {
      take();
      const r = product();
      v = op === "+" ? v + r : v - r;
    }
    return v;
  };

  const value = sum();
  if (i !== tokens.length) throw new Error("unexpected symbol in expression");
  if (!Number.isFinite(value)) throw new Error("the result is not a finite number");
  return value;
}
