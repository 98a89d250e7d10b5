/**
 * The agent card (spec 4.5): JSON-RPC at `APP_URL/a2a/<name>`, protocol version 1.0 (the same
 * URL also serves 0.3, listed too so clients of both find it), streaming, one chat skill, the
 * auth policy's security scheme, JSON output with a response schema, and the origin extension.
 */
import type { JsonValue } from "../json.js";
import type { Settings } from "../settings/parse.js";
import { ORIGIN_EXTENSION_URI } from "./origin.js";

/**
 * `requestOrigin`: the origin the request came to, given only where the card follows the request;
 * APP_URL wins over it, and without either the card names `http://HOST:PORT` (spec 4.5).
 */
export function agentCard(settings: Settings, options: { structured: boolean; auth: string }, requestOrigin?: string): Record<string, JsonValue> {
  const url = a2aUrl(settings, requestOrigin);
  const description = settings.A2A_DESCRIPTION ?? "A conversational agent with tools; it acts on APIs only as its policy allows.";
  return {
    name: settings.A2A_NAME,
    description,
    version: settings.AGENT_VERSION,
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [
        {
          uri: ORIGIN_EXTENSION_URI,
          required: false,
          description: "A delegated caller may forward the user's own words as metadata {origin: {text, truncated, hops}}.",
        },
      ],
    },
    securitySchemes: {
      bearer: { httpAuthSecurityScheme: { scheme: "Bearer", ...(options.auth === "jwt" ? { bearerFormat: "JWT" } : {}) } },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ["text/plain", "application/json"],
    defaultOutputModes: options.structured ? ["application/json", "text/plain"] : ["text/plain"],
    skills: [{ id: "chat", name: "Chat", description, tags: ["chat"], ...(options.structured ? { outputModes: ["application/json"] } : {}) }],
  };
}

/** This agent's JSON-RPC URL: `APP_URL` (else the request's origin, else `http://HOST:PORT`) + `/a2a/<A2A_NAME>`. */
export function a2aUrl(settings: Pick<Settings, "HOST" | "PORT" | "APP_URL" | "A2A_NAME">, requestOrigin?: string): string {
  const host = settings.HOST.includes(":") ? `[${settings.HOST}]` : settings.HOST;
  const base = (settings.APP_URL ?? requestOrigin ?? `http://${host}:${settings.PORT}`).replace(/\/+$/, "");
  return `${base}/a2a/${settings.A2A_NAME}`;
}
