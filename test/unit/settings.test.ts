import { describe, expect, it } from "vitest";
import { SettingsError } from "../../src/errors.js";
import { createApp } from "../../src/index.js";
import { parseSettings } from "../../src/settings/parse.js";

/** Runs `fn`, expects a SettingsError and returns it. */
function settingsErrorOf(fn: () => unknown): SettingsError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SettingsError);
    return e as SettingsError;
  }
  throw new Error("expected a SettingsError, nothing was thrown");
}

const variablesOf = (e: SettingsError) => e.problems.map((p) => p.variable).sort();

describe("parseSettings: defaults", () => {
  const s = parseSettings({});

  it("uses the spec defaults for the service, model and limits", () => {
    expect(s.PORT).toBe(8000);
    expect(s.HOST).toBe("127.0.0.1");
    expect(s.MODEL_PROVIDER).toBe("openai");
    expect(s.RECURSION_LIMIT).toBe(50);
    expect(s.SSE_HEARTBEAT_S).toBe(15);
    expect(s.MAX_REQUEST_BYTES).toBe(1_048_576);
    expect(s.MAX_MESSAGE_CHARS).toBe(32000);
    expect(s.MAX_METADATA_KEYS).toBe(16);
    expect(s.MAX_METADATA_VALUE_CHARS).toBe(256);
    expect(s.MODEL_TIMEOUT_S).toBe(60);
    expect(s.RUN_TIMEOUT_S).toBe(300);
    expect(s.CHECKPOINTER).toBe("memory");
    expect(s.LOG_LEVEL).toBe("INFO");
    expect(s.TRACE_CAPTURE).toBe("metadata");
    expect(s.PROPAGATE_TRACE_HEADERS).toBe("peers");
    expect(s.METRICS_ENABLED).toBe(true);
    expect(s.AUTH_READ_ACROSS_ROLES).toEqual([]);
    expect(s.AUTH_JWT_ACTOR_CLAIM).toBe("act");
    expect(s.TOKEN_EXCHANGE_CACHE_MAX).toBe(10000);
  });

  it("is not dev, logs json and has tracing off without notes", () => {
    expect(s.dev).toBe(false);
    expect(s.logFormat).toBe("json");
    expect(s.tracingEnabled).toBe(false);
    expect(s.notes).toEqual([]);
  });

  it("reads an empty string as not set", () => {
    const e = parseSettings({ PORT: "", MODEL_PROVIDER: "", HOST: "" });
    expect(e.PORT).toBe(8000);
    expect(e.MODEL_PROVIDER).toBe("openai");
    expect(e.HOST).toBe("127.0.0.1");
  });

  it("returns a frozen object", () => {
    expect(Object.isFrozen(s)).toBe(true);
  });
});

describe("parseSettings: APP_ENV and LOG_FORMAT", () => {
  it("is dev with text logs under APP_ENV=dev", () => {
    const s = parseSettings({ APP_ENV: "dev" });
    expect(s.dev).toBe(true);
    expect(s.logFormat).toBe("text");
  });

  it.each(["DEV", "development", "Dev", "prod", "dev "])("APP_ENV=%j is not dev", (value) => {
    const s = parseSettings({ APP_ENV: value });
    expect(s.dev).toBe(false);
    expect(s.logFormat).toBe("json");
  });

  it("LOG_FORMAT overrides the default either way", () => {
    expect(parseSettings({ APP_ENV: "dev", LOG_FORMAT: "json" }).logFormat).toBe("json");
    expect(parseSettings({ LOG_FORMAT: "text" }).logFormat).toBe("text");
  });

  it("LOG_LEVEL is case-insensitive", () => {
    expect(parseSettings({ LOG_LEVEL: "debug" }).LOG_LEVEL).toBe("DEBUG");
    expect(parseSettings({ LOG_LEVEL: "Warning" }).LOG_LEVEL).toBe("WARNING");
  });
});

