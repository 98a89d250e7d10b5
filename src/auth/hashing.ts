/**
 * Hashing on WebCrypto. Principal ids are hashed before they reach logs, run records and thread
 * rows: a SHA-256 prefix, or HMAC-SHA256 when PRINCIPAL_HASH_SALT is set (spec 2.1).
 */

const encoder = new TextEncoder();

function toHex(buf: ArrayBuffer, bytes = buf.byteLength): string {
  const view = new Uint8Array(buf, 0, bytes);
  let out = "";
  for (const b of view) out += b.toString(16).padStart(2, "0");
  return out;
}

export async function sha256Hex(text: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

export type PrincipalHasher = (id: string) => Promise<string>;

/** 32 hex characters (128 bits) of SHA-256 or HMAC-SHA256. Results are memoized per id. */
export function createPrincipalHasher(salt: string | undefined): PrincipalHasher {
  const cache = new Map<string, string>();
  const key = salt
    ? crypto.subtle.importKey("raw", encoder.encode(salt), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
    : undefined;
  return async (id) => {
    const hit = cache.get(id);
    if (hit !== undefined) return hit;
    const data = encoder.encode(id);
    const digest = key ? await crypto.subtle.sign("HMAC", await key, data) : await crypto.subtle.digest("SHA-256", data);
    const hash = toHex(digest, 16);
    if (cache.size >= 10_000) cache.clear();
    cache.set(id, hash);
    return hash;
  };
}

/**
 * A secret compared in constant time: the loop always runs over the whole expected secret and
 * folds a length mismatch into the result, so the time depends on neither where the presented
 * value differs nor whether its length matches. Synchronous: no crypto round trip per request.
 * Compared by UTF-16 code units, with no encoding made per request: two texts are equal exactly
 * when their units are (an encoder would also take two different lone surrogates for one).
 */
export function secretMatcher(secret: string): (presented: string) => boolean {
  return (presented) => {
    let diff = presented.length ^ secret.length;
    for (let i = 0; i < secret.length; i++) diff |= secret.charCodeAt(i) ^ (i < presented.length ? presented.charCodeAt(i) : 0);
    return diff === 0;
  };
}
