/**
 * The attribute names our spans use, in one table: the OpenTelemetry HTTP and GenAI semantic
 * conventions where they name the thing (CONTRACT 7), `agent.*` for what only this service has.
 * The capture filter (capture.ts) and the vendor exporter read the same table, so a name added
 * here is classified once: structure (exported under TRACE_CAPTURE=metadata) or content
 * (exported only under `full`).
 */

export const ATTR = {
  // HTTP (server and client spans)
  httpMethod: "http.request.method",
  httpRoute: "http.route",
  httpStatus: "http.response.status_code",
  urlPath: "url.path",
  urlTemplate: "url.template",
  urlScheme: "url.scheme",
  serverAddress: "server.address",
  serverPort: "server.port",
  errorType: "error.type",
  // GenAI
  operation: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  agentName: "gen_ai.agent.name",
  agentVersion: "gen_ai.agent.version",
  conversationId: "gen_ai.conversation.id",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  finishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  toolName: "gen_ai.tool.name",
  toolType: "gen_ai.tool.type",
  toolCallId: "gen_ai.tool.call.id",
  // this service
  runId: "agent.run.id",
  runStatus: "agent.run.status",
  principalHash: "agent.principal.hash",
  actor: "agent.actor",
  version: "agent.version",
  apiName: "agent.api.name",
  apiOperation: "agent.api.operation",
  approvalId: "agent.approval.id",
  approvalDecision: "agent.approval.decision",
  exchangeOutcome: "agent.token_exchange.outcome",
  linkReason: "agent.link.reason",
  // content: exported only under TRACE_CAPTURE=full
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  systemInstructions: "gen_ai.system_instructions",
  toolArguments: "gen_ai.tool.call.arguments",
  toolResult: "gen_ai.tool.call.result",
  chatMetadata: "agent.chat.metadata",
  errorMessage: "agent.error.message",
  exceptionMessage: "exception.message",
  exceptionStacktrace: "exception.stacktrace",
} as const;

/**
 * Content: what users said and what the model and tools made of it (spec 6.4). Exact names plus
 * the prefixes older GenAI conventions used (`gen_ai.prompt.0.content`, `gen_ai.completion.*`),
 * so a library that still writes them is filtered too.
 */
export const CONTENT_KEYS: ReadonlySet<string> = new Set([
  ATTR.inputMessages,
  ATTR.outputMessages,
  ATTR.systemInstructions,
  ATTR.toolArguments,
  ATTR.toolResult,
  ATTR.chatMetadata,
  ATTR.errorMessage,
  ATTR.exceptionMessage,
  ATTR.exceptionStacktrace,
]);
const CONTENT_PREFIXES = ["gen_ai.prompt", "gen_ai.completion", "gen_ai.input.", "gen_ai.output.", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "agent.content."];

export function isContentKey(key: string): boolean {
  if (CONTENT_KEYS.has(key)) return true;
  for (const prefix of CONTENT_PREFIXES) if (key.startsWith(prefix)) return true;
  return false;
}

/**
 * Never exported, in either mode: credentials (header attributes such as
 * `http.request.header.authorization`, anything named like a key, token, secret, password or
 * cookie) and the parts of a URL that carry the query (`url.full`, `url.query`). The token
 * counts `gen_ai.usage.*_tokens` are not credentials: only whole name segments match.
 */
const CREDENTIAL_KEY = /(^|[._-])(authorization|proxy-authorization|cookie|set-cookie|password|passwd|secret|client_secret|api[_-]?key|x-api-key|access[_-]?token|refresh[_-]?token|id[_-]?token|bearer|credentials?)($|[._-])/i;
const URL_WITH_QUERY = new Set(["url.full", "url.query", "http.url", "http.target"]);

export function isForbiddenKey(key: string): boolean {
  return URL_WITH_QUERY.has(key) || CREDENTIAL_KEY.test(key);
}
