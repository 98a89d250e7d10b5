/** A demonstration tool that needs no network: the current time in a named time zone. */
import { defineTool } from "./define.js";

export const currentTime = defineTool<{ time_zone?: string }>({
  name: "current_time",
  description: "Get the current date and time, in UTC or in an IANA time zone such as Europe/Paris.",
  parameters: {
    type: "object",
    properties: { time_zone: { type: "string", maxLength: 64 } },
    additionalProperties: false,
  },
  calls: [],
  run: ({ time_zone }) => {
    const zone = time_zone ?? "UTC";
    const now = new Date();
    let local: string;
    try {
      local = new Intl.DateTimeFormat("en-GB", { dateStyle: "full", timeStyle: "long", timeZone: zone }).format(now);
    } catch {
      throw new Error("unknown time zone");
    }
    return { utc: now.toISOString(), time_zone: zone, local };
  },
});
