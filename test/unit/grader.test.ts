/**
 * The evaluation grader: createGrader's JUDGE_* settings fall back to the agent's, gradeAnswer
 * reads the first JSON object of the grader's answer (score ≥ 0.5 passes), and the example
 * response schema uses only the keywords spec 4.1 allows.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { createGrader, gradeAnswer, parseGrade } from "../../src/tooling/grader.js";
import type { Model, ModelEvent, ModelRequest } from "../../src/agent/model.js";
import { schemaProblems } from "../../src/agent/structured.js";
import { parseSettings } from "../../src/settings/parse.js";

/** A fetch that must never be called. */
const noFetch: typeof fetch = async () => {
  throw new Error("the grader must not fetch here");
};

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected an error, nothing was thrown");
}

/** A model that answers `text` and records the request. */
function scripted(text: string, structuredOutput = false): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    provider: "scripted",
    name: "scripted",
    structuredOutput,
    requests,
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      requests.push(request);
      yield { type: "text", text };
    },
  };
}

const signal = () => new AbortController().signal;

describe("createGrader", () => {
  it("defaults to the agent's provider and model name", () => {
    const grader = createGrader(parseSettings({ MODEL_PROVIDER: "fake", MODEL_NAME: "fake-agent" }), noFetch);
    expect(grader.provider).toBe("fake");
    expect(grader.name).toBe("fake-agent");
  });

  it("takes JUDGE_PROVIDER and JUDGE_MODEL_NAME over the agent's", () => {
    const settings = parseSettings({ MODEL_PROVIDER: "fake", MODEL_NAME: "fake", JUDGE_PROVIDER: "openai", JUDGE_MODEL_NAME: "gpt-judge", JUDGE_API_KEY: "sk-judge" });
    const grader = createGrader(settings, noFetch);
    expect(grader.provider).toBe("openai");
    expect(grader.name).toBe("gpt-judge");
  });

  it("uses the agent's openai model and key when JUDGE_* is unset", () => {
    const grader = createGrader(parseSettings({ MODEL_PROVIDER: "openai", MODEL_NAME: "gpt-agent", OPENAI_API_KEY: "sk-agent" }), noFetch);
    expect(grader.provider).toBe("openai");
    expect(grader.name).toBe("gpt-agent");
  });

  it("names the JUDGE_PROVIDER's key variable when no key is set", () => {
    const error = errorOf(() => createGrader(parseSettings({ MODEL_PROVIDER: "fake", MODEL_NAME: "fake", JUDGE_PROVIDER: "openai" }), noFetch));
    expect(error.message).toContain("OPENAI_API_KEY");
    expect(error.message).toContain("JUDGE_API_KEY");
    const anthropic = errorOf(() => createGrader(parseSettings({ MODEL_PROVIDER: "fake", MODEL_NAME: "fake", JUDGE_PROVIDER: "anthropic" }), noFetch));
    expect(anthropic.message).toContain("ANTHROPIC_API_KEY");
  });

  it("names the model name setting when neither JUDGE_MODEL_NAME nor MODEL_NAME is set", () => {
    const error = errorOf(() => createGrader(parseSettings({ MODEL_PROVIDER: "openai", OPENAI_API_KEY: "sk" }), noFetch));
    expect(error.message).toContain("JUDGE_MODEL_NAME");
    expect(error.message).toContain("MODEL_NAME");
  });

  it("an openai-compatible grader needs a base URL: JUDGE_BASE_URL or OPENAI_BASE_URL", () => {
    const error = errorOf(() => createGrader(parseSettings({ MODEL_PROVIDER: "fake", JUDGE_PROVIDER: "openai-compatible", JUDGE_MODEL_NAME: "m", JUDGE_API_KEY: "k" }), noFetch));
    expect(error.message).toContain("JUDGE_BASE_URL");
  });

  it("sends to OPENAI_BASE_URL with MODEL_API_KEY when the JUDGE_* values are unset", async () => {
    const seen: { url: string; auth: string | null }[] = [];
    const recording: typeof fetch = async (input, init) => {
      const request = new Request(input, init);
      seen.push({ url: request.url, auth: request.headers.get("authorization") });
      return new Response(JSON.stringify({ error: { message: "no" } }), { status: 400, headers: { "content-type": "application/json" } });
    };
    const settings = parseSettings({
      MODEL_PROVIDER: "openai-compatible",
      MODEL_NAME: "local-model",
      MODEL_API_KEY: "local-key",
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      MODEL_MAX_RETRIES: "0",
    });
    const grader = createGrader(settings, recording);
    expect(grader.provider).toBe("openai-compatible");
    await expect(gradeAnswer(grader, { question: "q", answer: "a" }, signal())).rejects.toThrow();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.url.startsWith("http://127.0.0.1:9/v1/")).toBe(true);
    expect(seen[0]!.auth).toBe("Bearer local-key");
  });
});

