/**
 * A loopback OIDC-style token issuer for tests of agents calling agents (spec 5.6, 5.8): it serves
 * its JWK set at /jwks, mints user tokens, and performs RFC 8693 token exchanges at /token,
 * writing the exchanging client as the actor (`act.sub`, the earlier chain nested under it).
 * Every exchange request is recorded (form fields and client), never answered for a client whose
 * secret is wrong.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWTPayload } from "jose";

export interface ExchangeRecord {
  readonly client: string;
  readonly form: Record<string, string>;
}

export interface TokenIssuer {
  readonly origin: string;
  readonly issuer: string;
  readonly jwksUrl: string;
  readonly tokenUrl: string;
  /** Client id -> secret of the agents allowed to exchange. */
  readonly clients: Map<string, string>;
  readonly exchanges: ExchangeRecord[];
  /** A user's token for `audience` (no actor: the person signs in directly). */
  userToken(sub: string, audience: string, ttlS?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startTokenIssuer(): Promise<TokenIssuer> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  const clients = new Map<string, string>();
  const exchanges: ExchangeRecord[] = [];
  let origin = "";

  const sign = (payload: JWTPayload, audience: string, ttlS: number) =>
    new SignJWT(payload).setProtectedHeader({ alg: "ES256", kid: "k1" }).setIssuer(origin).setAudience(audience).setIssuedAt().setExpirationTime(`${ttlS}s`).sign(privateKey);

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(body));
        };
        if (req.method === "GET" && req.url === "/jwks") return send(200, { keys: [jwk] });
        if (req.method !== "POST" || req.url !== "/token") return send(404, { error: "not_found" });
        const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString("utf8")));
        let client = form.client_id ?? "";
        let secret = form.client_secret ?? "";
        const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? "");
        if (basic) {
          const [id, pw] = Buffer.from(basic[1]!, "base64").toString("utf8").split(":");
          client = decodeURIComponent(id ?? "");
          secret = decodeURIComponent(pw ?? "");
        }
        exchanges.push({ client, form });
        if (!clients.has(client) || clients.get(client) !== secret) return send(401, { error: "invalid_client" });
        if (form.grant_type !== "urn:ietf:params:oauth:grant-type:token-exchange" || !form.audience) return send(400, { error: "invalid_request" });
        let subject: JWTPayload;
        try {
          subject = (await jwtVerify(form.subject_token ?? "", publicKey, { issuer: origin })).payload;
        } catch {
          return send(400, { error: "invalid_grant" });
        }
        const act = { sub: client, ...(subject.act ? { act: subject.act } : {}) };
        const token = await sign({ sub: subject.sub, act, ...(form.scope ? { scope: form.scope } : {}) }, form.audience, 300);
        send(200, { access_token: token, issued_token_type: "urn:ietf:params:oauth:token-type:access_token", token_type: "Bearer", expires_in: 300 });
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    origin,
    issuer: origin,
    jwksUrl: `${origin}/jwks`,
    tokenUrl: `${origin}/token`,
    clients,
    exchanges,
    userToken: (sub, audience, ttlS = 600) => sign({ sub }, audience, ttlS),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
