#!/usr/bin/env node
/**
 * npm run lint:core: the core uses only web-standard globals (STYLE.md habit 1). Outside
 * runtime/, cli/ and store/postgres/ it reports Node's globals (process, Buffer, __dirname,
 * require, global, setImmediate, ...) when they resolve to no declaration of our own, the same
 * names read off `globalThis`, imports of Node built-ins (`node:*` or bare `fs`, ...), a
 * `/// <reference types="node" />`, and code compiled at run time (`eval(`, `new Function(`),
 * which workerd refuses.
 *
 * Why a script and not tsc: src/ compiles with `"types": []`, but a provider SDK's own types pull
 * in @types/node, so `process.env` typechecks in the core anyway. The compiler's binder still
 * tells where a name is declared: one declared in the file (a variable, parameter, import) is
 * ours; one declared only in a library, or nowhere, is the runtime's global.
 *
 *   node scripts/lint-core.mjs [root]     root defaults to src; prints `file:line: message`,
 *                                         exits 1 on any finding
 */
import { readdirSync, statSync, existsSync } from "node:fs";
import { isBuiltin } from "node:module";
import path from "node:path";
import ts from "typescript";

/** Folders (under root) that run on Node by design: they are not the core. */
const NODE_SIDE = ["runtime", "cli", path.join("store", "postgres")];
/** Node's globals, none of which exists on workerd or in a browser. */
const NODE_GLOBALS = new Set(["process", "Buffer", "__dirname", "__filename", "require", "module", "exports", "global", "setImmediate", "clearImmediate"]);

const root = path.resolve(process.argv[2] ?? "src");
if (!existsSync(root)) {
  console.error(`lint:core: no such folder ${root}`);
  process.exit(2);
}

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const rel = path.relative(root, p);
    if (statSync(p).isDirectory()) {
      if (!NODE_SIDE.includes(rel) && name !== "node_modules") walk(p, out);
    } else if (/\.(ts|mts|cts|tsx)$/.test(name) && !/\.d\.[mc]?ts$/.test(name)) out.push(p);
  }
  return out;
}
const files = walk(root, []);

/** The project's compiler options (tsconfig.json in the working directory: its target and syntax), else defaults. */
function compilerOptions() {
  const configPath = ts.findConfigFile(process.cwd(), ts.sys.fileExists, "tsconfig.json");
  if (configPath) {
    const { config } = ts.readConfigFile(configPath, ts.sys.readFile);
    return { ...ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(configPath)).options, noEmit: true };
  }
  return { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, noEmit: true };
}

// Only each file's own declarations decide, so neither imports nor the standard library need
// loading (noResolve, noLib: seconds saved, the SDKs' type trees kept out): an imported name is
// an alias declared in the file, and a name declared nowhere in it is a global.
const program = ts.createProgram({ rootNames: files, options: { ...compilerOptions(), noResolve: true, noLib: true, types: [] } });
const checker = program.getTypeChecker();

/** A symbol is one of ours when a declaration of it is in one of the linted files (not in a library). */
function isOurs(symbol) {
  return (symbol?.declarations ?? []).some((d) => {
    const sf = d.getSourceFile();
    return !program.isSourceFileDefaultLibrary(sf) && !program.isSourceFileFromExternalLibrary(sf) && !sf.fileName.includes("/node_modules/");
  });
}

/** True when the identifier names a global of the runtime: it resolves to nothing, or only to library declarations. */
function isGlobal(id) {
  const parent = id.parent;
  const symbol = parent && ts.isShorthandPropertyAssignment(parent) && parent.name === id ? checker.getShorthandAssignmentValueSymbol(parent) : checker.getSymbolAtLocation(id);
  return !isOurs(symbol);
}

