#!/bin/bash
# subject-check.sh SRC_DIR: every commit after the baseline has a subject of at most 72
# characters, git's own convention (git log --oneline, mail subjects and shortlogs cut there);
# the why goes in the body. Commits before the baseline are history and are left as they are.
# CI checks a fresh clone: where the baseline is not in it (a shallow clone, a tarball) the
# check cannot tell which commits are new, says so and skips (77). Exit 0 clean, 1 with the list.
set -u
baseline=14c6176affaf677c9fa960f29e237ec78c801340 # main when the rule reached it (2026-12-07)
max=72
src=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$src" || exit 1
export LC_ALL=C.UTF-8 # count characters, not bytes
if ! git rev-parse --git-dir >/dev/null 2>&1; then
	echo "subject-check: $src is not a git checkout, skipped"
	exit 77
fi
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
	echo "subject-check: baseline ${baseline:0:7} is not in this history (shallow clone?), skipped"
	exit 77
fi
bad=0
n=0
while IFS= read -r line; do
	n=$((n + 1))
	subject=${line#* }
	if [ ${#subject} -gt $max ]; then
		echo "subject-check: ${line%% *}: subject of ${#subject} characters (at most $max): $subject"
		bad=1
	fi
done < <(git log --format='%h %s' "$baseline..HEAD")
[ $bad = 0 ] && echo "subject-check: $n commits after ${baseline:0:7}, every subject at most $max characters"
exit $bad
