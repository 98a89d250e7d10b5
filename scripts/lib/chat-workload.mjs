// The /chat workload of the chat benchmarks (bench-chat.mjs, profile-chat.mjs, ab-builds.mjs):
// "echo: " + MESSAGE is 16 * 18 characters, which the fake model answers in 18 deltas, so an
// answer is 20 SSE events (message.start, 18 message.delta, message.end).

export const DELTAS = 18;
export const EXPECTED_EVENTS = DELTAS + 2;
export const MESSAGE = "The quick brown fox jumps over the lazy dog. ".repeat(7).slice(0, 16 * DELTAS - "echo: ".length);
export const BODY = JSON.stringify({ message: MESSAGE });
export const HEADERS = { authorization: "Bearer bench", "content-type": "application/json" };
/** The service's settings in every chat benchmark: the fake model, quiet logs. */
export const SERVICE_ENV = { API_KEY: "bench", MODEL_PROVIDER: "fake", MODEL_NAME: "fake", LOG_LEVEL: "WARNING", RUN_TIMEOUT_S: "600" };
/** A waiting conversation: a /chat whose fake model sleeps two minutes before it answers. */
export const IDLE_BODY = JSON.stringify({ message: "/sleep 120000\nidle" });
export const IDLE_REQUEST = { headers: HEADERS, body: IDLE_BODY };