/** True when the identifier is a reference (to a variable or a global), not a name of a property or a declaration. */
function isReference(id) {
  const p = id.parent;
  if (!p) return false;
  if ((ts.isPropertyAccessExpression(p) || ts.isQualifiedName(p)) && (p.name === id || p.right === id)) return false;
  if (ts.isPropertyAssignment(p) && p.name === id) return false;
  if ((ts.isImportSpecifier(p) || ts.isExportSpecifier(p) || ts.isBindingElement(p)) && p.propertyName === id) return false;
  if (ts.isLabeledStatement(p) || ts.isBreakOrContinueStatement(p) || ts.isMetaProperty(p) || ts.isJsxAttribute(p) || ts.isNamedTupleMember(p)) return false;
  // The name of a declaration (a variable, parameter, function, class, member, import binding):
  // a declaration of our own, so every reference to it resolves to it.
  if ("name" in p && p.name === id && !ts.isShorthandPropertyAssignment(p)) return false;
  return true;
}

/** `globalThis`, under any parentheses and casts: `(globalThis as { process?: X }).process`. */
function isGlobalThis(expr) {
  let e = expr;
  while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isTypeAssertionExpression(e) || ts.isNonNullExpression(e) || ts.isSatisfiesExpression(e)) e = e.expression;
  return ts.isIdentifier(e) && e.text === "globalThis" && isGlobal(e);
}

function isNodeModule(spec) {
  return spec.startsWith("node:") || isBuiltin(spec);
}

const findings = [];
for (const file of files) {
  const sf = program.getSourceFile(file);
  if (!sf) continue;
  const report = (node, message) => {
    const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    findings.push(`${path.relative(process.cwd(), file)}:${line + 1}: ${message}`);
  };
  for (const ref of sf.typeReferenceDirectives) {
    if (ref.fileName === "node") {
      const { line } = sf.getLineAndCharacterOfPosition(ref.pos);
      findings.push(`${path.relative(process.cwd(), file)}:${line + 1}: /// <reference types="node" /> brings Node's globals into the core`);
    }
  }
  const visit = (node) => {
    // Imports and re-exports of Node built-ins, static, dynamic, `import x = require()` and `import("fs")` types.
    let spec;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) spec = node.moduleSpecifier;
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) spec = node.arguments[0];
    else if (ts.isExternalModuleReference(node) && ts.isStringLiteralLike(node.expression)) spec = node.expression;
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) spec = node.argument.literal;
    if (spec && isNodeModule(spec.text)) report(spec, `import of the Node built-in "${spec.text}" (Node-only code belongs in runtime/, cli/ or store/postgres/)`);

    if (ts.isIdentifier(node) && NODE_GLOBALS.has(node.text) && isReference(node) && isGlobal(node)) {
      report(node, `Node global \`${node.text}\` (the core runs on web standards; take it as an option from the runtime entry)`);
    }
    if (ts.isPropertyAccessExpression(node) && NODE_GLOBALS.has(node.name.text) && isGlobalThis(node.expression)) {
      report(node, `Node global \`globalThis.${node.name.text}\` (the core runs on web standards; take it as an option from the runtime entry)`);
    }
    if (ts.isElementAccessExpression(node) && ts.isStringLiteralLike(node.argumentExpression) && NODE_GLOBALS.has(node.argumentExpression.text) && isGlobalThis(node.expression)) {
      report(node, `Node global \`globalThis["${node.argumentExpression.text}"]\` (the core runs on web standards)`);
    }
    // Code compiled at run time: refused by workerd (and by a strict CSP).
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const callee = node.expression;
      const name = ts.isIdentifier(callee) && isGlobal(callee) ? callee.text : ts.isPropertyAccessExpression(callee) && isGlobalThis(callee.expression) ? callee.name.text : undefined;
      if (name === "eval") report(node, "eval( compiles code at run time, which workerd refuses");
      if (name === "Function") report(node, `${ts.isNewExpression(node) ? "new " : ""}Function( compiles code at run time, which workerd refuses`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

for (const f of findings) console.log(f);
if (findings.length > 0) {
  console.error(`lint:core: ${findings.length} finding(s) in the core (${path.relative(process.cwd(), root) || "."}, outside ${NODE_SIDE.join("/, ")}/)`);
  process.exit(1);
}
console.log(`lint:core: ${files.length} core files use web-standard globals only`);
