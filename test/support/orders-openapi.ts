/**
 * An orders API described twice, as an OpenAPI 3.0 document in JSON and as a 3.1 document in
 * YAML, with the same operations: reads with path and query parameters, a write whose body is a
 * `$ref`, a delete the policy denies, an operation without operationId, and operations with
 * parts no tool can offer (a file upload, a required header, callbacks). `openApiFiles` serves
 * them through the ReadText port, as a runtime without files would.
 */
import type { ReadText } from "../../src/index.js";

const NEW_ORDER_30 = {
  type: "object",
  required: ["item", "quantity"],
  additionalProperties: false,
  discriminator: { propertyName: "item" },
  example: { item: "book", quantity: 1 },
  properties: {
    id: { type: "string", readOnly: true },
    item: { type: "string", minLength: 1, description: "What to order." },
    quantity: { type: "integer", minimum: 0, exclusiveMinimum: true, maximum: 100 },
    note: { type: "string", nullable: true, maxLength: 200, "x-internal": true },
    address: { $ref: "#/components/schemas/Address" },
  },
};

export const ORDERS_30 = JSON.stringify({
  openapi: "3.0.3",
  info: { title: "Orders", version: "1" },
  paths: {
    "/orders": {
      get: {
        operationId: "listOrders",
        summary: "List orders",
        parameters: [
          { name: "status", in: "query", schema: { type: "string", enum: ["open", "shipped"], nullable: true } },
          { name: "tag", in: "query", schema: { type: "array", items: { type: "string" } } },
          { name: "fields", in: "query", explode: false, schema: { type: "array", items: { type: "string" } } },
          { name: "X-Trace", in: "header", schema: { type: "string" } },
        ],
        responses: { "200": { description: "ok" } },
      },
      post: {
        operationId: "createOrder",
        summary: "Place an order",
        description: "A person approves it first.",
        requestBody: { $ref: "#/components/requestBodies/NewOrder" },
        responses: { "201": { description: "ok" } },
      },
    },
    "/orders/{order_id}": {
      parameters: [{ $ref: "#/components/parameters/OrderId" }],
      get: {
        operationId: "getOrder",
        summary: "Read one order",
        parameters: [{ name: "expand", in: "query", required: false, schema: { type: "string" } }],
        responses: { "200": { description: "ok" } },
      },
      delete: { operationId: "deleteOrder", responses: { "204": { description: "ok" } } },
    },
    "/orders/{order_id}/history": {
      get: {
        summary: "The order's history",
        parameters: [{ $ref: "#/components/parameters/OrderId" }],
        responses: { "200": { description: "ok" } },
      },
    },
    "/orders/{order_id}/receipt": {
      post: {
        operationId: "uploadReceipt",
        parameters: [{ $ref: "#/components/parameters/OrderId" }],
        requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object", properties: { file: { type: "string", format: "binary" } } } } } },
        responses: { "204": { description: "ok" } },
      },
    },
    "/orders/{order_id}/signed": {
      get: {
        operationId: "getSignedOrder",
        parameters: [{ $ref: "#/components/parameters/OrderId" }, { name: "X-Signature", in: "header", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "ok" } },
      },
    },
    "/subscriptions": {
      post: {
        operationId: "subscribe",
        requestBody: { content: { "application/json": { schema: { type: "object", properties: { url: { type: "string" } } } } } },
        callbacks: { shipped: { "{$request.body#/url}": { post: { responses: { "200": { description: "ok" } } } } } },
        responses: { "201": { description: "ok" } },
      },
    },
  },
  components: {
    parameters: { OrderId: { name: "order_id", in: "path", required: true, description: "The order's id.", schema: { type: "string" } } },
    requestBodies: { NewOrder: { required: true, content: { "application/json": { schema: { $ref: "#/components/schemas/NewOrder" } } } } },
    schemas: {
      NewOrder: NEW_ORDER_30,
      Address: { type: "object", required: ["city"], properties: { city: { type: "string" }, zip: { type: "string", pattern: "^[0-9]{5}$" } } },
    },
  },
});