describe("gradeAnswer", () => {
  it("a score of 0.8 passes with the grader's reason", async () => {
    const grade = await gradeAnswer(scripted('{"score":0.8,"reason":"mostly right"}'), { question: "q", answer: "a" }, signal());
    expect(grade).toEqual({ score: 0.8, verdict: "pass", reason: "mostly right" });
  });

  it("a score of 0.2 fails", async () => {
    const grade = await gradeAnswer(scripted('{"score":0.2}'), { question: "q", answer: "a" }, signal());
    expect(grade.score).toBe(0.2);
    expect(grade.verdict).toBe("fail");
  });

  it("text that is not JSON fails", async () => {
    const grade = await gradeAnswer(scripted("echo: whatever"), { question: "q", answer: "a" }, signal());
    expect(grade).toEqual({ score: 0, verdict: "fail", reason: "the judge did not answer JSON" });
  });

  it("reads the first JSON object in surrounding text, and 0.5 passes", () => {
    expect(parseGrade('Sure. {"score": 0.5, "reason": "a {brace} in a string"} Done.')).toEqual({ score: 0.5, verdict: "pass", reason: "a {brace} in a string" });
    expect(parseGrade('{not json} then {"score": 1}').verdict).toBe("pass");
    expect(parseGrade('{"reason": "no score"}')).toEqual({ score: 0, verdict: "fail", reason: "the judge did not answer JSON" });
    expect(parseGrade('{"score": "high"}')).toEqual({ score: 0, verdict: "fail", reason: "the judge's score is not a number" });
    expect(parseGrade('{"score": 7}').score).toBe(1);
  });

  it("sends the conversation as JSON strings (never a directive line), and the grade schema when the model can", async () => {
    const grader = scripted('{"score":1,"reason":"ok"}', true);
    await gradeAnswer(grader, { question: "/call calculator {}\n/answer 42", answer: "42", expectation: "answers 42", fakeDirective: '/json {"score": 0}' }, signal());
    const prompt = grader.requests[0]!.messages[0]!.content;
    expect(prompt.split("\n").filter((l) => l.startsWith("/"))).toEqual([]);
    expect(prompt).toContain('"answers 42"');
    expect(prompt).not.toContain("/json");
    expect(grader.requests[0]!.responseSchema?.name).toBe("grade");
    expect(grader.requests[0]!.tools).toEqual([]);
  });

  it("the fake grader answers the /json line it is given, and echoes (a fail) without one", async () => {
    const grader = createGrader(parseSettings({ MODEL_PROVIDER: "fake", MODEL_NAME: "fake" }), noFetch);
    const input = { question: "/call calculator {\"expression\": \"6*7\"}", answer: "42", expectation: "answers 42" };
    expect(await gradeAnswer(grader, { ...input, fakeDirective: '/json {"score": 0.9, "reason": "right"}' }, signal())).toEqual({ score: 0.9, verdict: "pass", reason: "right" });
    expect(await gradeAnswer(grader, input, signal())).toEqual({ score: 0, verdict: "fail", reason: "the judge did not answer JSON" });
  });
});

describe("schemas/response-schema.example.json", () => {
  it("uses only the keywords spec 4.1 allows", () => {
    const schema: unknown = JSON.parse(readFileSync(resolve("schemas/response-schema.example.json"), "utf8"));
    expect(schemaProblems(schema)).toEqual([]);
  });
});
