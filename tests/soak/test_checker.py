#!/usr/bin/python3
"""test_checker.py: the soak checker's own test (unit.soak.checker).

Hand-made histories: a clean one, with a requeue across a cut host, must pass; each of the
others breaks one promise and must fail with exactly that violation, and the verdict must name
the seed and show the job's window of the history.
"""

import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checker  # noqa: E402  (beside this file, not installed)

OUT = "soak-out {} 0123456789abcdef"


def task(what, job, attempt, t, host="h1", name=None):
    return {"ev": "task", "what": what, "job": job, "attempt": attempt, "rank": 0, "host": host,
            "name": name or f"soak-c1-{job}", "t": t}


def ran(job, attempt, t0, t1, host="h1", end=True, name=None):
    """an attempt's lines: start at t0, a tick every 0.5 s, end at t1 (or only ticks)"""
    evs = [task("start", job, attempt, t0, host, name)]
    t = t0 + 0.5
    while t < t1:
        evs.append(task("tick", job, attempt, t, host, name))
        t += 0.5
    if end:
        evs.append(task("end", job, attempt, t1, host, name))
    return evs


def submit(job, t, outcome="ok", after=None, name=None):
    name = name or f"soak-c1-{job}"
    e = {"ev": "submit", "client": "c1", "name": name, "invoke": t, "complete": t + 0.1,
         "outcome": outcome, "expect": OUT.format(name)}
    if outcome == "ok":
        e["id"] = job
    if after is not None:
        e["after"] = after
    return e


def observe(t, jobs):
    return {"ev": "observe", "invoke": t, "complete": t + 0.05, "jobs": {str(k): v for k, v in jobs.items()}}


def finished(job, state="COMPLETED", attempt=1, text=None):
    evs = [{"ev": "final", "id": job, "state": state, "attempt": attempt}]
    if state == "COMPLETED":
        evs.append({"ev": "output", "id": job, "text": (text if text is not None else OUT.format(f"soak-c1-{job}")) + "\n"})
    return evs


def clean():
    """two jobs; job 2 runs on h2, whose link is cut: its lease ends attempt 1 there, attempt 2
    runs on h3 after it; the observer sees the requeue; a dependency waits; a cancel holds"""
    h = [{"ev": "meta", "seed": 42, "lease_s": 5, "kill_grace_s": 3}]
    h += [submit(1, 100.0), submit(2, 100.2), submit(3, 100.4, after=1), submit(4, 100.6)]
    h += ran(1, 1, 101.0, 104.0)
    h += [{"ev": "fault", "kind": "host_cut", "target": "h2", "phase": "begin", "t": 102.0}]
    h += ran(2, 1, 101.0, 106.5, host="h2", end=False)  # killed at its lease (2 + 5 - 0.5)
    h += [{"ev": "fault", "kind": "host_cut", "target": "h2", "phase": "end", "t": 115.0}]
    h += ran(2, 2, 110.0, 113.0, host="h3")
    h += ran(3, 1, 104.5, 106.0, host="h3")
    h += ran(4, 1, 101.0, 103.0, host="h4", end=False)
    h += [{"ev": "cancel", "id": 4, "invoke": 102.9, "complete": 103.0, "outcome": "ok"}]
    h += [observe(100.5, {1: ["PENDING", 0], 2: ["PENDING", 0]}),
          observe(102.0, {1: ["RUNNING", 1], 2: ["RUNNING", 1], 3: ["PENDING", 0]}),
          observe(108.0, {1: ["COMPLETED", 1], 2: ["PENDING", 1], 3: ["COMPLETED", 1], 4: ["CANCELLED", 1]}),
          observe(111.0, {1: ["COMPLETED", 1], 2: ["RUNNING", 2]}),
          observe(114.0, {2: ["COMPLETED", 2]})]
    h += finished(1) + finished(2, attempt=2) + finished(3) + finished(4, "CANCELLED")
    h += [{"ev": "roles", "t": 100.0 + i, "roles": {"s1": "leader", "s2": "standby", "s3": "standby"}, "cut": []}
          for i in range(5)]
    return h


