/**
 * Chooses the model from the settings. A missing MODEL_NAME or key is not a startup error
 * (spec 2.10): the service starts and each run fails naming the setting.
 */
import { ConfigurationError } from "../../errors.js";
import type { Settings } from "../../settings/parse.js";
import type { Model } from "../model.js";
import { createFakeModel } from "./fake.js";

const KEY_VARIABLE = {
  openai: "OPENAI_API_KEY",
  anthropic: "ANTHROPIC_API_KEY",
  gemini: "GEMINI_API_KEY",
  "openai-compatible": "MODEL_API_KEY",
} as const;

export function modelFactory(settings: Settings): () => Model {
  const provider = settings.MODEL_PROVIDER;
  if (provider === "fake") {
    const model = createFakeModel(settings.MODEL_NAME ?? "fake");
    return () => model;
  }
  return () => {
    if (!settings.MODEL_NAME) throw new ConfigurationError("The model is not configured: MODEL_NAME is not set.");
    const keyVariable = KEY_VARIABLE[provider];
    if (!settings[keyVariable]) throw new ConfigurationError(`The model is not configured: ${keyVariable} is not set.`);
    if (provider === "openai-compatible" && !settings.OPENAI_BASE_URL)
      throw new ConfigurationError("The model is not configured: OPENAI_BASE_URL is not set.");
    throw new ConfigurationError(`MODEL_PROVIDER ${provider} is not available in this release; use fake.`);
  };
}
