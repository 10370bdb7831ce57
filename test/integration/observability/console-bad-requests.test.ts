/**
 * A console URL edited by hand: a status, id, cursor or text that pawl refuses is a 400 naming it, never
 * a 500 or a database error, on every page that reads a parameter; the same pages with good values load.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import {
  createConsole,
  createMetrics,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let pawl: Pawl;
let server: MetricsServer;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const s = await setupSchema("console_bad");
  cleanup = s.cleanup;
  pawl = testPawl(s.schema);
  server = await serveMetrics(createMetrics(pawl), { port: 0, console: createConsole(pawl) });
});

afterAll(async () => {
  await server?.close();
  await pawl?.close();
  await cleanup?.();
});

const get = async (path: string) => {
  const res = await fetch(`${server.url.replace(/\/metrics$/, "/console")}${path}`);
  return { status: res.status, body: await res.text() };
};

describe("console parameters", () => {
  it.each([
    ["/jobs?status=BOGUS", /invalid status "BOGUS"/],
    ["/jobs?before=abc", /invalid job id "abc"/],
    ["/jobs?before=99999999999999999999", /invalid job id "99999999999999999999"/],
    ["/jobs?text=%00", /invalid search text/],
    ["/jobs?type=%00", /invalid job type "\\u0000"/],
    ["/dlq?type=%00", /invalid job type "\\u0000"/],
    ["/flows?before=9999999999999999999", /invalid job id "9999999999999999999"/],
    ["/flows/9999999999999999999", /invalid job id "9999999999999999999"/],
    ["/schedules?after=%00", /invalid schedule name "\\u0000": it contains U\+0000 \(NUL\)/],
  ])("%s is a 400 that names the value", async (path, message) => {
    const { status, body } = await get(path);
    expect(status, body).toBe(400);
    expect(body).toMatch(message);
  });

  it.each(["/jobs?status=DEAD", "/jobs?before=5", "/jobs?text=abc", "/flows?before=5", "/schedules?after=a"])(
    "%s loads",
    async (path) => {
      expect((await get(path)).status).toBe(200);
    },
  );
});
