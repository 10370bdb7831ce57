/**
 * The console's list pages read previews cut in SQL, never whole values: a page listing jobs whose
 * payloads are 1 MB each stays small and shows each payload's first characters with an ellipsis.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pawl } from "../../../src/index.js";
import {
  createConsole,
  createMetrics,
  serveMetrics,
  type MetricsServer,
} from "../../../observability/index.js";
import { previewChars } from "../../../src/store/operator/job-preview-sql.js";
import { setupSchema, testPawl } from "../../helpers/pawl.js";

let pawl: Pawl;
let server: MetricsServer;
let cleanup: () => Promise<void>;
const big = "y".repeat(1024 * 1024);
const ids: string[] = [];

beforeAll(async () => {
  const s = await setupSchema("console_previews");
  cleanup = s.cleanup;
  pawl = testPawl(s.schema, { maxPayloadBytes: 4 * 1024 * 1024 });
  for (let i = 0; i < 3; i++) ids.push((await pawl.enqueue("big.payload", { i, big })).id);
  server = await serveMetrics(createMetrics(pawl), {
    port: 0,
    console: createConsole(pawl, { logger: false }),
  });
});

afterAll(async () => {
  await server?.close();
  await pawl?.close();
  await cleanup?.();
});

const page = async (path: string) => {
  const res = await fetch(`${server.origin}/console${path}`);
  return { status: res.status, body: await res.text() };
};

describe("list pages read previews", () => {
  it("the store's preview read cuts payloads in SQL, marking the cut", async () => {
    const previews = await pawl.store.operator.jobPreviews({ type: "big.payload" });
    expect(previews.map((p) => p.id).sort()).toEqual([...ids].sort());
    for (const p of previews) {
      expect(p.payloadPreview.length).toBe(previewChars + 1);
      expect(p.payloadPreview.endsWith("…")).toBe(true);
      expect(p.payloadPreview.startsWith('{"i":')).toBe(true);
      expect(p).not.toHaveProperty("payload");
    }
  });

  it.each(["/jobs", "/jobs?type=big.payload", "/jobs?text=yyyy", "/paused", "/dlq"])(
    "%s stays small with 1 MB payloads",
    async (path) => {
      const { status, body } = await page(path);
      expect(status).toBe(200);
      expect(body.length).toBeLessThan(64 * 1024);
      expect(body).not.toContain("y".repeat(previewChars + 1));
    },
  );

  it("pages never show a connection URL's password, in a preview or on the job's page", async () => {
    const job = await pawl.enqueue("with.url", { dsn: "postgres://app:s3cr@t/x#y@db:5432/app" });
    for (const path of ["/jobs?type=with.url", `/jobs/${job.id}`]) {
      const { status, body } = await page(path);
      expect(status).toBe(200);
      expect(body).not.toContain("s3cr");
      expect(body).toContain("postgres://app:***@db:5432/app");
    }
  });

  it("the job list shows each payload's preview, cut with an ellipsis", async () => {
    const list = await page("/jobs");
    expect(list.body).toMatch(/<code class="preview">\{&quot;i&quot;:[^<]*…<\/code>/);
  });
});
