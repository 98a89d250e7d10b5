/**
 * The evaluation grader behind `npm run eval`: the model that grades answers, built like the
 * agent's from the JUDGE_* settings (spec 2.10 calls it the evaluation judge; here it is the
 * grader, so it is not confused with the outbound policy's judge, src/policy/judge.ts), each
 * defaulting to the agent's value, and `gradeAnswer`, which asks it for a score.
 * Web-standard only: nothing here needs Node.
 */
import type { Model, ModelRequest, ProviderOptions } from "../agent/model.js";
import { buildModel, KEY_VARIABLE } from "../agent/providers/index.js";
import { ConfigurationError } from "../errors.js";
import type { Settings } from "../settings/parse.js";

const openaiLike = (p: string) => p === "openai" || p === "openai-compatible";

/**
 * The grading model. JUDGE_PROVIDER falls back to MODEL_PROVIDER, JUDGE_MODEL_NAME to MODEL_NAME,
 * JUDGE_BASE_URL to OPENAI_BASE_URL (openai and openai-compatible), JUDGE_API_KEY to the judge
 * provider's key variable, JUDGE_REASONING_EFFORT and JUDGE_USE_RESPONSES_API to the agent's
 * (only for an openai or openai-compatible provider). Throws ConfigurationError naming the setting
 * that is missing.
 */
export function createGrader(settings: Settings, fetchFn: typeof fetch): Model {
  const provider = settings.JUDGE_PROVIDER ?? settings.MODEL_PROVIDER;
  const name = settings.JUDGE_MODEL_NAME ?? settings.MODEL_NAME;
  if (provider === "fake") return buildModel("fake", { model: name ?? "fake", apiKey: "", maxRetries: 0, fetch: fetchFn });
  if (!name) throw new ConfigurationError("The judge is not configured: JUDGE_MODEL_NAME (or MODEL_NAME) is not set.");
  const keyVariable = KEY_VARIABLE[provider];
  const apiKey = settings.JUDGE_API_KEY ?? settings[keyVariable];
  if (!apiKey) throw new ConfigurationError(`The judge is not configured: JUDGE_API_KEY (or ${keyVariable}) is not set.`);
  const openai = openaiLike(provider);
  const baseURL = settings.JUDGE_BASE_URL ?? (openai ? settings.OPENAI_BASE_URL : undefined);
  if (provider === "openai-compatible" && !baseURL)
    throw new ConfigurationError("The judge is not configured: JUDGE_BASE_URL (or OPENAI_BASE_URL) is not set.");
  const options: ProviderOptions = {
    model: name,
    apiKey,
    baseURL,
    timeoutMs: settings.MODEL_TIMEOUT_S > 0 ? settings.MODEL_TIMEOUT_S * 1000 : undefined,
    maxRetries: settings.MODEL_MAX_RETRIES,
    reasoningEffort: openai ? (settings.JUDGE_REASONING_EFFORT ?? settings.MODEL_REASONING_EFFORT) : undefined,
    useResponsesApi: openai ? (settings.JUDGE_USE_RESPONSES_API ?? settings.MODEL_USE_RESPONSES_API) : undefined,
    fetch: fetchFn,
  };
  return buildModel(provider, options);
}

export interface GradeInput {
  /** The conversation the answer closes (the user's turns, earlier answers). */
  readonly question: string;
  readonly answer: string;
  /** What a good answer does; without it the grader judges the answer on its own merits. */
  readonly expectation?: string | undefined;
  /**
   * Directive lines for the fake model only (e.g. `/json {"score": 1, "reason": "..."}`),
   * appended to the grading prompt as they are; never sent to a real provider.
   */
  readonly fakeDirective?: string | undefined;
}

export interface Grade {
  /** 0 to 1. */
  readonly score: number;
  readonly verdict: "pass" | "fail";
  readonly reason: string;
}

export const PASS_SCORE = 0.5;

export const GRADER_SYSTEM_PROMPT =
  "You grade the final answer an AI assistant gave in a conversation. " +
  "Answer ONLY a JSON object, nothing before or after it: " +
  '{"score": <number from 0 to 1>, "reason": "<one short sentence>"}. ' +
  "1 means the answer fully does what the expectation says (or, without one, answers the user well); 0 means it does not.";

const GRADE_SCHEMA: NonNullable<ModelRequest["responseSchema"]> = {
  name: "grade",
  schema: {
    type: "object",
    properties: {
      score: { type: "number", minimum: 0, maximum: 1 },
      reason: { type: "string" },
    },
    required: ["score", "reason"],
    additionalProperties: false,
  },
};

/**
 * The grading prompt. The conversation, answer and expectation go in as JSON strings: no line of
 * theirs can read as a directive, and no JSON object inside them survives as one (their quotes
 * are escaped), so a grader that echoes the prompt never yields a grade.
 */
export function gradingPrompt(input: GradeInput, fake: boolean): string {
  const parts = [
    "Grade the assistant's final answer. Each part below is a JSON string.",
    "",
    "Conversation:",
    JSON.stringify(input.question),
    "",
    "Final answer:",
    JSON.stringify(input.answer),
  ];
  if (input.expectation) parts.push("", "Expectation (what a good answer does):", JSON.stringify(input.expectation));
  parts.push("", 'Answer only the JSON object {"score": ..., "reason": ...}.');
  if (fake && input.fakeDirective) parts.push(input.fakeDirective);
  return parts.join("\n");
}

/** Asks the grader for a grade. Model errors are thrown; an answer that is not JSON is a fail. */
export async function gradeAnswer(grader: Model, input: GradeInput, signal: AbortSignal): Promise<Grade> {
  const request: ModelRequest = {
    system: GRADER_SYSTEM_PROMPT,
    messages: [{ id: "grade-question", role: "user", content: gradingPrompt(input, grader.provider === "fake") }],
    tools: [],
    signal,
    ...(grader.structuredOutput ? { responseSchema: GRADE_SCHEMA } : {}),
  };
  let text = "";
  for await (const event of grader.stream(request)) if (event.type === "text") text += event.text;
  return parseGrade(text);
}

/**
 * Reads the first JSON object in the grader's text that has a `score` (text around it and objects
 * without one are skipped); score ≥ 0.5 passes. No such object: score 0, fail.
 */
export function parseGrade(text: string): Grade {
  const object = firstJsonObject(text, (o) => "score" in o);
  if (!object) return { score: 0, verdict: "fail", reason: "the judge did not answer JSON" };
  const raw = typeof object.score === "string" && object.score.trim() !== "" ? Number(object.score) : object.score;
  const reason = typeof object.reason === "string" ? object.reason : "";
  if (typeof raw !== "number" || !Number.isFinite(raw)) return { score: 0, verdict: "fail", reason: "the judge's score is not a number" };
  const score = Math.min(1, Math.max(0, raw));
  return { score, verdict: score >= PASS_SCORE ? "pass" : "fail", reason };
}

function firstJsonObject(text: string, wanted: (o: Record<string, unknown>) => boolean): Record<string, unknown> | undefined {
  for (let start = text.indexOf("{"); start >= 0; start = text.indexOf("{", start + 1)) {
    const end = matchingBrace(text, start);
    if (end < 0) continue;
    try {
      const value: unknown = JSON.parse(text.slice(start, end + 1));
      if (value && typeof value === "object" && !Array.isArray(value) && wanted(value as Record<string, unknown>)) return value as Record<string, unknown>;
    } catch {
      // not JSON here; try the next brace
    }
  }
  return undefined;
}

/** The index of the brace closing the one at `start`, skipping strings; -1 when there is none. */
function matchingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i;
  }
  return -1;
}
