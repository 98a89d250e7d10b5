/**
 * Chooses the model from the settings. A missing MODEL_NAME or key is not a startup error
 * (spec 2.10): the service starts and each run fails naming the setting. The model is built on
 * the first run that needs it and kept.
 */
import { ConfigurationError } from "../../errors.js";
import type { Settings } from "../../settings/parse.js";
import type { Model, ModelEvent, ModelRequest, ProviderOptions } from "../model.js";
import { createFakeModel } from "./fake.js";

export type ProviderName = Settings["MODEL_PROVIDER"];

/** The key variable of each real provider (the fake needs none). */
export const KEY_VARIABLE = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  gemini: "GEMINI_API_KEY",
  "openai-compatible": "MODEL_API_KEY",
} as const;

/**
 * One provider's model from its options; shared by the agent's model and the evaluation judge.
 * The SDK behind it is loaded on the first request, so a service that never calls a provider
 * (the fake model, tests) does not carry the SDKs in memory.
 */
export function buildModel(provider: ProviderName, options: ProviderOptions): Model {
  if (provider === "fake") return createFakeModel(options.model);
  let real: Promise<Model> | undefined;
  const load = (): Promise<Model> =>
    (real ??=
      provider === "anthropic"
        ? import("./anthropic.js").then((m) => m.createAnthropicModel(options))
        : provider === "gemini"
          ? import("./gemini.js").then((m) => m.createGeminiModel(options))
          : import("./openai.js").then((m) => m.createOpenAIModel({ ...options, provider })));
  return {
    provider,
    name: options.model,
    // Known per provider without loading it: openai's structured output takes a schema with tools.
    structuredOutput: provider === "openai" || provider === "openai-compatible",
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      yield* (await load()).stream(request);
    },
  };
}

export function modelFactory(settings: Settings, fetchFn: typeof fetch): () => Model {
  const provider = settings.MODEL_PROVIDER;
  if (provider === "fake") {
    const model = createFakeModel(settings.MODEL_NAME ?? "fake");
    return () => model;
  }
  let model: Model | undefined;
  return () => {
    if (model) return model;
    if (!settings.MODEL_NAME) throw new ConfigurationError("The model is not configured: MODEL_NAME is not set.");
    const keyVariable = KEY_VARIABLE[provider];
    const apiKey = settings[keyVariable];
    if (!apiKey) throw new ConfigurationError(`The model is not configured: ${keyVariable} is not set.`);
    if (provider === "openai-compatible" && !settings.OPENAI_BASE_URL)
      throw new ConfigurationError("The model is not configured: OPENAI_BASE_URL is not set.");
    const options: ProviderOptions = {
      model: settings.MODEL_NAME,
      apiKey,
      baseURL: provider === "openai" || provider === "openai-compatible" ? settings.OPENAI_BASE_URL : undefined,
      timeoutMs: settings.MODEL_TIMEOUT_S > 0 ? settings.MODEL_TIMEOUT_S * 1000 : undefined,
      maxRetries: settings.MODEL_MAX_RETRIES,
      reasoningEffort: settings.MODEL_REASONING_EFFORT,
      useResponsesApi: settings.MODEL_USE_RESPONSES_API,
      fetch: fetchFn,
    };
    model = buildModel(provider, options);
    return model;
  };
}
