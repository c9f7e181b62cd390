#!/usr/bin/env python3
"""An operator working through ReceiptGate's console in headless Chromium, written from the
console's HTML contract only. Usage: console_browser.py PLAN.json (written by ConsoleBrowserTests:
URLs, the admin token, the purchases the test made, what it counted).

Walks the console step by step; a step that fails is reported with what broke and the steps that
need it are skipped. The last line of stdout is the JSON report; the exit status is 0 only when
every step passed."""

import json
import os
import sys
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from console_http import BOUND, Failure, expect
from console_page_checks import NetworkLog, PageChecks
from console_steps_analytics import AnalyticsSteps
from console_steps_clients import ClientSteps
from console_steps_pages import PageSteps
from console_steps_purchases import PurchaseSteps
from console_steps_session import SessionSteps

# Steps start only within this many seconds of the first, so that the browser is always quit
# before the Swift test's 360 s limit on this script kills it (leaving Chromium behind). A whole
# suite running beside it on two cores can make a walk of seconds take minutes.
BUDGET = 240


def start_browser(plan):
    options = webdriver.ChromeOptions()
    options.binary_location = plan["chromium"]
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    # An explicit driver path: Selenium Manager must not look for (or download) one.
    return webdriver.Chrome(service=Service(executable_path=plan["chromedriver"]), options=options)


