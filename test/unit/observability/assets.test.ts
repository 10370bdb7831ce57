/**
 * The Grafana dashboard and the Prometheus alert rules only use metrics (and label values) that
 * observability/metrics.ts exposes, and the rules are valid: `promtool check rules` and `promtool test
 * rules` (Debian's prometheus package) when promtool is installed, else a YAML parse (js-yaml, from the
 * dev tooling) and a structural check.
 */
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PawlEventEmitter } from "../../../src/core/events.js";
import {
  breakerStates,
  createMetrics,
  jobOutcomes,
  pollingModes,
  queueStatuses,
} from "../../../observability/index.js";

const dir = fileURLToPath(new URL("../../../observability/", import.meta.url));
const dashboardText = readFileSync(`${dir}grafana/pawl.json`, "utf8");
const alertsPath = `${dir}prometheus/alerts.yml`;
const alertsText = readFileSync(alertsPath, "utf8");
const promtool = spawnSync("promtool", ["--version"]).status === 0;

/** Every series name the metrics expose (histograms with their _bucket, _sum and _count). */
async function exposedNames(): Promise<Set<string>> {
  const events = new PawlEventEmitter();
  const m = createMetrics({
    nodeId: "n",
    running: false,
    on: (name, l) => events.on(name, l),
    inspect: () => null,
    store: { counts: async () => [] },
  });
  const names = new Set<string>();
  for (const metric of await m.registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (String(metric.type) === "histogram")
      for (const s of ["_bucket", "_sum", "_count"]) names.add(metric.name + s);
  }
  m.close();
  return names;
}

/** The PromQL expressions of the dashboard's panels and variables. */
function dashboardExprs(): string[] {
  const d = JSON.parse(dashboardText) as {
    panels: { type: string; targets?: { expr: string }[] }[];
    templating: { list: { definition?: string }[] };
  };
  return [
    ...d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ...d.templating.list.flatMap((v) => (v.definition ? [v.definition] : [])),
  ];
}

const referenced = (text: string) => new Set([...text.matchAll(/\bpawl_[a-z0-9_]+\b/g)].map((m) => m[0]));

describe("dashboard and alerts reference existing metrics", () => {
  it("every pawl_* name in the dashboard and the alert rules is exposed", async () => {
    const names = await exposedNames();
    const inDashboard = referenced(dashboardExprs().join("\n"));
    const inAlerts = referenced(alertsText);
    expect(inDashboard.size).toBeGreaterThan(30);
    expect(inAlerts.size).toBeGreaterThan(10);
    expect([...inDashboard].filter((n) => !names.has(n))).toEqual([]);
    expect([...inAlerts].filter((n) => !names.has(n))).toEqual([]);
  });

  it("label values used in selectors are ones the metrics produce", () => {
    const text = dashboardExprs().join("\n") + alertsText;
    const values = (label: string) =>
      [...text.matchAll(new RegExp(`\\b${label}!?=~?"([^"$]*)"`, "g"))].flatMap((m) => m[1]!.split("|"));
    expect(values("outcome").filter((v) => !(jobOutcomes as readonly string[]).includes(v))).toEqual([]);
    expect(values("mode").filter((v) => !(pollingModes as readonly string[]).includes(v))).toEqual([]);
    const states = [...breakerStates, "alive", "dead"];
    expect(values("state").filter((v) => !states.includes(v))).toEqual([]);
    expect(values("status").filter((v) => !(queueStatuses as readonly string[]).includes(v))).toEqual([]);
  });

  it("the dashboard covers what the issue asks for, with unique panel ids", () => {
    const d = JSON.parse(dashboardText) as { panels: { id: number; title: string; type: string }[] };
    const ids = d.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const titles = d.panels.map((p) => p.title.toLowerCase()).join("\n");
    for (const topic of [
      "throughput",
      "outcomes",
      "pickup latency",
      "polling mode",
      "breaker",
      "coordinator",
      "nodes",
      "queue depth",
      "dlq size",
    ]) {
      expect(titles).toContain(topic);
    }
  });
});

describe("alert rules", () => {
  it("cover DLQ growth, breakers, live nodes, heartbeats, the coordinator, queue depth and pickup latency", () => {
    const names = [...alertsText.matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    for (const a of [
      "PawlDeadLetterQueueGrowing",
      "PawlBreakerOpenTooLong",
      "PawlNoLiveNodes",
      "PawlHeartbeatStale",
      "PawlCoordinatorDisconnected",
      "PawlQueueDepthHigh",
      "PawlPickupLatencySLO",
    ]) {
      expect(names).toContain(a);
    }
    expect(new Set(names).size).toBe(names.length);
  });

  it.skipIf(!promtool)("pass promtool check rules and promtool test rules", () => {
    const check = spawnSync("promtool", ["check", "rules", alertsPath], { encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.stdout).toContain("SUCCESS");
    expect(check.status).toBe(0);
    const test = spawnSync("promtool", ["test", "rules", `${dir}prometheus/alerts.test.yml`], {
      encoding: "utf8",
    });
    expect(test.stdout + test.stderr).toContain("SUCCESS");
    expect(test.status).toBe(0);
  });

  it.skipIf(promtool)(
    "parse as YAML with the shape Prometheus expects (promtool is not installed)",
    async () => {
      const moduleName = "js-yaml";
      const yaml = (await import(moduleName)) as { load(text: string): unknown };
      const doc = yaml.load(alertsText) as { groups: { name: string; rules: Record<string, unknown>[] }[] };
      expect(doc.groups.length).toBeGreaterThan(0);
      for (const g of doc.groups) {
        expect(typeof g.name).toBe("string");
        for (const r of g.rules) {
          expect(typeof r.alert).toBe("string");
          expect(typeof r.expr).toBe("string");
          expect(r.for === undefined || /^\d+[smh]$/.test(String(r.for))).toBe(true);
          expect(
            Object.keys(r).filter((k) => !["alert", "expr", "for", "labels", "annotations"].includes(k)),
          ).toEqual([]);
        }
      }
    },
  );
});
