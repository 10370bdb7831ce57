/**
 * The reviewed public surface: API Extractor's report of every entry of the package (etc/<entry>.api.md,
 * one per key of package.json's `exports`), made from the built declarations in dist/.
 *
 *   npm run api:report   builds, then writes the reports (commit them with the change that moved the API)
 *   npm run api:check    fails when a report differs from the built declarations (CI, after the build)
 *
 * A change to the public API therefore shows up in review as a diff of etc/*.api.md, and CI fails when the
 * surface changed without its report. Members marked `@internal` are stripped from the build
 * (tsconfig.build.json `stripInternal`), so they are not in the reports either.
 */
import { Extractor, ExtractorConfig, ExtractorLogLevel, type IConfigFile } from "@microsoft/api-extractor";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const local = process.argv.includes("--local");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  exports: Record<string, string | { types?: string }>;
};

/** "." -> "pawl", "./client" -> "pawl-client": the report's file name. */
const reportName = (entry: string) =>
  entry === "." ? "pawl" : `pawl-${entry.slice(2).replaceAll("/", "-")}`;

let failed = 0;
for (const [entry, target] of Object.entries(pkg.exports)) {
  if (typeof target !== "object" || target.types === undefined) continue;
  const configObject: IConfigFile = {
    projectFolder: root,
    mainEntryPointFilePath: join(root, target.types),
    compiler: {
      overrideTsconfig: {
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          skipLibCheck: true,
          types: ["node"],
        },
        include: ["dist"],
      },
    },
    apiReport: {
      enabled: true,
      reportFileName: reportName(entry),
      reportFolder: join(root, "etc"),
      reportTempFolder: join(root, ".api-extractor"),
    },
    docModel: { enabled: false },
    dtsRollup: { enabled: false },
    tsdocMetadata: { enabled: false },
    messages: {
      compilerMessageReporting: { default: { logLevel: ExtractorLogLevel.Warning } },
      extractorMessageReporting: {
        default: { logLevel: ExtractorLogLevel.Warning },
        // pawl marks what is internal with @internal (stripped) and keeps everything else public: release
        // tags on every export would be noise.
        "ae-missing-release-tag": { logLevel: ExtractorLogLevel.None },
        "ae-internal-missing-underscore": { logLevel: ExtractorLogLevel.None },
        // A type reachable from the API but not exported by the entry (the store, the emitter, the resolved
        // configuration) is noted in the report, where a reviewer sees it, rather than failing the run.
        "ae-forgotten-export": { logLevel: ExtractorLogLevel.None, addToApiReportFile: true },
        "ae-unresolved-link": { logLevel: ExtractorLogLevel.None, addToApiReportFile: true },
        // Members without TSDoc are marked in the report (a reviewer's list), not a failure.
        "ae-undocumented": { logLevel: ExtractorLogLevel.None, addToApiReportFile: true },
      },
      // The TSDoc is written for readers and editors (`@example` blocks, `{@link}`s to members), not for
      // a documentation generator: its syntax warnings are not API changes.
      tsdocMessageReporting: { default: { logLevel: ExtractorLogLevel.None } },
    },
  };
  const config = ExtractorConfig.prepare({
    configObject,
    configObjectFullPath: join(root, "etc", `${reportName(entry)}.api-extractor.json`),
    packageJsonFullPath: join(root, "package.json"),
  });
  const result = Extractor.invoke(config, { localBuild: local, showVerboseMessages: false });
  if (!result.succeeded) {
    failed++;
    console.error(
      `${reportName(entry)}: ${result.apiReportChanged ? "the API changed: run npm run api:report and commit etc/" : `${result.errorCount} errors, ${result.warningCount} warnings`}`,
    );
  } else {
    console.log(`${reportName(entry)}: ${result.apiReportChanged ? "report updated" : "unchanged"}`);
  }
}
process.exitCode = failed === 0 ? 0 : 1;
