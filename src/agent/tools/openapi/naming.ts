/**
 * Tool names for OpenAPI operations (CONTRACT 7): `<api>_<operationId in snake_case>`, or from
 * the method and path when there is no operationId, always `^[A-Za-z0-9_-]{1,64}$`. A name
 * that would be longer is cut and ends with a short hash of the whole, so two long names that
 * share their first 55 characters still differ.
 */

const MAX = 64;

/** `getOrderByID` -> `get_order_by_id`; `list-orders.v2` -> `list_orders_v2`. */
export function snakeCase(text: string): string {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/[^A-Za-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .toLowerCase();
}

/** `GET /orders/{order_id}/items` -> `get_orders_order_id_items`. */
export function nameFromRoute(method: string, path: string): string {
  const parts = path.split("/").map((segment) => snakeCase(segment.replace(/[{}]/g, ""))).filter((p) => p !== "");
  return [method.toLowerCase(), ...parts].join("_");
}

export function toolName(api: string, method: string, path: string, operationId: string | undefined): string {
  const fromId = operationId === undefined ? "" : snakeCase(operationId);
  const name = `${api}_${fromId || nameFromRoute(method, path)}`;
  if (name.length <= MAX) return name;
  return `${name.slice(0, MAX - 9).replace(/_+$/, "")}_${fnv1a(name)}`;
}

/** 32-bit FNV-1a as 8 hex digits: stable across runs and runtimes, no crypto needed. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}
