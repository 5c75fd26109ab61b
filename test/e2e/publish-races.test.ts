import { describe, expect, it } from "vitest";
import { call, halves, newKey, upload, useServer } from "./harness.js";

// Publish, unpublish and delete of one image, racing from two connections, many times: after both
// calls settle, the public copy is served if and only if the record says published, and nothing
// is served after a delete.

describe("publish, unpublish and delete racing on one node", () => {
  const handle = useServer();
  const TRIALS = 40;

  async function served(id: string): Promise<number> {
    return (await fetch(`${handle.url}/images/${id}.png`)).status;
  }

  it("never serves an image after delete answered, whatever publish did", async () => {
    const key = await newKey(handle.server, "live", "race-delete");
    const png = await halves(8, 8, [255, 0, 0], [0, 0, 255]);
    for (let trial = 0; trial < TRIALS; trial++) {
      const image = await upload(handle.url, key, png, `d${trial}`);
      const publishCall = () => call(handle.url, "POST", `/v1/images/${image.id}/publish`, { key });
      const deleteCall = () => call(handle.url, "DELETE", `/v1/images/${image.id}`, { key });
      // Alternate which request leaves first.
      const [publish, remove] =
        trial % 2 === 0
          ? await Promise.all([publishCall(), deleteCall()])
          : await Promise.all([deleteCall(), publishCall()]).then(([d, p]) => [p, d] as const);
      expect(remove.status).toBe(204);
      expect([201, 404]).toContain(publish.status);
      expect((await call(handle.url, "GET", `/v1/images/${image.id}`, { key })).status).toBe(404);
      expect(await served(image.id)).toBe(404);
    }
  }, 60_000);

  it("serves the copy iff the record says published after publish races unpublish", async () => {
    const key = await newKey(handle.server, "live", "race-publish");
    const png = await halves(8, 8, [0, 255, 0], [0, 0, 255]);
    const outcomes = new Set<string>();
    for (let trial = 0; trial < TRIALS; trial++) {
      const image = await upload(handle.url, key, png, `p${trial}`);
      if (trial % 2 === 0) await call(handle.url, "POST", `/v1/images/${image.id}/publish`, { key });
      const racers = [
        call(handle.url, "POST", `/v1/images/${image.id}/publish`, { key }),
        call(handle.url, "POST", `/v1/images/${image.id}/unpublish`, { key }),
      ];
      const answers = await Promise.all(trial % 3 === 0 ? racers.reverse() : racers);
      for (const answer of answers) expect(answer.status).toBe(201);
      const record = (await call(handle.url, "GET", `/v1/images/${image.id}`, { key })).json;
      const status = await served(image.id);
      expect(status).toBe(record.url === null ? 404 : 200);
      outcomes.add(record.url === null ? "private" : "public");
    }
    // Both orders happened: the test exercised real interleavings, not one fixed order.
    expect([...outcomes].sort()).toEqual(["private", "public"]);
  }, 60_000);
});