export const ORDERS_31 = `
openapi: 3.1.0
info: {title: Orders, version: "1"}
paths:
  /orders:
    get:
      operationId: listOrders
      summary: List orders
      parameters:
        - {name: status, in: query, schema: {type: [string, "null"], enum: [open, shipped, null]}}
        - {name: tag, in: query, schema: {type: array, items: {type: string}}}
        - {name: fields, in: query, explode: false, schema: {type: array, items: {type: string}}}
        - {name: X-Trace, in: header, schema: {type: string}}
      responses: {"200": {description: ok}}
    post:
      operationId: createOrder
      summary: Place an order
      description: A person approves it first.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/NewOrder"}
      responses: {"201": {description: ok}}
  /orders/{order_id}:
    parameters:
      - $ref: "#/components/parameters/OrderId"
    get:
      operationId: getOrder
      summary: Read one order
      parameters:
        - {name: expand, in: query, schema: {type: string}}
      responses: {"200": {description: ok}}
    delete:
      operationId: deleteOrder
      responses: {"204": {description: ok}}
  /orders/{order_id}/history:
    get:
      summary: The order's history
      parameters:
        - $ref: "#/components/parameters/OrderId"
      responses: {"200": {description: ok}}
  /orders/{order_id}/receipt:
    post:
      operationId: uploadReceipt
      parameters:
        - $ref: "#/components/parameters/OrderId"
      requestBody:
        required: true
        content:
          application/octet-stream: {schema: {type: string, contentMediaType: image/png}}
      responses: {"204": {description: ok}}
  /orders/{order_id}/signed:
    get:
      operationId: getSignedOrder
      parameters:
        - $ref: "#/components/parameters/OrderId"
        - {name: X-Signature, in: header, required: true, schema: {type: string}}
      responses: {"200": {description: ok}}
  /subscriptions:
    post:
      operationId: subscribe
      requestBody:
        content:
          application/json:
            schema: {type: object, properties: {url: {type: string}}}
      callbacks:
        shipped:
          "{$request.body#/url}":
            post:
              responses: {"200": {description: ok}}
      responses: {"201": {description: ok}}
components:
  parameters:
    OrderId: {name: order_id, in: path, required: true, description: "The order's id.", schema: {type: string}}
  schemas:
    NewOrder:
      type: object
      required: [item, quantity]
      additionalProperties: false
      examples: [{item: book, quantity: 1}]
      properties:
        id: {type: string, readOnly: true}
        item: {type: string, minLength: 1, description: What to order.}
        quantity: {type: integer, exclusiveMinimum: 0, maximum: 100}
        note: {type: [string, "null"], maxLength: 200, x-internal: true}
        address: {$ref: "#/components/schemas/Address"}
    Address:
      type: object
      required: [city]
      properties:
        city: {type: string}
        zip: {type: string, pattern: "^[0-9]{5}$"}
`;

/** The body schema both documents offer the model for createOrder: $refs inlined, one dialect. */
export const NEW_ORDER_OFFERED = {
  type: "object",
  required: ["item", "quantity"],
  additionalProperties: false,
  properties: {
    item: { type: "string", minLength: 1, description: "What to order." },
    quantity: { type: "integer", exclusiveMinimum: 0, maximum: 100 },
    note: { type: ["string", "null"], maxLength: 200 },
    address: { type: "object", required: ["city"], properties: { city: { type: "string" }, zip: { type: "string", pattern: "^[0-9]{5}$" } } },
  },
};

/** The policy: reads free, POSTs wait for the requester, deleteOrder denied. */
export const ORDERS_OPENAPI_POLICY = (file: string, extra = "") => `
apis:
  orders:
    base_url_env: ORDERS_URL
    auth: none
    openapi: ${file}
    allowed_methods: [GET, POST, DELETE]
    denied_operations:
      - {operationId: deleteOrder, methods: [DELETE]}
    approval:
      required_for: { methods: [POST] }
      approvers: [requester]
      timeout_s: 600
${extra}`;

/** A ReadText over texts by path: documents reach the service as on a runtime without files. */
export function openApiFiles(files: Record<string, string>): ReadText {
  return async (path) => (Object.hasOwn(files, path) ? files[path] : undefined);
}
