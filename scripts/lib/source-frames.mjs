// Profile frames of the built package named where they were written, through the build's source
// maps (tsup writes them without the sources' text): shared by scripts/heap-garbage.mjs and
// scripts/profile-chat.mjs.
import { existsSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { fileURLToPath } from "node:url";

const sourceMaps = new Map();

/**
 * A frame (`{ functionName, url, lineNumber, columnNumber }`, 0-based lines as V8's profilers give
 * them) of a built file under a `dist/` folder where it was written: src/..., or
 * node_modules/<package>/... for the dependencies the build bundles. Other frames as they are.
 */
export function resolved(frame) {
  const { url, lineNumber, columnNumber } = frame;
  if (!/\/dist[^/]*\/[^/]+\.js$/.test(url)) return frame;
  let map = sourceMaps.get(url);
  if (map === undefined) {
    const file = `${url.startsWith("file:") ? fileURLToPath(url) : url}.map`;
    map = existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, "utf8"))) : null;
    sourceMaps.set(url, map);
  }
  const entry = map?.findEntry(lineNumber, columnNumber);
  if (!entry?.originalSource) return frame;
  return { functionName: frame.functionName, url: entry.originalSource.replace(/^(\.\.\/)+/, ""), lineNumber: entry.originalLine, columnNumber: entry.originalColumn };
}

/** A frame as `function file:line`. */
export function frameName({ functionName, url, lineNumber }) {
  return `${functionName || "(anonymous)"} ${shortFile(url)}:${lineNumber + 1}`;
}

/** A file's path shortened: a dependency's from its package's name, a build's from `dist/`. */
export function shortFile(url) {
  return url.replace(/.*node_modules\//, "").replace(/^(file:\/\/)?\/.*\/(dist[^/]*\/)/, "$2");
}
