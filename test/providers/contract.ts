/**
 * What every model provider must do, as one suite each provider runs against its real SDK (or
 * wire format) and a loopback upstream (support.ts): stream a text turn and a tool-call turn,
 * retry as MODEL_MAX_RETRIES says, give up and time out (MODEL_TIMEOUT_S) with a ModelError that
 * names the status or kind and never the body, name refused connections and errors in the
 * stream, let cancellation reach the request, and take nothing from process.env.
 */
import type { ServerResponse } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Model, ModelEvent, ProviderOptions } from "../../src/agent/model.js";
import { hasCode } from "../../src/errors.js";
import type { Message } from "../../src/store/ports.js";
import {
  abortAtFirstEvent,
  collect,
  conversation,
  failure,
  request,
  sse,
  sseLate,
  sseOpen,
  sseSpaced,
  type Recorded,
  type Upstream,
  within,
} from "./support.js";

export interface ProviderFixture {
  /** `Model.provider`, and how every ModelError message starts: "<provider> request failed: …". */
  readonly provider: string;
  /** `Model.name` of the models `model()` makes. */
  readonly name: string;
  readonly structuredOutput: boolean;
  /** The file's loopback upstream (loopbackUpstream), answering at `upstream.baseURL`. */
  readonly upstream: Upstream;
  /**
   * The model as the settings select it (MODEL_MAX_RETRIES is `maxRetries`, MODEL_TIMEOUT_S is
   * `timeoutMs`): key, `upstream.baseURL`, `upstream.fetch` and maxRetries 0 unless overridden.
   */
  model(overrides?: Partial<ProviderOptions>): Model;
  /** The path (and query) of every model request, as the upstream sees it. */
  readonly path: string;
  /** The header that carries the key, and its value. */
  readonly credential: readonly [header: string, value: string];
  /** Where the request body carries the system prompt (undefined: not sent). */
  sentSystem(body: any): unknown;
  /** Where the request body carries the conversation. */
  sentMessages(body: any): unknown;
  /** What `sentMessages` must be for HISTORY (below) in this provider's shape. */
  readonly sentHistory: unknown;

  /** A whole text turn: one text event per delta, then usage 11 in / 7 out. */
  text(deltas: string[]): string[];
  /** The start of a text turn up to one text delta "first"; the rest never comes. */
  textStart(): string[];
  /**
   * A whole turn calling get_weather {"city":"Oslo"} then get_time {"zone":"UTC"} with no text,
   * the arguments in pieces where the wire format streams them; usage 20 in / 9 out.
   */
  toolCalls(): string[];
  /** The ids `toolCalls()` carries; undefined where the provider makes ids up. */
  readonly toolCallIds?: readonly [string, string];
  /** The JSON body of an error answer with this status, carrying "secret-body-text". */
  errorBody(status: number): unknown;
  /** A stream that starts, then carries an error event with "secret-body-text". */
  errorInStream(): string[];
  /** The kind the ModelError names for `errorInStream()`; "error in stream" unless said. */
  readonly errorInStreamKind?: string;
  /** A stream whose event is not JSON. */
  malformed(): string[];

  /** The provider's variables (key, base URL, headers, logging); each value a request could carry mentions "from-env". */
  readonly env: Readonly<Record<string, string>>;
  /** Headers the SDK would add from `env`; none may be sent. */
  readonly envHeaders?: readonly string[];
  /** The URL of a model request without a base URL; undefined where a base URL is required. */
  readonly defaultURL?: string;
}

const { user, assistantCalls, results } = conversation(["call_a", "call_b"], "Checking.");

/**
 * The history every provider sends back: the user's question; an assistant turn "Checking." that
 * calls get_weather (call_a) and get_time (call_b); their results "sunny" and "boom" (an error);
 * then "And tomorrow?", an empty assistant turn, "No idea." and "Thanks.".
 */
const HISTORY: readonly Message[] = [
  user,
  assistantCalls,
  ...results,
  { id: "m5", role: "user", content: "And tomorrow?" },
  { id: "m6", role: "assistant", content: "" },
  { id: "m7", role: "assistant", content: "No idea." },
  { id: "m8", role: "user", content: "Thanks." },
];

