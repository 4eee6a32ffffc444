#!/usr/bin/env bash
# Download main's baseline results (artifact rag-eval-baseline of the newest
# successful push-to-main run of eval-gate.yml) into the folder given as $1.
# No baseline (first run, expired artifact) is not an error: the gate then runs
# without regression checks and the summary says so.
set -euo pipefail
dest="${1:-baseline}"
artifact="${BASELINE_ARTIFACT:-rag-eval-baseline}"
run_id="$(gh run list --repo "$GITHUB_REPOSITORY" --workflow eval-gate.yml --branch main \
  --event push --status success --limit 1 --json databaseId --jq '.[0].databaseId // empty')"
if [ -z "$run_id" ]; then
  echo "::notice title=rag-eval::No successful run of eval-gate.yml on main yet: no baseline to compare with."
  exit 0
fi
if ! gh run download "$run_id" --repo "$GITHUB_REPOSITORY" --name "$artifact" --dir "$dest"; then
  echo "::warning title=rag-eval::Could not download $artifact from run $run_id (expired?): comparing without a baseline."
fi
