#!/usr/bin/python3
"""dashboard-check: open gpool's dashboard in a real browser (Debian's chromium, driven by
chromium-driver through python3-selenium) and check it.

usage: dashboard-check URL TOKEN JOB TEXT SCREENSHOT NODE...

Opens URL/#token=TOKEN&job=JOB and waits until: every NODE is a row of the nodes table, JOB
is a row of one of the job tables, and the job's detail shows TEXT in its output. Then the
browser's console must hold no error (level SEVERE). Saves a screenshot either way. Prints
one line per check ("ok ..." / "not ok ...") and exits non-zero when one failed.
"""
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def main():
    url, token, job, text, shot = sys.argv[1:6]
    nodes = sys.argv[6:]
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1800", "--no-first-run", "--disable-extensions"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    failed = 0

    def report(ok, what):
        nonlocal failed
        print(("ok " if ok else "not ok ") + what)
        failed += not ok

    try:
        drv.get("%s/#token=%s&job=%s" % (url, token, job))

        def wait_for(pred, secs=20):
            end = time.time() + secs
            while time.time() < end:
                try:
                    if pred():
                        return True
                except Exception:
                    pass
                time.sleep(0.25)
            return False

        def node_rows():
            return {r.get_attribute("data-node")
                    for r in drv.find_elements(By.CSS_SELECTOR, "#nodes tbody tr")}

        report(wait_for(lambda: set(nodes) <= node_rows()),
               "the nodes table shows every node (%s; has %s)" % (" ".join(nodes),
                                                                 " ".join(sorted(node_rows()))))
        report(wait_for(lambda: drv.find_elements(By.CSS_SELECTOR, 'tr[data-job="%s"]' % job)),
               "job %s is listed" % job)
        report(wait_for(lambda: text in drv.find_element(By.ID, "detail-out").text, 30),
               "the job's detail shows its output (%r)" % text)
        report(wait_for(lambda: drv.find_elements(By.CSS_SELECTOR, "#cards tbody tr")),
               "the cards table has rows")
        report("updated" in drv.find_element(By.ID, "status").text,
               "the page refreshed itself without error (%r)" %
               drv.find_element(By.ID, "status").text)
        time.sleep(2.5)  # one more refresh cycle, so its errors would show too
        errors = [e for e in drv.get_log("browser") if e.get("level") == "SEVERE"]
        report(not errors, "no console errors%s" % ("" if not errors else ": %s" % errors))
    finally:
        drv.save_screenshot(shot)
        drv.quit()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