export function describeProviderContract(name: string, fixture: ProviderFixture): void {
  const { upstream, model, provider } = fixture;
  const { requests } = upstream;
  const failed = (kind: string) => `${provider} request failed: ${kind}`;
  const [keyHeader, keyValue] = fixture.credential;

  /** An error answer the SDKs retry at once (Anthropic's reads a zero delay as "default backoff"). */
  const failWith = (res: ServerResponse, status: number) => {
    res.writeHead(status, { "content-type": "application/json", "retry-after-ms": "1", "retry-after": "0" });
    res.end(JSON.stringify(fixture.errorBody(status)));
  };

  describe(`${name}: provider contract`, () => {
    afterEach(() => {
      vi.unstubAllEnvs();
      vi.restoreAllMocks();
    });

    describe("turns", () => {
      it(`streams a text turn in several deltas, then usage: one POST to ${fixture.path} with the key`, async () => {
        upstream.handler = (_r, res) => sse(res, fixture.text(["Hel", "lo, ", "world"]));
        const m = model();
        expect([m.provider, m.name, m.structuredOutput]).toEqual([provider, fixture.name, fixture.structuredOutput]);
        const events = await collect(m.stream(request([user])));
        expect(events).toEqual([
          { type: "text", text: "Hel" },
          { type: "text", text: "lo, " },
          { type: "text", text: "world" },
          { type: "usage", input_tokens: 11, output_tokens: 7 },
        ]);
        expect(requests).toHaveLength(1);
        expect(requests[0]!.method).toBe("POST");
        expect(requests[0]!.path).toBe(fixture.path);
        expect(requests[0]!.headers[keyHeader]).toBe(keyValue);
      });

      it("sends the system prompt and the tools, and omits both when there are none", async () => {
        upstream.handler = (_r, res) => sse(res, fixture.text(["ok"]));
        await collect(model().stream(request([user])));
        await collect(model().stream(request([user], { tools: [], system: "" })));
        const [full, bare] = requests.map((r) => r.body);
        expect(fixture.sentSystem(full)).toBe("You are a test agent.");
        expect(full).toHaveProperty("tools");
        expect(fixture.sentSystem(bare)).toBeUndefined();
        expect(bare).not.toHaveProperty("tools");
      });

      it("sends the history back: tool calls, their results after them (one an error), then later turns", async () => {
        upstream.handler = (_r, res) => sse(res, fixture.text(["Sunny; the clock failed."]));
        const events = await collect(model().stream(request([...HISTORY])));
        expect(events[0]).toEqual({ type: "text", text: "Sunny; the clock failed." });
        expect(fixture.sentMessages(requests[0]!.body)).toEqual(fixture.sentHistory);
      });

      it("gathers parallel tool calls whose arguments arrive in pieces, then usage", async () => {
        upstream.handler = (_r, res) => sse(res, fixture.toolCalls());
        const events = await collect(model().stream(request([user])));
        const [a, b] = fixture.toolCallIds ?? [expect.any(String), expect.any(String)];
        expect(events).toEqual([
          { type: "tool_call", id: a, name: "get_weather", arguments: '{"city":"Oslo"}' },
          { type: "tool_call", id: b, name: "get_time", arguments: '{"zone":"UTC"}' },
          { type: "usage", input_tokens: 20, output_tokens: 9 },
        ]);
        const ids = events.flatMap((e) => (e.type === "tool_call" ? [e.id] : []));
        expect(ids.every((id) => id.length > 0)).toBe(true);
        expect(new Set(ids).size).toBe(2);
      });
    });

    describe("retries (MODEL_MAX_RETRIES) and failures", () => {
      it("retries a 429 and a 500, then succeeds on the third attempt, with the key every time", async () => {
        upstream.handler = (_r, res, attempt) => (attempt < 3 ? failWith(res, attempt === 1 ? 429 : 500) : sse(res, fixture.text(["fine"])));
        const events = await collect(model({ maxRetries: 2 }).stream(request([user])));
        expect(requests).toHaveLength(3);
        expect(events[0]).toEqual({ type: "text", text: "fine" });
        for (const r of requests) expect(r.headers[keyHeader]).toBe(keyValue);
      });

      it("gives up with ModelError after maxRetries + 1 attempts, naming the last status and not the body", async () => {
        upstream.handler = (_r, res, attempt) => failWith(res, [429, 500, 503][attempt - 1] ?? 599);
        const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user]))));
        expect(requests).toHaveLength(3);
        expect(hasCode(error, "model_error")).toBe(true);
        expect(error.message).toBe(failed("status 503"));
        expect(error.message).not.toContain("secret-body-text");
      });

      it("makes one attempt with maxRetries 0", async () => {
        upstream.handler = (_r, res) => failWith(res, 500);
        const error = await failure(collect(model({ maxRetries: 0 }).stream(request([user]))));
        expect(requests).toHaveLength(1);
        expect(error.message).toBe(failed("status 500"));
      });

      it("does not retry a 400", async () => {
        upstream.handler = (_r, res) => failWith(res, 400);
        const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user]))));
        expect(requests).toHaveLength(1);
        expect(hasCode(error, "model_error")).toBe(true);
        expect(error.message).toBe(failed("status 400"));
      });

      it("retries a refused connection, then names it", async () => {
        const refused = upstream.baseURL.replace(/:\d+/, ":1");
        const error = await failure(collect(model({ baseURL: refused, maxRetries: 1 }).stream(request([user]))));
        const url = new URL(refused).origin + fixture.path;
        expect(upstream.fetchedUrls).toEqual([url, url]);
        expect(hasCode(error, "model_error")).toBe(true);
        expect(error.message).toBe(failed("connection error"));
      });

      it("turns an error event in the stream into ModelError, without its text", async () => {
        upstream.handler = (_r, res) => sse(res, fixture.errorInStream());
        const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user]))));
        expect(hasCode(error, "model_error")).toBe(true);
        expect(error.message).toBe(failed(fixture.errorInStreamKind ?? "error in stream"));
        expect(error.message).not.toContain("secret-body-text");
        expect(requests).toHaveLength(1);
      });

      it("turns a malformed event into ModelError", async () => {
        upstream.handler = (_r, res) => sse(res, fixture.malformed());
        const error = await failure(collect(model().stream(request([user]))));
        expect(hasCode(error, "model_error")).toBe(true);
        expect(error.message).toBe(failed("malformed response"));
      });
    });

    describe("timeouts (MODEL_TIMEOUT_S)", () => {
      it("turns a request past the timeout into ModelError and drops the connection", async () => {
        upstream.handler = (_r, res) => sseLate(res, 1500, () => fixture.text(["late"]));
        const started = Date.now();
        const error = await failure(collect(model({ timeoutMs: 200 }).stream(request([user]))));
        expect(Date.now() - started).toBeLessThan(1400);
        expect(hasCode(error, "model_error")).toBe(true);
        expect(error.message).toBe(failed("timeout"));
        expect(requests).toHaveLength(1);
        expect(await within(requests[0]!.closed.then(() => "closed"), 1000)).toBe("closed");
      });

      it("times out a stream that stalls between events, and drops the connection", async () => {
        upstream.handler = (_r, res) => sseOpen(res, fixture.textStart());
        const controller = new AbortController();
        const events: ModelEvent[] = [];
        const outcome = failure(
          (async () => {
            for await (const e of model({ timeoutMs: 200 }).stream(request([user], { signal: controller.signal }))) events.push(e);
          })(),
        );
        outcome.catch(() => {});
        const error = await within(outcome, 1000);
        const closed = await within(requests[0]!.closed.then(() => "closed"), 1000);
        // Frees a stream that was never timed out.
        controller.abort(new Error("test over"));
        expect(events).toEqual([{ type: "text", text: "first" }]);
        expect(requests).toHaveLength(1);
        expect(error && hasCode(error, "model_error")).toBe(true);
        expect(error?.message).toBe(failed("timeout"));
        expect(closed).toBe("closed");
      });

      it("lets a stream run past the timeout while its events keep coming within it", async () => {
        const deltas = [..."0123456789"];
        // A frame every 50 ms: every event (keep-alives that are not events included) well within 400 ms.
        upstream.handler = (_r, res) => sseSpaced(res, fixture.text(deltas), 50);
        const started = Date.now();
        const events = await collect(model({ timeoutMs: 400 }).stream(request([user])));
        expect(Date.now() - started).toBeGreaterThan(400);
        expect(events.map((e) => (e.type === "text" ? e.text : e.type))).toEqual([...deltas, "usage"]);
      });
    });

    describe("aborts", () => {
      it("rethrows the signal's reason when the run is aborted mid-stream, and the request is dropped", async () => {
        const controller = new AbortController();
        // The rest never comes; the client aborts.
        upstream.handler = (_r, res) => sseOpen(res, fixture.textStart());
        const reason = new Error("run cancelled");
        const { events, error } = await abortAtFirstEvent(model().stream(request([user], { signal: controller.signal })), controller, reason);
        expect(events).toEqual([{ type: "text", text: "first" }]);
        expect(error).toBe(reason);
        expect(requests).toHaveLength(1);
        expect(await within(requests[0]!.closed.then(() => "closed"), 1000)).toBe("closed");
      });

      it("rethrows the reason of a signal aborted before the request, sending nothing", async () => {
        upstream.handler = (_r, res) => sse(res, fixture.text(["never"]));
        const controller = new AbortController();
        const reason = new Error("already cancelled");
        controller.abort(reason);
        const error = await failure(collect(model().stream(request([user], { signal: controller.signal }))));
        expect(error).toBe(reason);
        expect(requests).toHaveLength(0);
      });

      it("rethrows the signal's reason during a retry backoff, at once", async () => {
        const controller = new AbortController();
        const reason = new Error("run cancelled");
        upstream.handler = (_r, res) => {
          res.writeHead(503, { "retry-after": "2" });
          res.end();
          setTimeout(() => controller.abort(reason), 50);
        };
        const started = Date.now();
        const error = await failure(collect(model({ maxRetries: 2 }).stream(request([user], { signal: controller.signal }))));
        expect(error).toBe(reason);
        expect(requests).toHaveLength(1);
        expect(Date.now() - started).toBeLessThan(1000);
      });
    });

    describe("the environment", () => {
      const stubEnv = () => {
        for (const [variable, value] of Object.entries(fixture.env)) vi.stubEnv(variable, value);
      };

      it("ignores the provider's variables when the values are given, and logs nothing", async () => {
        stubEnv();
        const logged = vi.spyOn(console, "log");
        const debug = vi.spyOn(console, "debug");
        upstream.handler = (_r, res) => sse(res, fixture.text(["ok"]));
        expect(await collect(model().stream(request([user])))).toHaveLength(2);
        expect(requests).toHaveLength(1);
        const headers: Recorded["headers"] = requests[0]!.headers;
        expect(headers[keyHeader]).toBe(keyValue);
        expect(headers).not.toHaveProperty("x-from-env");
        for (const header of fixture.envHeaders ?? []) expect(headers).not.toHaveProperty(header);
        expect(JSON.stringify(headers)).not.toContain("from-env");
        expect(logged).not.toHaveBeenCalled();
        expect(debug).not.toHaveBeenCalled();
      });

      if (fixture.defaultURL !== undefined) {
        const defaultURL = fixture.defaultURL;
        it(`without a base URL goes to ${new URL(defaultURL).host}, not to the environment's (the transport refuses it)`, async () => {
          stubEnv();
          const seen: string[] = [];
          const refuse: typeof fetch = async (input) => {
            seen.push(input instanceof Request ? input.url : String(input));
            throw new TypeError("offline");
          };
          const error = await failure(collect(model({ baseURL: undefined, fetch: refuse }).stream(request([user]))));
          expect(seen).toEqual([defaultURL]);
          expect(hasCode(error, "model_error")).toBe(true);
          expect(error.message).toBe(failed("connection error"));
        });
      }
    });
  });
}
