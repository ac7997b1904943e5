#!/usr/bin/env python3
"""pipe_client.py - bench/llm/pipe-on-gpu.sh's client and its report.
measure: waits for `gllm serve` on PORT, sends one warm-up request (left out: the first
kernels' loading is not what is measured), asks for the greedy answer (the text the cases are
compared by), then REPS rounds, each timed here, at the client, from sending a request to the
end of its answer: T1, an answer of 1 token (the time to the first token: prefill, one sample,
HTTP), and TN, an answer of N; the decode rate is (N - 1) / (TN - T1), of the medians of T1
and TN over the rounds (each round's too, for the record). Whole answers are timed
because the server sends a stream's text in chunks of as many tokens as came since the last
write (a stream's chunk times would make a late first token and a high rate when tokens come
faster than they are written); a streamed answer each round is compared with the greedy text,
and its chunks are counted and its first chunk's time kept, for the record.
Writes the medians, each round and the text as JSON to --out.
report: one case's lines: the client's measures, the engine's own (the summary line of `gllm
run`, one cold request, timed from the first sampled token), and whether its greedy texts are
one rank's (case a's).
Python's standard library only (the device's python3 has no requests)."""
import argparse
import json
import os
import re
import statistics
import sys
import time
import urllib.error
import urllib.request


def ranks_alive():
    """False when a rank named in $PIDS has exited (a failed start: no point waiting)."""
    for p in os.environ.get("PIDS", "").split():
        try:
            os.kill(int(p), 0)
        except OSError:
            return False
    return True


def wait_up(base, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if not ranks_alive():
            sys.exit("a rank exited before the server came up")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    sys.exit("the server did not come up in %d s" % seconds)


def post(base, body, timeout=600):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=timeout)


def whole(base, prompt, ntok):
    """Seconds an unstreamed greedy answer of NTOK tokens takes, and the answer."""
    t0 = time.perf_counter()
    with post(base, {"prompt": prompt, "max_tokens": ntok, "temperature": 0}) as r:
        ans = json.load(r)
    return time.perf_counter() - t0, ans


def streamed(base, prompt, ntok):
    """A streamed greedy answer: its text, its chunks and the first one's time (ms)."""
    body = {"prompt": prompt, "max_tokens": ntok, "temperature": 0, "stream": True}
    t0 = time.perf_counter()
    t_first, text = None, []
    with post(base, body) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if "error" in ev:
                sys.exit("stream error: %s" % ev["error"])
            for ch in ev.get("choices") or []:
                if ch.get("text"):
                    text.append(ch["text"])
                    t_first = t_first or time.perf_counter()
    return {"first_chunk_ms": (t_first - t0) * 1e3 if t_first else -1.0, "chunks": len(text),
            "text": "".join(text)}


def rate(n, t1, tn):
    """Tokens a second of decode: N-1 tokens in TN-T1 (0 where the noise is larger)."""
    return (n - 1) / (tn - t1) if tn > t1 else 0.0


def round_of(base, prompt, ntok):
    t1, one = whole(base, prompt, 1)
    tn, ans = whole(base, prompt, ntok)
    n = ans["usage"]["completion_tokens"]
    if one["usage"]["completion_tokens"] != 1 or n < 2:
        sys.exit("answers of %d and %d tokens: no rate" % (one["usage"]["completion_tokens"], n))
    st = streamed(base, prompt, ntok)
    return {"ttft_ms": t1 * 1e3, "total_ms": tn * 1e3, "decode_tps": rate(n, t1, tn),
            "completion_tokens": n, "chunks": st["chunks"], "first_chunk_ms": st["first_chunk_ms"],
            "stream_agrees": st["text"] == ans["choices"][0]["text"],
            "text": ans["choices"][0]["text"]}


def measure(a):
    base = "http://127.0.0.1:%d" % a.port
    t = time.time()
    wait_up(base, a.wait)
    print("up in %.1f s" % (time.time() - t), flush=True)
    whole(base, a.prompt, 4)
    _, ref = whole(base, a.prompt, a.ntok)
    text = ref["choices"][0]["text"]
    print("greedy text: %r" % text, flush=True)
    runs = []
    for i in range(a.reps):
        runs.append(round_of(base, a.prompt, a.ntok))
        r = runs[-1]
        print("round %d: 1 token in %.1f ms, %d in %.1f ms: %.1f tokens/s; streamed: first chunk "
              "%.1f ms, %d chunks" % (i, r["ttft_ms"], r["completion_tokens"], r["total_ms"],
                                      r["decode_tps"], r["first_chunk_ms"], r["chunks"]),
              flush=True)
    t1 = statistics.median(r["ttft_ms"] for r in runs)
    tn = statistics.median(r["total_ms"] for r in runs)
    res = {"text": text,
           "prompt_tokens": ref["usage"]["prompt_tokens"],
           "completion_tokens": ref["usage"]["completion_tokens"],
           "ttft_ms": t1, "total_ms": tn,
           "decode_tps": rate(runs[0]["completion_tokens"], t1 / 1e3, tn / 1e3),
           "streams_agree": all(r["stream_agrees"] for r in runs),
           "same_each_time": all(r["text"] == text for r in runs),
           "runs": [{k: r[k] for k in ("ttft_ms", "total_ms", "decode_tps", "completion_tokens",
                                       "chunks", "first_chunk_ms")} for r in runs]}
    with open(a.out, "w") as f:
        json.dump(res, f)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


