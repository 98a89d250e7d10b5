/**
 * Reads a JSON request body without ever buffering past MAX_REQUEST_BYTES: a declared length
 * over the cap is refused before reading, and a streamed body is cut as soon as it passes it.
 */
import { payloadTooLarge, unprocessable } from "../problems.js";
import { readCapped } from "../streams.js";

const decoder = new TextDecoder("utf-8", { fatal: true });

export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes) {
    await request.body?.cancel().catch(() => {});
    throw payloadTooLarge(maxBytes);
  }
  // A declared length is enforced by the HTTP layer, so the body can be read in one piece (on
  // @hono/node-server this also avoids building a full Request with web streams); a chunked
  // body is read as a stream and cut at the cap.
  const bytes = declared !== null ? new Uint8Array(await request.arrayBuffer()) : await readCapped(request.body, maxBytes, () => payloadTooLarge(maxBytes));
  if (bytes.byteLength > maxBytes) throw payloadTooLarge(maxBytes);
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw unprocessable([{ type: "invalid_unicode", loc: ["body"], msg: "Body is not valid UTF-8", ctx: {} }]);
  }
  if (text.trim() === "")
    throw unprocessable([{ type: "missing", loc: ["body"], msg: "Field required", ctx: {} }]);
  try {
    return JSON.parse(text);
  } catch {
    throw unprocessable([{ type: "json_invalid", loc: ["body"], msg: "JSON decode error", ctx: {} }]);
  }
}
