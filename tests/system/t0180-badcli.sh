#!/bin/bash
# t0180-badcli: bad command-line input gets a clear error on stderr (naming the program and
# the bad value), a non-zero exit and no submission.
# timeout: 90
. "$(dirname "$0")/lib.sh"
test_under_cluster 1

before=$(job_count)
like "$before" '^[0-9]+$' "gstat -a counts the jobs ($before)"

# bad DESC STDERR-REGEX CMD...: the command fails, says why on stderr, prints nothing on stdout
bad() {
	local desc=$1 want=$2
	shift 2
	local out err rc
	out=$(as_user "$@" 2>"$TEST_DIR/err")
	rc=$?
	err=$(cat "$TEST_DIR/err")
	if [ $rc != 0 ] && [ -z "$out" ] && printf '%s' "$err" | grep -Eq -- "$want"; then
		ok "$desc (exit $rc: $(head -n 1 <<<"$err"))"
	else
		fail "$desc" "exit $rc" "stdout: $out" "stderr: $err" "want stderr /$want/"
	fi
}

bad "gsub -n 0" "^gsub: .*'0'" gsub -n 0 -- /bin/true
bad "gsub -t 3x" "^gsub: .*'3x'" gsub -t 3x -- /bin/true
bad "gsub --mem lots" "^gsub: .*'lots'" gsub --mem lots -- /bin/true
bad "gsub with no command" "^gsub: .*(no script or command|no command)" gsub
bad "gsub -- with nothing after" "^gsub: .*no command" gsub -n 1 --
bad "gsub of a missing script" "^gsub: .*missing-script\.sh" gsub ./missing-script.sh
bad "gsub --bogus-option" "^gsub: .*bogus-option" gsub --bogus-option -- /bin/true
bad "gsub -N 3 -n 2" "^gsub: " gsub -N 3 -n 2 -- /bin/true
bad "gsub -c -1" "^gsub: .*'-1'" gsub -c -1 -- /bin/true
bad "gsub --export with a bad item" "^gsub: .*export" gsub --export '=x' -- /bin/true
bad "gcancel of an unknown job" "^gcancel: .*(999999|not found|unknown)" gcancel 999999
bad "gcancel abc" "^gcancel: .*'abc'" gcancel abc
bad "gcancel with no job" "^gcancel: " gcancel
bad "gstat -j x" "^gstat: .*'x'" gstat -j x
bad "glogs of an unknown job" "^glogs: " glogs 999999
bad "gnodes --bogus" "^gnodes: .*bogus" gnodes --bogus

# exit 2 for usage errors, as gsub documents
as_user gsub -t 3x -- /bin/true >/dev/null 2>&1
is "$?" 2 "a usage error exits 2"

sleep 1
is "$(job_count)" "$before" "none of them submitted anything"

done_testing
