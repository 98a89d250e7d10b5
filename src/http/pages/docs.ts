/**
 * The dev API docs (GET /docs): one HTML page with its CSS and JS inline, so it needs no CDN or
 * internet and runs under a CSP that allows only this page and `connect-src 'self'`. It fetches
 * /openapi.json and renders each operation with `textContent` only: its parameters, body schema,
 * A2A methods (`x-a2a-methods`), responses, and a curl request per body example (or one for an
 * operation without a body) built from the parameter and body examples.
 */

export const DOCS_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function docsHtml(): string {
  // String.raw: the page's script is written as it runs (its regular expressions keep their backslashes).
  return String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent service API</title>
<style>
  * { box-sizing: border-box; }
  body { margin: 0 auto; max-width: 960px; padding: 20px 16px 60px; font: 14px/1.5 system-ui, sans-serif; background: #f6f7f9; color: #1d2330; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  .intro { color: #5a6270; margin: 0 0 20px; }
  .op { background: #fff; border: 1px solid #dde1e7; border-radius: 8px; padding: 12px 16px; margin-bottom: 12px; }
  .op h2 { font-size: 15px; margin: 0; display: flex; gap: 10px; align-items: center; font-family: ui-monospace, monospace; }
  .badge { font: 600 12px/1 system-ui, sans-serif; text-transform: uppercase; color: #fff; padding: 4px 8px; border-radius: 4px; background: #6b7280; }
  .badge.get { background: #2f6feb; } .badge.post { background: #1a7f37; } .badge.delete { background: #cf222e; }
  .badge.put, .badge.patch { background: #9a6700; }
  .summary { margin: 6px 0; }
  .auth { font-size: 12px; color: #5a6270; }
  .auth code { background: #eef1f6; padding: 1px 5px; border-radius: 4px; }
  h3 { font-size: 12px; text-transform: uppercase; letter-spacing: 0.04em; color: #5a6270; margin: 12px 0 4px; }
  ul { margin: 0; padding-left: 18px; }
  li code { font-family: ui-monospace, monospace; }
  pre { margin: 0; padding: 8px 10px; background: #f3f5f8; border: 1px solid #e2e6ec; border-radius: 6px; overflow-x: auto; font: 12px/1.4 ui-monospace, monospace; }
  .error { color: #b42318; }
  .example { font-size: 12px; color: #5a6270; margin: 8px 0 2px; }
  .method-list li { margin: 2px 0; }
  .method-list .stream { font-size: 11px; color: #9a6700; }
  details summary { cursor: pointer; font-size: 12px; color: #5a6270; margin-top: 8px; }
</style>
</head>
<body>
<h1 id="title">Agent service API</h1>
<p id="intro" class="intro">Loading /openapi.json&hellip;</p>
<main id="paths"></main>
<script>
"use strict";
(function () {
  var METHODS = ["get", "post", "put", "patch", "delete", "head", "options"];
  var root = document.getElementById("paths");

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function typeOf(schema) {
    if (!schema || typeof schema !== "object") return "any";
    if (Array.isArray(schema.type)) return schema.type.join(" | ");
    if (schema.type) return schema.type + (schema.format ? " (" + schema.format + ")" : "");
    if (schema.enum) return "enum";
    if (schema.anyOf || schema.oneOf) return (schema.anyOf || schema.oneOf).map(typeOf).join(" | ");
    return "any";
  }
  function section(parent, title) { parent.appendChild(el("h3", "", title)); }
  function quote(text) { return "'" + String(text).replace(/'/g, "'\\''") + "'"; }

  // A curl command for one request: path parameters filled from their examples, query parameters
  // that have one, the body. Headers: an example's x-headers are all it needs (A2A: the version,
  // Accept for a streaming method); otherwise the header parameters' examples, and Accept for an
  // operation that answers server-sent events. -N shows a stream as it arrives.
  function curl(path, method, op, example) {
    var params = Array.isArray(op.parameters) ? op.parameters : [];
    var url = location.origin + path.replace(/\{([^}]+)\}/g, function (whole, name) {
      var p = params.filter(function (x) { return x.in === "path" && x.name === name; })[0];
      return p && p.example !== undefined ? encodeURIComponent(String(p.example)) : whole;
    });
    var query = params.filter(function (p) { return p.in === "query" && p.example !== undefined; })
      .map(function (p) { return encodeURIComponent(p.name) + "=" + encodeURIComponent(String(p.example)); });
    if (query.length) url += "?" + query.join("&");
    var headers = {};
    if (example && example["x-headers"]) headers = example["x-headers"];
    else {
      params.filter(function (p) { return p.in === "header" && p.example !== undefined && !example; }).forEach(function (p) { headers[p.name] = p.example; });
      var ok = op.responses && op.responses["200"] && op.responses["200"].content;
      if (ok && ok["text/event-stream"]) headers["Accept"] = "text/event-stream";
    }
    var streams = headers["Accept"] === "text/event-stream";
    var lines = ["curl" + (streams ? " -N" : "") + (method === "get" ? "" : " -X " + method.toUpperCase()) + " " + quote(url)];
    if (!(Array.isArray(op.security) && op.security.length === 0)) lines.push('-H "Authorization: Bearer $AGENT_API_KEY"');
    Object.keys(headers).forEach(function (name) { lines.push("-H " + quote(name + ": " + headers[name])); });
    if (example) {
      lines.push("-H 'Content-Type: application/json'");
      lines.push("-d " + quote(JSON.stringify(example.value)));
    }
    return lines.join(" \\\n  ");
  }
  function renderExamples(card, path, method, op) {
    var content = op.requestBody && op.requestBody.content && op.requestBody.content["application/json"];
    var examples = content && content.examples ? content.examples : null;
    section(card, examples && Object.keys(examples).length > 1 ? "Request examples" : "Request example");
    if (!examples) { card.appendChild(el("pre", "request-example", curl(path, method, op, null))); return; }
    Object.keys(examples).forEach(function (name) {
      card.appendChild(el("div", "example", examples[name].summary || name));
      card.appendChild(el("pre", "request-example", curl(path, method, op, examples[name])));
    });
  }
  function renderMethods(card, methods) {
    section(card, "Methods");
    var list = el("ul", "method-list");
    methods.forEach(function (m) {
      var item = el("li");
      item.appendChild(el("code", "", m.method));
      if (m.v03) item.appendChild(document.createTextNode(" (0.3: " + m.v03 + ")"));
      if (m.streaming) { item.appendChild(document.createTextNode(" ")); item.appendChild(el("span", "stream", "streams")); }
      item.appendChild(document.createTextNode(": " + m.summary));
      list.appendChild(item);
    });
    card.appendChild(list);
  }

  function renderOperation(path, method, op) {
    var card = el("section", "op");
    var head = el("h2");
    head.appendChild(el("span", "badge " + method, method));
    head.appendChild(el("span", "", path));
    card.appendChild(head);
    if (op.summary) card.appendChild(el("p", "summary", op.summary));
    if (op["x-auth-action"]) {
      var auth = el("div", "auth", "auth action: ");
      auth.appendChild(el("code", "", op["x-auth-action"]));
      card.appendChild(auth);
    } else if (Array.isArray(op.security) && op.security.length === 0) {
      card.appendChild(el("div", "auth", "no authentication"));
    }

    if (Array.isArray(op.parameters) && op.parameters.length) {
      section(card, "Parameters");
      var params = el("ul");
      op.parameters.forEach(function (p) {
        var item = el("li");
        item.appendChild(el("code", "", p.name));
        item.appendChild(document.createTextNode(" (" + p.in + ") " + typeOf(p.schema) + (p.required ? ", required" : "")));
        params.appendChild(item);
      });
      card.appendChild(params);
    }

    if (Array.isArray(op["x-a2a-methods"])) renderMethods(card, op["x-a2a-methods"]);

    var content = op.requestBody && op.requestBody.content;
    if (content) {
      Object.keys(content).forEach(function (type) {
        var schema = el("details");
        schema.appendChild(el("summary", "", "Request body schema (" + type + ")"));
        schema.appendChild(el("pre", "", JSON.stringify(content[type].schema, null, 2)));
        card.appendChild(schema);
      });
    }
    renderExamples(card, path, method, op);

    if (op.responses) {
      section(card, "Responses");
      var list = el("ul");
      Object.keys(op.responses).forEach(function (code) {
        var item = el("li");
        item.appendChild(el("code", "", code));
        item.appendChild(document.createTextNode(": " + (op.responses[code].description || "")));
        list.appendChild(item);
      });
      card.appendChild(list);
    }
    return card;
  }

  fetch("/openapi.json", { headers: { "Accept": "application/json" } })
    .then(function (res) {
      if (!res.ok) throw new Error("GET /openapi.json answered " + res.status);
      return res.json();
    })
    .then(function (doc) {
      var info = doc.info || {};
      document.getElementById("title").textContent = (info.title || "API") + (info.version ? " " + info.version : "");
      document.getElementById("intro").textContent = info.description || "";
      var paths = doc.paths || {};
      Object.keys(paths).forEach(function (path) {
        METHODS.forEach(function (method) {
          var op = paths[path][method];
          if (op) root.appendChild(renderOperation(path, method, op));
        });
      });
    })
    .catch(function (e) {
      var intro = document.getElementById("intro");
      intro.className = "intro error";
      intro.textContent = "Could not load the API description: " + (e && e.message ? e.message : String(e));
    });
})();
</script>
</body>
</html>
`;
}