class CheckerTest(unittest.TestCase):
    def verdict(self, events):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for e in events:
                f.write(json.dumps(e) + "\n")
            f.write('{"ev": "task", "what": "tick", "job": 1, "att\n')  # a torn line is skipped
        try:
            h = checker.History(checker.load([f.name]))
        finally:
            os.unlink(f.name)
        c = checker.Checker(h, leader_overlap_s=5.0, start_slack_s=1.0)
        c.run()
        out = io.StringIO()
        n = c.report(out, 16)
        return n, {k: len(v) for k, v in c.v.items() if v}, out.getvalue()

    def fails_with(self, events, cat):
        n, cats, text = self.verdict(events)
        self.assertEqual(set(cats), {cat}, text)
        self.assertIn("soak-check: FAIL seed 42", text)
        self.assertIn(f"VIOLATION {cat} (seed 42)", text)
        return text

    def test_clean_history_passes(self):
        n, cats, text = self.verdict(clean())
        self.assertEqual(n, 0, text)
        self.assertIn("soak-check: PASS seed 42 accepted 4 lost 0", text)

    def test_lost_job(self):
        h = [e for e in clean() if not (e["ev"] in ("task", "final", "output") and e.get("job", e.get("id")) == 3)]
        h += [{"ev": "final", "id": 3, "state": "FAILED", "attempt": 0}]
        text = self.fails_with(h, "lost")
        self.assertIn("job 3 ended FAILED", text)
        self.assertIn("submit", text)  # the window shows the acknowledgement

    def test_job_missing_at_the_end(self):
        h = [e for e in clean() if not (e["ev"] == "final" and e["id"] == 1)]
        n, cats, text = self.verdict(h)
        self.assertEqual(set(cats), {"lost", "never_final"}, text)

    def test_double_completion(self):
        h = clean() + ran(1, 2, 105.0, 106.0, host="h4")
        text = self.fails_with(h, "ran_twice")
        self.assertIn("attempt 2 started at 105.000 on ['h4'], after attempt 1 ended at 104.000", text)

    def test_run_again_when_the_end_could_not_be_told(self):
        # job 1 ended on h1 just after h1's link was cut: the scheduler requeued it at DOWN
        h = clean() + ran(1, 2, 110.5, 111.5, host="h4") + [
            {"ev": "fault", "kind": "host_cut", "target": "h1", "phase": "begin", "t": 103.9},
            {"ev": "fault", "kind": "host_cut", "target": "h1", "phase": "end", "t": 114.0}]
        short = [dict(e, t=108.0) if e.get("phase") == "end" and e.get("t") == 114.0 else e for e in h]
        self.fails_with(short, "ran_twice")  # 4.1 s: too short for DOWN: the end was to be told
        h = [e for e in h if not (e["ev"] == "observe" and e["invoke"] == 108.0)]
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)
        self.assertIn("known gap ran_again_end_unseen: 1 (1)", text)
        # a client saw it COMPLETED before the second start: a violation all the same
        h += [observe(108.0, {1: ["COMPLETED", 1]})]
        self.fails_with(h, "ran_twice")

    def test_overlapping_attempts(self):
        h = [e for e in clean() if not (e["ev"] == "task" and e["job"] == 2 and e["attempt"] == 2)]
        h += ran(2, 2, 105.0, 108.0, host="h3")  # attempt 1 alive on h2 until 106.5
        self.fails_with(h, "overlapping")

    def test_alive_on_cut_host_past_lease(self):
        h = clean() + [task("tick", 2, 1, 108.5, host="h2")]  # 6.5 s into the cut, lease 5
        n, cats, text = self.verdict(h)
        self.assertIn("ran_on_cut_host", cats, text)
        self.assertEqual(cats["ran_on_cut_host"], 1, text)

    def test_alive_on_cut_host_once_per_attempt(self):
        h = clean() + [task("tick", 2, 1, 108.5 + i / 2, host="h2") for i in range(3)]
        n, cats, text = self.verdict(h)
        self.assertEqual(cats, {"ran_on_cut_host": 1}, text)

    def test_started_on_cut_host(self):
        h = clean() + ran(5, 1, 108.0, 109.0, host="h2") + [submit(5, 107.0)] + finished(5)
        self.fails_with(h, "ran_on_cut_host")

    def test_wrong_output(self):
        h = [e for e in clean() if not (e["ev"] == "output" and e["id"] == 1)]
        h += [{"ev": "output", "id": 1, "text": "soak-out soak-c1-1 0123456789abcdee\n"}]
        self.fails_with(h, "wrong_output")

    def test_output_lost_with_its_agent_is_a_known_gap(self):
        # job 1 ended at 104 on h1 while the leader was cut; h1's agent was killed at 105
        h = [e for e in clean() if not (e["ev"] == "output" and e["id"] == 1)]
        h += [{"ev": "output", "id": 1, "text": ""},
              {"ev": "fault", "kind": "leader_cut", "target": "s1", "phase": "begin", "t": 103.5},
              {"ev": "fault", "kind": "agent_kill", "target": "h1", "phase": "begin", "t": 105.0},
              {"ev": "fault", "kind": "agent_kill", "target": "h1", "phase": "end", "t": 107.0},
              {"ev": "fault", "kind": "leader_cut", "target": "s1", "phase": "end", "t": 110.0}]
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)
        self.assertIn("known gap output_lost_with_agent: 1 (1)", text)
        # without the leader's fault the same loss is a violation
        h = [e for e in h if e.get("kind") != "leader_cut"]
        self.fails_with(h, "wrong_output")

    def test_output_twice_is_the_same_line(self):
        h = [e for e in clean() if not (e["ev"] == "output" and e["id"] == 1)]
        h += [{"ev": "output", "id": 1, "text": OUT.format("soak-c1-1") + "\n" + OUT.format("soak-c1-1") + "\n"}]
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)

    def test_dependency_run_early(self):
        h = [e for e in clean() if not (e["ev"] == "task" and e["job"] == 3)]
        h += ran(3, 1, 103.0, 104.5, host="h3")  # parent 1 ended at 104.0
        self.fails_with(h, "dependency_early")

    def test_cancel_unanswered_but_applied(self):
        h = [e for e in clean() if not (e["ev"] == "cancel" and e["id"] == 4)]
        h += [{"ev": "cancel", "id": 4, "invoke": 102.9, "complete": 112.9, "outcome": "unknown"}]
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)
        # no cancel at all: a CANCELLED job is lost
        h = [e for e in h if e["ev"] != "cancel"]
        self.fails_with(h, "lost")

    def test_cancel_not_obeyed(self):
        h = clean() + [task("tick", 4, 1, 108.0, host="h4")]  # cancel acknowledged at 103, grace 3
        self.fails_with(h, "ran_after_cancel")

    def test_cancel_waits_for_a_killed_agent(self):
        # the agent of job 4's host was away: the kill arrives once it is back
        h = clean() + [task("tick", 4, 1, 108.0, host="h4"),
                       {"ev": "fault", "kind": "agent_kill", "target": "h4", "phase": "begin", "t": 102.5},
                       {"ev": "fault", "kind": "agent_kill", "target": "h4", "phase": "end", "t": 106.0}]
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)

    def test_state_backwards(self):
        h = clean() + [observe(112.0, {2: ["PENDING", 1]})]  # after RUNNING attempt 2
        self.fails_with(h, "state_backwards")

    def test_final_state_changes(self):
        h = clean() + [observe(120.0, {1: ["RUNNING", 2]})]
        self.fails_with(h, "state_backwards")

    def test_concurrent_observations_are_not_ordered(self):
        # a gstat invoked before an earlier one returned may see the older state
        h = clean() + [observe(110.9 + 0.01, {2: ["PENDING", 1]})]
        h[-1]["invoke"] = 111.0  # same invoke as the RUNNING one: concurrent
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)

    def test_phantom_task(self):
        self.fails_with(clean() + ran(9, 1, 101.0, 102.0, name="nobody-submitted-me"), "phantom")

    def test_unknown_submission_may_run(self):
        h = clean() + [submit(7, 101.0, outcome="unknown")] + ran(7, 1, 102.0, 103.0, host="h4")
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)

    def test_one_submission_two_jobs(self):
        h = clean() + ran(8, 1, 102.0, 103.0, host="h4", name="soak-c1-1")
        self.fails_with(h, "duplicate_job")

    def test_two_leaders_for_long(self):
        h = clean() + [{"ev": "roles", "t": 106.0 + i, "roles": {"s1": "leader", "s2": "leader", "s3": "standby"},
                        "cut": []} for i in range(8)]
        self.fails_with(h, "two_leaders")

    def test_two_leaders_one_cut_off(self):
        h = clean() + [{"ev": "roles", "t": 106.0 + i, "roles": {"s1": "leader", "s2": "leader", "s3": "standby"},
                        "cut": ["s1"]} for i in range(8)]
        n, cats, text = self.verdict(h)
        self.assertEqual(n, 0, text)

    def test_unreadable_file(self):
        with self.assertRaises(SystemExit) as e:
            checker.load(["/nonexistent/history.jsonl"])
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main(verbosity=1)
