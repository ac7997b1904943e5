#!/usr/bin/python3
"""llm_clients.py: OpenAI-style streaming clients of a gllm service, for the room's system test
(t1420) and its benchmark (bench/llm/room.sh). Stdlib only (http.client), so it runs with
Debian's /usr/bin/python3 and reads the server-sent events as they come, not buffered.

  llm_clients.py stream URL PROMPTS.json MAX_TOKENS OUT.json [--token T] [--started FILE]
      one streaming completion per prompt, all at once (a thread each), greedy (temperature 0);
      writes per client: the text, whether `data: [DONE]` came, the last event, the
      finish_reason, the seconds to the first token and to the end. With --started, FILE is
      written once every client has its first token (the test switches a PC off then).
  llm_clients.py first URL DEADLINE_S [--token T]
      until DEADLINE_S: one short completion every 0.2 s until one streams a token; prints the
      seconds from the start to that token (the test's "served again"), exit 1 at the deadline.
  llm_clients.py verdict OUT.json REFS.json
      each answer against the reference (the text one rank makes): "complete" (equal, with its
      [DONE]), "error" (an SSE error event and no [DONE]), or "BAD: why" (a wrong or truncated
      answer that ends with [DONE], or a stream cut without an error event); exit 1 on any BAD.
URL is the base, e.g. http://127.0.0.1:8000/svc/llm."""
import http.client
import json
import sys
import threading
import time
import urllib.parse


def post_stream(url, body, token, timeout):
    """Open a streaming POST to URL/v1/completions; returns (connection, response)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request("POST", u.path.rstrip("/") + "/v1/completions", json.dumps(body), headers)
    return conn, conn.getresponse()


def read_events(resp, on_event):
    """Call on_event(data) for each `data:` line of an SSE body until it ends."""
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("data: "):
            if on_event(line[6:]) is False:
                return


def one_stream(url, prompt, max_tokens, token, res, first_evt):
    t0 = time.time()
    r = {"prompt": prompt, "text": "", "done": False, "last": None, "finish": None,
         "status": None, "ttft": None, "secs": None, "exc": None, "times": [], "usage": None}
    try:
        conn, resp = post_stream(url, {"prompt": prompt, "max_tokens": max_tokens,
                                       "temperature": 0, "stream": True,
                                       "stream_options": {"include_usage": True}}, token, 300)
        r["status"] = resp.status

        def ev(data):
            r["last"] = data
            if data == "[DONE]":
                r["done"] = True
                return False
            try:
                d = json.loads(data)
            except ValueError:
                return None
            if d.get("usage"):
                r["usage"] = d["usage"]
            for c in d.get("choices") or []:
                if c.get("text"):
                    r["times"].append(time.time() - t0)
                    if r["ttft"] is None:
                        r["ttft"] = time.time() - t0
                        first_evt.release()
                    r["text"] += c["text"]
                if c.get("finish_reason"):
                    r["finish"] = c["finish_reason"]
            return None
        if resp.status == 200:
            read_events(resp, ev)
        else:
            r["last"] = resp.read(4096).decode("utf-8", "replace")
        conn.close()
    except Exception as e:  # a reset or timeout is an outcome the verdict judges
        r["exc"] = repr(e)
    r["secs"] = time.time() - t0
    res.append(r)
    if r["ttft"] is None:
        first_evt.release()


def cmd_stream(argv):
    url, prompts, max_tokens, out = argv[0], json.load(open(argv[1])), int(argv[2]), argv[3]
    token = argv[argv.index("--token") + 1] if "--token" in argv else None
    started = argv[argv.index("--started") + 1] if "--started" in argv else None
    res, first = [], threading.Semaphore(0)
    th = [threading.Thread(target=one_stream, args=(url, p, max_tokens, token, res, first))
          for p in prompts]
    for t in th:
        t.start()
    for _ in th:
        first.acquire()
    if started:
        open(started, "w").write("%d\n" % sum(1 for r in res if r["ttft"] is None))
    for t in th:
        t.join()
    res.sort(key=lambda r: prompts.index(r["prompt"]))
    json.dump(res, open(out, "w"), indent=1)


def cmd_first(argv):
    url, deadline = argv[0], time.time() + float(argv[1])
    token = argv[argv.index("--token") + 1] if "--token" in argv else None
    t0 = time.time()
    while time.time() < deadline:
        got = []
        try:
            conn, resp = post_stream(url, {"prompt": "x", "max_tokens": 2, "temperature": 0,
                                           "stream": True}, token, 10)
            if resp.status == 200:
                def ev(data):
                    if data != "[DONE]" and '"text"' in data and '"error"' not in data:
                        got.append(time.time())
                        return False
                    return None
                read_events(resp, ev)
            conn.close()
        except Exception:
            pass
        if got:
            print("%.2f" % (got[0] - t0))
            return 0
        time.sleep(0.2)
    print("none")
    return 1


def judge(r, ref):
    if r["done"]:
        if r["text"] == ref:
            return "complete"
        return "BAD: [DONE] after %d of %d bytes (%r vs %r)" % (len(r["text"]), len(ref),
                                                               r["text"][-20:], ref[-20:])
    last = r["last"] or ""
    if '"error"' in last:
        return "error"
    if r["status"] not in (None, 200) and "error" in last:
        return "error"  # refused before streaming (e.g. 502/503 with an error body)
    return "BAD: ended without [DONE] or an error event (last %r, %s)" % (last[:80], r["exc"])


def cmd_verdict(argv):
    res, refs = json.load(open(argv[0])), json.load(open(argv[1]))
    bad = 0
    for r in res:
        v = judge(r, refs[r["prompt"]])
        bad += v.startswith("BAD")
        print("%-9s ttft %s s, %.2f s, %d bytes: %s" % (
            v if not v.startswith("BAD") else "BAD",
            "%.2f" % r["ttft"] if r["ttft"] is not None else "-", r["secs"], len(r["text"]),
            v if v.startswith("BAD") else repr(r["prompt"]) + (
                " " + (r["last"] or "")[:110] if v == "error" else "")))
    return 1 if bad else 0


def main():
    cmds = {"stream": cmd_stream, "first": cmd_first, "verdict": cmd_verdict}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](sys.argv[2:]) or 0)


if __name__ == "__main__":
    main()
