#!/bin/bash
# t1342-jupyter: a notebook through the gateway in a real browser. gpool-user runs Debian's
# jupyter-notebook as a one-replica service whose route requires the owner's token (gsub
# --route-token), the notebook server keeping the same token as its own (JUPYTER_TOKEN, from the
# owner-only file), reached at the gateway's /svc/nb/ (gsub --route-prefix keep, Jupyter's
# base_url = $GPOOL_ROUTE_PREFIX) and on its own port (--service-port). Headless chromium,
# driven by selenium, through /svc/nb/: without the token the gateway answers 401; with it once
# in the address (?gpool_token=T&token=T) the gateway sets its cookie and Jupyter its own, the
# notebook opens, its kernel's WebSockets connect through ggated, a cell `import socket;
# print(socket.gethostname())` runs, and its output is the name of the node the replica runs
# on. Skips (77) where chromium, chromedriver, selenium or Jupyter is missing.
# timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-service.sh"
for b in chromium chromedriver jupyter-notebook curl; do
	command -v $b >/dev/null || skip_all "$b is not installed (deploy/install-deps.sh --test)"
done
/usr/bin/python3 -c 'import selenium, ipykernel' 2>/dev/null || skip_all "python3-selenium or python3-ipykernel is not installed"
test_under_cluster 2 --node-timeout 4s --heartbeat-interval 1s
need_bins ggated

GW=127.0.0.1:$(slot_port 18842)
"$GPOOL_BIN_DIR/ggated" --listen "127.0.0.1:$(slot_port 18843)" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--service-port nb="${GW##*:}" --health-interval 300 --connect-timeout 400 --poll-interval 300 \
	>"$TEST_DIR/ggated.log" 2>&1 &
gwpid=$!
at_cleanup "kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; echo '# ---- ggated.log (last 20) ----'; tail -20 $TEST_DIR/ggated.log | sed 's/^/# /'"

U=$WORK/u
mkdir -p "$U/nb" "$U/home"
cat >"$U/nb/host.ipynb" <<'NB'
{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],
  "source": ["import socket; print(socket.gethostname())"]}],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
 "nbformat": 4, "nbformat_minor": 5}
NB
chown -R "$TEST_USER:" "$U"
chmod 0700 "$U"
# the notebook server: the owner's token is its own too, from the environment (never argv,
# which every user may read in /proc)
svc=$(submit --service --route-token "$U/token" --route-prefix keep -J nb -- /bin/sh -c \
	"export HOME=$U/home JUPYTER_TOKEN=\$(cat $U/token); exec jupyter-notebook --no-browser --ip=0.0.0.0 --port=\$GPOOL_PORT --notebook-dir=$U/nb --NotebookApp.allow_remote_access=True --NotebookApp.base_url=\$GPOOL_ROUTE_PREFIX")
[ -n "$svc" ] && wait_ready "$svc" 1 60 || { fail "the notebook service runs" "$(replicas "$svc")"; done_testing; }
read -r _ _ node _ < <(replicas "$svc")
ok "jupyter-notebook runs as gpool-user's service on $node (job $svc)"
T=$(cat "$U/token")
MAIN=127.0.0.1:$(slot_port 18843)
up() { curl -s -o /dev/null -m 3 -w '%{http_code}' -H "X-Gpool-Token: $T" "http://$MAIN/svc/nb/api/status"; }
wait_eq 60 403 up || wait_eq 60 200 up
like "$(up)" '^(200|403)$' "the notebook server answers at ggated's /svc/nb/ ($(up): Jupyter's own token check behind the gateway's)"
like "$(curl -s -o /dev/null -m 3 -w '%{http_code}' -H "X-Gpool-Token: $T" -H "Authorization: token $T" "http://$GW/svc/nb/api/status")" '^200$' \
	"and on the service's own port, whole paths there too"
is "$(curl -s -o /dev/null -m 3 -w '%{http_code}' -H "X-Gpool-Token: $T" -H "Authorization: token $T" "http://$MAIN/svc/nb/api/status")" 200 \
	"the replica sees /svc/nb/api/status whole (--route-prefix keep): Jupyter answers it under its base_url"
is "$(curl -s -o /dev/null -m 3 -w '%{http_code}' "http://$MAIN/svc/nb/api/status")" 401 "without the token: the gateway's 401 at /svc/nb/"
# (the pattern from the file: a grep given it as an argument would find itself)
ps -eo args | grep -qF -f "$U/token" && fail "the token is on no command line" "ps shows it" || ok "the token is on no command line"

cat >"$WORK/browse.py" <<'PY'
import sys, tempfile
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait
gw, tok = sys.argv[1], sys.argv[2]
o = webdriver.ChromeOptions()
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--user-data-dir=" + tempfile.mkdtemp()):
    o.add_argument(a)
o.binary_location = "/usr/bin/chromium"
d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
try:
    d.set_page_load_timeout(60)
    d.get("http://%s/notebooks/host.ipynb" % gw)
    print("without-token:", d.find_element(By.TAG_NAME, "body").text.strip())
    d.get("http://%s/notebooks/host.ipynb?gpool_token=%s&token=%s" % (gw, tok, tok))
    print("cookie:", ",".join(sorted(c["name"] for c in d.get_cookies())))
    WebDriverWait(d, 90, 0.5).until(lambda d: d.execute_script(
        "return !!(window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel &&"
        " Jupyter.notebook.kernel.is_connected())"))
    print("kernel: connected")
    cell = d.find_element(By.CSS_SELECTOR, ".cell.code_cell")
    cell.click()
    d.execute_script("Jupyter.notebook.select(0); Jupyter.notebook.execute_cell();")
    out = WebDriverWait(d, 90, 0.5).until(lambda d: "".join(
        e.text for e in d.find_elements(By.CSS_SELECTOR, ".output_area pre")).strip())
    print("output:", out)
finally:
    d.quit()
PY
out=$(timeout 200 /usr/bin/python3 "$WORK/browse.py" "$MAIN/svc/nb" "$T" 2>&1)
diag "$(tail -8 <<<"$out")"
like "$out" "without-token: ggated: this route needs its owner's token" "chromium without the token gets the gateway's 401"
like "$out" 'cookie:.*gpool_token' "with it once in the address, the gateway's cookie is set"
like "$out" 'kernel: connected' "the notebook opens at /svc/nb/ and its kernel's WebSockets connect through ggated"
is "$(sed -n 's/^output: //p' <<<"$out")" "$node" "the cell ran on the job's node: its output is $node"
sw=$(curl -s -m 2 "http://$MAIN/metrics" | sed -n 's/^ggated_websocket_handshakes_total{result="switched"} //p')
[ "${sw:-0}" -ge 1 ] && ok "ggated carried the kernel's WebSocket ($sw handshake(s) switched)" || fail "ggated carried the WebSocket" "$sw"
as_user gcancel "$svc" >/dev/null 2>&1
done_testing
