#!/usr/bin/env bash
# Create or update the pull request's rag-eval comment: the newest comment by
# github-actions[bot] whose body starts with the summary's marker line. Other comments,
# also other bots' and other workflows', are never touched.
# Usage: post-comment.sh SUMMARY.md   (env: REPO=owner/name, PR=number, GH_TOKEN)
set -euo pipefail
body_file="$1"
marker='<!-- rag-eval-summary -->'
if ! head -n 1 "$body_file" | grep -qF "$marker"; then
  echo "::error title=rag-eval::$body_file does not start with $marker; refusing to post it" >&2
  exit 1
fi
id="$(gh api "repos/$REPO/issues/$PR/comments" --paginate \
  --jq ".[] | select(.user.login == \"github-actions[bot]\" and (.body | startswith(\"$marker\"))) | .id" | tail -n 1)"
if [ -n "$id" ]; then
  gh api --method PATCH "repos/$REPO/issues/comments/$id" -F "body=@$body_file" > /dev/null
  echo "updated comment $id"
else
  gh api --method POST "repos/$REPO/issues/$PR/comments" -F "body=@$body_file" > /dev/null
  echo "created a comment on #$PR"
fi