RUN_LINE = re.compile(r"\[(\w+): (\d+) prompt tokens, (\d+) generated, first token (\d+) ms, "
                      r"([\d.]+) tokens/s\]")


def case_texts(work, name, prompt):
    """The case's served greedy text and `gllm run`'s (its prompt taken off), None if absent."""
    j = read(os.path.join(work, name + ".json"))
    served = json.loads(j)["text"] if j else None
    run = read(os.path.join(work, name + "-run.r0.out"))
    if run is not None:
        run = run[len(prompt):] if run.startswith(prompt) else "<no prompt echoed> " + run
    return served, run


def differs(t, ref):
    """Where T first differs from REF, in words."""
    if t == ref:
        return None
    i = next((k for k in range(min(len(t), len(ref))) if t[k] != ref[k]), min(len(t), len(ref)))
    return "DIFFERS at character %d of %d: %r against %r" % (
        i, len(ref), t[max(0, i - 10):i + 30], ref[max(0, i - 10):i + 30])


def report(a):
    n, title = a.name, a.title
    j = read(os.path.join(a.work, n + ".json"))
    if j:
        m = json.loads(j)
        runs = m["runs"]
        print("%s %-32s serve: first token %8.1f ms, decode %8.1f tokens/s (client's clock, whole "
              "answers of 1 and N tokens, warm, medians of %d; rounds: %s ms, %s tokens/s; prompt "
              "%d tokens, N=%d; a stream's chunks: %s)" % (
                  n, title, m["ttft_ms"], m["decode_tps"], len(runs),
                  "/".join("%.1f" % r["ttft_ms"] for r in runs),
                  "/".join("%.1f" % r["decode_tps"] for r in runs),
                  m["prompt_tokens"], m["completion_tokens"],
                  "/".join(str(r["chunks"]) for r in runs)))
        if not m["streams_agree"]:
            print("%s WARNING: a streamed answer differs from the unstreamed greedy text" % n)
        if not m["same_each_time"]:
            print("%s WARNING: the greedy text differs from one request to the next" % n)
    else:
        print("%s %-32s serve: FAILED (no measure)" % (n, title))
    r = RUN_LINE.search(read(os.path.join(a.work, n + "-run.r0.log")) or "")
    if r:
        print("%s %-32s run:   first token %8s ms, decode %8s tokens/s (the engine's clock, one "
              "cold request; %s prompt tokens, %s generated, %s)" % (
                  n, title, r.group(4), r.group(5), r.group(2), r.group(3), r.group(1)))
    else:
        print("%s %-32s run:   FAILED (no summary line)" % (n, title))
    served, run = case_texts(a.work, n, a.prompt)
    if served is not None and run is not None:
        d = differs(run, served)
        print("%s text: gllm run and serve %s" % (n, d or "agree (%d characters)" % len(run)))
    if n == "a":
        return
    ref_served, ref_run = case_texts(a.work, "a", a.prompt)
    for what, t, ref in (("served", served, ref_served), ("run", run, ref_run)):
        if t is None or ref is None:
            print("%s text (%s): nothing to compare" % (n, what))
        else:
            d = differs(t, ref)
            print("%s text (%s): %s" % (
                n, what, d or "the same greedy text as one rank (%d characters)" % len(t)))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--port", type=int, required=True)
    m.add_argument("--prompt", required=True)
    m.add_argument("--ntok", type=int, default=64)
    m.add_argument("--reps", type=int, default=3)
    m.add_argument("--wait", type=int, default=240)
    m.add_argument("--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("--name", required=True)
    r.add_argument("--title", required=True)
    r.add_argument("--prompt", required=True)
    r.add_argument("--work", required=True)
    a = ap.parse_args()
    (measure if a.cmd == "measure" else report)(a)


if __name__ == "__main__":
    main()
