import { createSharpCodec } from "@pixport/codec-sharp";
import { createHttpHandler } from "@pixport/http";
import {
  createHttpBindingPipeline,
  describeHttpBindingConformance,
  type HttpBindingRequest,
} from "@pixport/testing";
import { expect, it } from "vitest";
import { createLambdaHandler } from "../src/index.js";
import { EVENT_SOURCES, type EventKind, readResult, synthesizeEvent } from "./synthesize.js";

for (const kind of Object.keys(EVENT_SOURCES) as EventKind[]) {
  const source = EVENT_SOURCES[kind];
  describeHttpBindingConformance({
    name: `lambda (${kind} events)`,
    setup: async () => {
      const { pipeline, createKey, publicStorageBaseUrl, origin } = createHttpBindingPipeline({
        codec: createSharpCodec(),
      });
      const handler = createLambdaHandler(createHttpHandler(pipeline), { basePath: source.basePath });
      const send = async (request: HttpBindingRequest) =>
        readResult(kind, await handler(synthesizeEvent(kind, request)));
      return { send, baseUrl: source.baseUrl, createKey, publicStorageBaseUrl, origin };
    },
    extraTests: (context) => {
      it("decodes percent-encoded query values the way its source delivers them", async () => {
        const key = await context().createKey("live", `query-${kind}`);
        const response = await context().send({
          method: "GET",
          path: "/v1/images?take=%31%30",
          headers: { "x-api-key": key },
        });
        expect(response.status).toBe(200);
        const body = JSON.parse(new TextDecoder().decode(response.body));
        expect(body).toEqual({ data: [], links: { previous: null, next: null } });
      });
    },
  });
}
