/// <reference types="node" />
/**
 * The system file's loader on this machine: project directories relative to the file (links
 * resolved, so one directory has one name), and each project's auth policy, which picks the
 * default auth of its edges: the process environment's AUTH_POLICY wins (every agent `system up`
 * starts inherits it), else the project's `.env`, else shared-bearer, as the service reads it.
 * Only AUTH_POLICY is read from a project's `.env`; the client's own credential never is.
 */
import { readFileSync, realpathSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseEnvFile } from "../settings/env-file.js";
import type { AuthPolicyName, SystemHost } from "../tooling/system/types.js";

/** The project's `.env` as the service would read it in that directory; empty when absent or unreadable. */
export function projectEnvFile(dir: string): Record<string, string> {
  try {
    return parseEnvFile(readFileSync(join(dir, ".env"), "utf8"));
  } catch {
    return {};
  }
}

export function authPolicyOf(dir: string): AuthPolicyName {
  const value = process.env.AUTH_POLICY ?? projectEnvFile(dir).AUTH_POLICY;
  return value === "jwt" || value === "custom" ? value : "shared-bearer";
}

export function nodeSystemHost(file: string): SystemHost {
  const base = dirname(resolve(file));
  return {
    async projectDir(project) {
      try {
        const real = realpathSync(resolve(base, project));
        return statSync(real).isDirectory() ? real : undefined;
      } catch {
        return undefined;
      }
    },
    async authPolicy(dir) {
      return authPolicyOf(dir);
    },
  };
}