describe("parseSettings: many bad variables at once", () => {
  const SECRET = "short-secret-zzz";
  const bad: Record<string, string> = {
    PORT: "abc-port-value",
    MODEL_TIMEOUT_S: "-1",
    MODEL_PROVIDER: "nope-provider",
    LOG_LEVEL: "loud-level",
    TRACE_CAPTURE: "everything-capture",
    PROPAGATE_TRACE_HEADERS: "maybe-propagate",
    CHECKPOINTER: "sql",
    AUTH_JWT_JWKS_URL: "https://issuer.example.test/jwks.json",
    AUTH_JWT_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----pk-zzz",
    AUTH_JWT_SECRET: SECRET,
    DB_POOL_MIN_SIZE: "20",
    DB_POOL_MAX_SIZE: "5",
  };
  const expected = [
    "AUTH_JWT_PUBLIC_KEY",
    "AUTH_JWT_SECRET",
    "DB_POOL_MIN_SIZE",
    "LOG_LEVEL",
    "MODEL_PROVIDER",
    "MODEL_TIMEOUT_S",
    "PORT",
    "PROPAGATE_TRACE_HEADERS",
    "SQLDB_DSN",
    "TRACE_CAPTURE",
  ];

  it("throws one SettingsError listing every variable", () => {
    const err = settingsErrorOf(() => parseSettings(bad));
    expect(err.code).toBe("invalid_settings");
    expect(variablesOf(err)).toEqual(expected);
    for (const p of err.problems) expect(p.message.length).toBeGreaterThan(0);
    for (const v of expected) expect(err.message).toContain(v);
    expect(err.message).toContain(`(${expected.length})`);
  });

  it("never puts a bad value in the message or the problems", () => {
    const err = settingsErrorOf(() => parseSettings(bad));
    const texts = [err.message, ...err.problems.map((p) => p.message)];
    for (const text of texts) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain("zzz");
      expect(text).not.toContain("abc-port-value");
      expect(text).not.toContain("nope-provider");
      expect(text).not.toContain("loud-level");
      expect(text).not.toContain("everything-capture");
      expect(text).not.toContain("maybe-propagate");
      expect(text).not.toContain("issuer.example.test");
    }
  });

  it("reports MODEL_USE_RESPONSES_API with a non-openai provider", () => {
    const err = settingsErrorOf(() =>
      parseSettings({ MODEL_USE_RESPONSES_API: "true", MODEL_PROVIDER: "anthropic", PORT: "99999" }),
    );
    expect(variablesOf(err)).toEqual(["MODEL_USE_RESPONSES_API", "PORT"]);
    expect(parseSettings({ MODEL_USE_RESPONSES_API: "true", MODEL_PROVIDER: "openai-compatible" }).MODEL_USE_RESPONSES_API).toBe(true);
  });

  it("accepts CHECKPOINTER=sql with SQLDB_DSN and a 32-byte AUTH_JWT_SECRET", () => {
    const s = parseSettings({ CHECKPOINTER: "sql", SQLDB_DSN: "postgres://x", AUTH_JWT_SECRET: "x".repeat(32) });
    expect(s.CHECKPOINTER).toBe("sql");
    expect(s.AUTH_JWT_SECRET).toBe("x".repeat(32));
  });

  it("counts AUTH_JWT_SECRET in UTF-8 bytes, not characters", () => {
    // 11 three-byte characters: 33 bytes, 11 UTF-16 units.
    expect(() => parseSettings({ AUTH_JWT_SECRET: "€".repeat(11) })).not.toThrow();
    const err = settingsErrorOf(() => parseSettings({ AUTH_JWT_SECRET: "€".repeat(10) }));
    expect(variablesOf(err)).toEqual(["AUTH_JWT_SECRET"]);
  });

  it("createApp rejects with the same SettingsError listing all of them", async () => {
    const err = await createApp({ env: bad, logWrite: () => {} }).then(
      () => {
        throw new Error("createApp resolved");
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SettingsError);
    const se = err as SettingsError;
    expect(se.code).toBe("invalid_settings");
    expect(variablesOf(se)).toEqual(expected);
    expect(se.message).not.toContain(SECRET);
  });
});

describe("parseSettings: TRACING_ENABLED", () => {
  it.each(["true", "YES", "1", " True "])("%j turns tracing on without a note", (value) => {
    const s = parseSettings({ TRACING_ENABLED: value });
    expect(s.tracingEnabled).toBe(true);
    expect(s.notes).toEqual([]);
  });

  it.each(["sure", "false", "0"])("%j leaves tracing off with a note", (value) => {
    const s = parseSettings({ TRACING_ENABLED: value });
    expect(s.tracingEnabled).toBe(false);
    expect(s.notes).toHaveLength(1);
    expect(s.notes[0]).toContain("TRACING_ENABLED");
    expect(s.notes[0]).not.toContain(` ${value}`);
  });

  it("unset is off without a note", () => {
    expect(parseSettings({}).tracingEnabled).toBe(false);
    expect(parseSettings({ TRACING_ENABLED: "" }).notes).toEqual([]);
  });
});

