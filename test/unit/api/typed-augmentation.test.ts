/**
 * The task map declared by augmenting `PawlTasks` (`declare module "pawl"`) types every instance, with no
 * generic. Augmentation is global to a program, so it cannot live among the files `npm run typecheck`
 * checks (it would type all of them): this test compiles a small program of its own, in memory, with
 * "pawl" resolving to src/index.ts, and expects exactly the errors it plants, on the lines it plants them.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const fixture = join(root, "test", "types", "__augmented_fixture__.ts");

// Each line ending in `// error` must be an error; no other line may be.
const source = `
import { createPawl, PawlClient } from "pawl";
import { drain, fake } from "pawl/testing";

declare module "pawl" {
  interface PawlTasks {
    "email.send": { payload: { to: string }; result: { messageId: string } };
  }
}

export async function main(): Promise<void> {
  const pawl = createPawl();
  const client = new PawlClient();
  pawl.register("email.send", async (p) => ({ messageId: p.to }));
  pawl.register("email.send", async () => ({ messageId: 1 })); // error
  await pawl.enqueue("email.send", { to: "a@b.c" });
  await client.enqueue("email.send", { to: 1 }); // error
  await client.enqueue("email.snd", { to: "a" }); // error
  const job = await client.getJob<"email.send">("1");
  const id: string | undefined = job?.result?.messageId;
  const n: number | undefined = job?.result?.messageId; // error
  fake(client).assertEnqueued("email.send", (p) => p.to.length > 0);
  await drain(pawl, { types: ["email.sent"] }); // error
  void id;
  void n;
}
`;

function compile(): { line: number; message: string }[] {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ["node"],
    baseUrl: root,
    paths: { pawl: ["src/index.ts"], "pawl/testing": ["src/testing/index.ts"] },
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError, create) =>
    name === fixture
      ? ts.createSourceFile(name, source, version)
      : getSourceFile(name, version, onError, create);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fixture || fileExists(name);
  const program = ts.createProgram([fixture], options, host);
  const file = program.getSourceFile(fixture);
  return ts.getPreEmitDiagnostics(program, file).map((d) => ({
    line: d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1,
    message: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  }));
}

describe("a task map declared by augmenting PawlTasks", () => {
  it("types createPawl, PawlClient and pawl/testing without a generic", () => {
    const lines = source.split("\n");
    const planted = lines.flatMap((l, i) => (l.endsWith("// error") ? [i] : []));
    const errors = compile();
    expect(errors.filter((e) => !planted.includes(e.line))).toEqual([]);
    expect([...new Set(errors.map((e) => e.line))].sort((a, b) => a - b)).toEqual(planted);
  }, 60_000);
});
