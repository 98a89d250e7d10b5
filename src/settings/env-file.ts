/**
 * Parses an env file (`KEY=value` lines, `#` comments, optional `export `, single or double
 * quotes; `\n` escapes inside double quotes). Pure text in, record out: the runtime entry reads
 * the file and layers the process environment above it (a process variable wins, spec 2.10).
 */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) throw new Error(`env file line ${i + 1} is not KEY=value`);
    const key = match[1]!;
    let value = match[2]!;
    const quoted = /^(["'])((?:\\.|(?!\1).)*)\1\s*(?:#.*)?$/.exec(value);
    if (quoted) {
      value = quoted[2]!;
      // One pass, so an escaped backslash before an `n` stays a backslash and an `n`.
      if (quoted[1] === '"') value = value.replace(/\\([n"\\])/g, (_, c: string) => (c === "n" ? "\n" : c));
    } else {
      value = value.replace(/\s+#.*$/, "").trim();
    }
    out[key] = value;
  }
  return out;
}

/** Lowest first: later layers win for each key they set. */
export function layerEnv(...layers: readonly Readonly<Record<string, string | undefined>>[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const layer of layers)
    for (const [k, v] of Object.entries(layer)) if (v !== undefined) out[k] = v;
  return out;
}