describe("parseSettings: PROPAGATE_TRACE_HEADERS", () => {
  it.each([
    ["true", "peers"],
    ["1", "peers"],
    ["yes", "peers"],
    ["on", "peers"],
    ["peers", "peers"],
    ["PEERS", "peers"],
    ["false", "off"],
    ["0", "off"],
    ["no", "off"],
    ["off", "off"],
    ["all", "all"],
    [" All ", "all"],
  ])("%j reads as %s", (value, expected) => {
    expect(parseSettings({ PROPAGATE_TRACE_HEADERS: value }).PROPAGATE_TRACE_HEADERS).toBe(expected);
  });

  it("refuses anything else", () => {
    const err = settingsErrorOf(() => parseSettings({ PROPAGATE_TRACE_HEADERS: "some" }));
    expect(variablesOf(err)).toEqual(["PROPAGATE_TRACE_HEADERS"]);
  });
});

describe("parseSettings: booleans, lists and raw strings", () => {
  it.each([
    ["true", true],
    ["TRUE", true],
    ["1", true],
    ["yes", true],
    ["On", true],
    ["false", false],
    ["0", false],
    ["no", false],
    ["OFF", false],
    ["", true],
  ])("METRICS_ENABLED=%j is %s", (value, expected) => {
    expect(parseSettings({ METRICS_ENABLED: value }).METRICS_ENABLED).toBe(expected);
  });

  it("refuses a METRICS_ENABLED that is not a boolean", () => {
    const err = settingsErrorOf(() => parseSettings({ METRICS_ENABLED: "perhaps" }));
    expect(err.problems).toEqual([{ variable: "METRICS_ENABLED", message: "must be true or false" }]);
  });

  it("splits AUTH_READ_ACROSS_ROLES on commas, trimming and dropping blanks", () => {
    expect(parseSettings({ AUTH_READ_ACROSS_ROLES: " admin, auditor ,,support," }).AUTH_READ_ACROSS_ROLES).toEqual([
      "admin",
      "auditor",
      "support",
    ]);
    expect(parseSettings({ AUTH_READ_ACROSS_ROLES: "" }).AUTH_READ_ACROSS_ROLES).toEqual([]);
    expect(parseSettings({ AUTH_READ_ACROSS_ROLES: " , " }).AUTH_READ_ACROSS_ROLES).toEqual([]);
  });

  it("refuses a role name with a space inside", () => {
    const err = settingsErrorOf(() => parseSettings({ AUTH_READ_ACROSS_ROLES: "admin,super user" }));
    expect(variablesOf(err)).toEqual(["AUTH_READ_ACROSS_ROLES"]);
  });

  it("AUTH_JWT_ACTOR_CLAIM keeps an empty string", () => {
    expect(parseSettings({ AUTH_JWT_ACTOR_CLAIM: "" }).AUTH_JWT_ACTOR_CLAIM).toBe("");
    expect(parseSettings({ AUTH_JWT_ACTOR_CLAIM: "delegate" }).AUTH_JWT_ACTOR_CLAIM).toBe("delegate");
  });

  it("trims whole numbers and checks their range", () => {
    expect(parseSettings({ PORT: " 9000 " }).PORT).toBe(9000);
    expect(parseSettings({ PORT: "0" }).PORT).toBe(0);
    expect(variablesOf(settingsErrorOf(() => parseSettings({ PORT: "65536" })))).toEqual(["PORT"]);
    expect(variablesOf(settingsErrorOf(() => parseSettings({ PORT: "80.5" })))).toEqual(["PORT"]);
    expect(variablesOf(settingsErrorOf(() => parseSettings({ RECURSION_LIMIT: "1" })))).toEqual(["RECURSION_LIMIT"]);
  });
});

