import { describe, expect, it } from "vitest";
import { isAppError, type SettingsError } from "../../src/errors.js";
import { otlpHeaders, otlpProtocol, otlpTracesUrl, traceResource, vendorProject } from "../../src/observability/trace-export.js";
import { parseSettings } from "../../src/settings/parse.js";

const settings = (env: Record<string, string> = {}) => parseSettings({ API_KEY: "k".repeat(20), MODEL_PROVIDER: "fake", MODEL_NAME: "fake", ...env });

describe("the OTEL_* variables as trace export reads them", () => {
  it("defaults: the local collector, protobuf, the project name, AGENT_VERSION", () => {
    const s = settings();
    expect(otlpTracesUrl(s)).toBe("http://localhost:4318/v1/traces");
    expect(otlpProtocol(s)).toBe("http/protobuf");
    expect(traceResource(s)).toEqual({ "service.name": "agent-service", "service.version": "0.1.0" });
    expect(vendorProject(s)).toBe("agent-service");
    expect(s.OTEL_BSP_SCHEDULE_DELAY).toBe(5000);
  });

  it("the base endpoint gets v1/traces; the traces endpoint is taken as is", () => {
    expect(otlpTracesUrl(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }))).toBe("http://collector:4318/v1/traces");
    expect(otlpTracesUrl(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/base/" }))).toBe("http://collector:4318/base/v1/traces");
    expect(otlpTracesUrl(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://a:1", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://b:2/custom" }))).toBe("http://b:2/custom");
  });

  it("the traces protocol and headers win over the general ones; values are percent-decoded", () => {
    const s = settings({
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Basic%20abc, x-a=1",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-a=2,broken",
    });
    expect(otlpProtocol(s)).toBe("http/json");
    expect(otlpHeaders(s)).toEqual({ authorization: "Basic abc", "x-a": "2" });
  });

  it("OTEL_SERVICE_NAME wins over the resource attributes' service.name", () => {
    expect(traceResource(settings({ OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs,deployment.environment=prod" }))).toEqual({
      "service.name": "from-attrs",
      "service.version": "0.1.0",
      "deployment.environment": "prod",
    });
    expect(traceResource(settings({ OTEL_RESOURCE_ATTRIBUTES: "service.name=from-attrs", OTEL_SERVICE_NAME: "svc", AGENT_VERSION: "2.0.0" }))).toMatchObject({ "service.name": "svc", "service.version": "2.0.0" });
  });

  it("a protocol other than http/protobuf or http/json, or a bad number, stops startup naming the variable", () => {
    try {
      settings({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_BSP_SCHEDULE_DELAY: "soon" });
      expect.unreachable();
    } catch (error) {
      expect(isAppError(error) && error.code === "invalid_settings").toBe(true);
      expect((error as SettingsError).problems.map((p) => p.variable).sort()).toEqual(["OTEL_BSP_SCHEDULE_DELAY", "OTEL_EXPORTER_OTLP_PROTOCOL"]);
    }
  });

  it("OTEL_TRACES_SAMPLER: the SDK's default, the six samplers it names, a ratio from 0 to 1; a remote sampler or a bad ratio stops startup", () => {
    expect(settings({})).toMatchObject({ OTEL_TRACES_SAMPLER: "parentbased_always_on", OTEL_TRACES_SAMPLER_ARG: 1 });
    expect(settings({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" })).toMatchObject({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: 0.1 });
    try {
      settings({ OTEL_TRACES_SAMPLER: "jaeger_remote", OTEL_TRACES_SAMPLER_ARG: "1.5" });
      expect.unreachable();
    } catch (error) {
      expect((error as SettingsError).problems.map((p) => p.variable).sort()).toEqual(["OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"]);
    }
  });
});