class Walk(SessionSteps, PageSteps, AnalyticsSteps, ClientSteps, PurchaseSteps):
    """The browser, what the walk found, and the helpers its steps (the mixins) share."""

    def __init__(self, plan):
        self.plan = plan
        self.console = plan["console"].rstrip("/")
        self.driver = start_browser(plan)
        self.network = NetworkLog(self.driver, self.console)
        self.pages = PageChecks(self.driver, self.network, plan["screenshots"])
        # A step is done when its action went through (what later steps need), and passed when
        # nothing it looked at was wrong either.
        self.steps, self.done, self.passed, self.failures, self.skipped = [], [], [], [], []
        self.started = time.monotonic()
        self.client = {}  # the client this walk creates: id, name, secret

    # --- running steps -----------------------------------------------------------------------

    def step(self, name, action, needs=()):
        self.steps.append(name)
        missing = [need for need in needs if need not in self.done]
        if time.monotonic() - self.started > BUDGET:
            self.skipped.append(f"{name} (out of time: {BUDGET} s spent)")
            return
        if missing:
            self.skipped.append(f"{name} (needs {', '.join(missing)})")
            return
        try:
            problems = action() or []
            self.done.append(name)
        except Failure as failure:
            problems = [str(failure)]
        except TimeoutException as timeout:
            problems = [f"timed out: {timeout.msg or timeout}"]
        except WebDriverException as error:
            # Where in the walk: the innermost line of these scripts that made the call.
            ours = [f"{os.path.basename(f.filename)}:{f.lineno}" for f in traceback.extract_tb(error.__traceback__)
                    if os.path.basename(f.filename).startswith("console_")]
            problems = [f"browser error at {self.driver.current_url} ({ours[-1] if ours else 'walk'}): {error.msg or error}"]
        except Exception:
            problems = [f"crashed: {traceback.format_exc(limit=3)}"]
        if problems:
            self.failures += [f"{name}: {problem}" for problem in problems]
        else:
            self.passed.append(name)

    def until(self, condition, what):
        """Waits for `condition`; when it does not come, says what was expected and where the browser is."""
        def looking_again_when_replaced(driver):
            # The page replaced under the browser's own inspector while it read it (a redirect still
            # arriving): not an answer yet, so the condition is asked again.
            try:
                return condition(driver)
            except StaleElementReferenceException:
                return False
            except WebDriverException as error:
                if "does not belong to the document" in str(error):
                    return False
                raise
        try:
            return WebDriverWait(self.driver, BOUND).until(looking_again_when_replaced)
        except TimeoutException:
            raise Failure(f"{what} did not happen within {BOUND} s; the browser is at {self.driver.current_url} "
                          f"showing h1 {self.h1s()} and title {self.driver.title!r}") from None

    # Read in one script, inside the page: element handles read one by one go stale when the
    # page is replaced between the find and the read (a redirect still arriving).
    def h1s(self):
        return self.driver.execute_script("return Array.from(document.querySelectorAll('h1'), h => h.innerText)")

    def loaded(self, what):
        """After a navigation: fails at once, naming the status, when the page is an HTTP error."""
        document = self.network.current_document(self.driver.current_url)
        if document and document["status"] >= 400:
            raise Failure(f"{what}: {self.driver.current_url} answered {document['status']}")

    def open(self, path, h1=None):
        self.driver.get(self.console + path)
        self.loaded(f"GET {path}")
        self.until(EC.presence_of_element_located((By.TAG_NAME, "h1")), f"GET {path} showing a page with an h1")
        if h1 is not None:  # only one h1 is a page check of its own
            expect(h1 in self.h1s(), f"GET {path} shows h1 {self.h1s()}, not {h1!r}")

    def submit(self, button, what):
        """Clicks a submit button and waits for the next page to load."""
        page = self.driver.find_element(By.TAG_NAME, "html")
        button.click()
        self.until(EC.staleness_of(page), what)
        self.until(lambda d: d.execute_script("return document.readyState") == "complete", what)

    def cookie(self):
        session = self.driver.get_cookie("rg_console")
        expect(session is not None, "the browser holds no rg_console cookie")
        return f"rg_console={session['value']}"

    def rows(self, table_id):
        """The table's rows that have data cells, as lists of their texts (header rows left out)."""
        rows = self.driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0]), row => Array.from(row.querySelectorAll('td'), cell => cell.innerText.trim()))",
            f"table#{table_id} tr")
        return [cells for cells in rows if cells]

    def run(self):
        self.step("sign-in refuses a wrong token", self.sign_in_refuses_a_wrong_token)
        self.step("sign-in", self.sign_in)
        signed_in = ["sign-in"]
        self.step("overview agrees with /metrics", self.overview_counts_what_metrics_count, signed_in)
        self.step("every page is readable", self.every_page_is_readable, signed_in)
        self.step("analytics show the ledger", self.analytics_show_the_ledger, signed_in)
        self.step("security headers", self.security_headers_outside_the_browser, signed_in)
        self.step("create a client", self.create_client, signed_in)
        self.step("the client is listed", self.client_list_and_page_show_the_client, ["create a client"])
        self.step("find purchases", self.find_purchases, signed_in)
        self.step("purchase page", self.purchase_page_shows_record_attempts_events, signed_in)
        self.step("redeliver a dead webhook", self.redeliver_the_dead_webhook, signed_in)
        self.step("deliveries list failures", self.deliveries_list_the_failures, signed_in)
        self.step("disable the client", self.disable_the_client, ["create a client"])
        self.step("POSTs without csrf are refused", self.posts_without_csrf_are_refused, signed_in)
        self.step("audit log", self.audit_log_records_the_walk, signed_in)
        self.step("sign out", self.sign_out, signed_in)
        self.step("nothing left the service", self.nothing_left_the_service)


def main():
    with open(sys.argv[1]) as file:
        plan = json.load(file)
    walk = Walk(plan)
    try:
        walk.run()
    finally:
        walk.driver.quit()
    for failure in walk.failures:
        print(f"FAIL {failure}", file=sys.stderr)
    print(json.dumps({"ok": not walk.failures and not walk.skipped, "steps": len(walk.steps), "passed": walk.passed, "failures": walk.failures,
                      "skipped": walk.skipped, "pages": walk.pages.pages, "seconds": round(time.monotonic() - walk.started, 1)}))
    return 0 if not walk.failures and not walk.skipped else 1


if __name__ == "__main__":
    sys.exit(main())