describe("parseSettings: a jwt policy's missing variables beside other bad variables", () => {
  it("names them with the others outside dev, so an operator mends everything at once", () => {
    const err = settingsErrorOf(() => parseSettings({ AUTH_POLICY: "jwt", PORT: "abc" }));
    expect(variablesOf(err)).toEqual(["AUTH_JWT_AUDIENCE", "AUTH_JWT_ISSUER", "AUTH_JWT_JWKS_URL or AUTH_JWT_PUBLIC_KEY", "PORT"]);
    expect(err.message).toMatch(/AUTH_JWT_JWKS_URL or AUTH_JWT_PUBLIC_KEY is required/);
    const hs = settingsErrorOf(() => parseSettings({ AUTH_POLICY: "jwt", AUTH_JWT_ALLOW_HS: "true", AUTH_JWT_ALGORITHMS: "HS256", AUTH_JWT_ISSUER: "https://issuer.example", AUTH_JWT_AUDIENCE: "svc", PORT: "abc" }));
    expect(variablesOf(hs)).toEqual(["AUTH_JWT_SECRET", "PORT"]);
  });

  it("leaves them to the policy when nothing else is wrong, and under dev (which starts and answers 503)", () => {
    expect(() => parseSettings({ AUTH_POLICY: "jwt" })).not.toThrow();
    expect(variablesOf(settingsErrorOf(() => parseSettings({ AUTH_POLICY: "jwt", APP_ENV: "dev", PORT: "abc" })))).toEqual(["PORT"]);
  });

  it("names a variable once: one set to a bad value is not also called missing", () => {
    const err = settingsErrorOf(() => parseSettings({ AUTH_POLICY: "jwt", AUTH_JWT_AUDIENCE: "svc", AUTH_JWT_JWKS_URL: "not a url" }));
    expect(variablesOf(err)).toEqual(["AUTH_JWT_ISSUER", "AUTH_JWT_JWKS_URL"]);
    expect(err.problems.find((p) => p.variable === "AUTH_JWT_JWKS_URL")?.message).not.toMatch(/required/);
  });
});

describe("parseSettings: https rule for AUTH_JWT_JWKS_URL and TOKEN_EXCHANGE_URL", () => {
  const cases = [
    { variable: "AUTH_JWT_JWKS_URL", allow: "AUTH_JWT_ALLOW_HTTP_JWKS" },
    { variable: "TOKEN_EXCHANGE_URL", allow: "TOKEN_EXCHANGE_ALLOW_HTTP" },
  ] as const;

  for (const { variable, allow } of cases) {
    describe(variable, () => {
      it("accepts https anywhere", () => {
        expect(parseSettings({ [variable]: "https://example.test/x" })[variable]).toBe("https://example.test/x");
      });

      it.each(["http://127.0.0.1:9000/x", "http://localhost/x", "http://[::1]:8080/x"])("accepts loopback %s outside dev", (value) => {
        expect(parseSettings({ [variable]: value })[variable]).toBe(value);
      });

      it("refuses plain http to another host outside dev, without echoing the URL", () => {
        const err = settingsErrorOf(() => parseSettings({ [variable]: "http://example.test/x" }));
        expect(variablesOf(err)).toEqual([variable]);
        expect(err.message).not.toContain("example.test");
      });

      it.each(["http://127.0.0.1.example.test/x", "http://127.evil.test/x"])("refuses a host that only starts like loopback: %s", (value) => {
        expect(variablesOf(settingsErrorOf(() => parseSettings({ [variable]: value })))).toEqual([variable]);
      });

      it("accepts plain http to another host under dev", () => {
        expect(parseSettings({ APP_ENV: "dev", [variable]: "http://example.test/x" })[variable]).toBe("http://example.test/x");
      });

      it(`accepts plain http to another host with ${allow}=true`, () => {
        expect(parseSettings({ [allow]: "true", [variable]: "http://example.test/x" })[variable]).toBe("http://example.test/x");
      });

      it(`still refuses it with ${allow}=false`, () => {
        const err = settingsErrorOf(() => parseSettings({ [allow]: "false", [variable]: "http://example.test/x" }));
        expect(variablesOf(err)).toEqual([variable]);
      });

      it("refuses a value that is not an http(s) URL", () => {
        expect(variablesOf(settingsErrorOf(() => parseSettings({ [variable]: "ftp://example.test/x" })))).toEqual([variable]);
        expect(variablesOf(settingsErrorOf(() => parseSettings({ [variable]: "not a url" })))).toEqual([variable]);
      });
    });
  }
});
