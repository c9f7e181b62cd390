#!/usr/bin/env python3
"""An operator working through ReceiptGate's console in headless Chromium, written from the
console's HTML contract only. Usage: console_browser.py PLAN.json (written by ConsoleBrowserTests:
URLs, the admin token, the purchases the test made, what it counted).

Walks the console step by step; a step that fails is reported with what broke and the steps that
need it are skipped. The last line of stdout is the JSON report; the exit status is 0 only when
every step passed."""

import hashlib
import hmac
import json
import re
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from console_page_checks import NetworkLog, PageChecks, header_problems

BOUND = 30  # seconds any one condition may take on a slow shared machine
# Steps start only within this many seconds of the first, so that the browser is always quit
# before the Swift test's 180 s limit on this script kills it (leaving Chromium behind).
BUDGET = 120


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def http(method, url, data=None, headers=None, cookie=None):
    """(status, lower-cased headers, body) of one request made outside the browser, redirects not followed."""
    headers = dict(headers or {})
    if cookie:
        headers["Cookie"] = cookie
    body = urllib.parse.urlencode(data).encode() if isinstance(data, dict) else data
    if isinstance(data, dict):
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    opener = urllib.request.build_opener(NoRedirects)
    try:
        with opener.open(request, timeout=BOUND) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read().decode("utf-8", "replace")


def signed_get(api, client_id, secret, path):
    """A game server's GET, signed with the public API's version 2 HMAC scheme."""
    stamp = str(int(time.time()))
    message = f"v2\n{client_id}\n{stamp}\nGET\n{path}\n{hashlib.sha256(b'').hexdigest()}"
    signature = hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()
    return http("GET", api + path, headers={"X-Client-ID": client_id, "X-Timestamp": stamp, "X-Signature": signature,
                                            "X-Signature-Version": "2"})[0]


def start_browser(plan):
    options = webdriver.ChromeOptions()
    options.binary_location = plan["chromium"]
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    # An explicit driver path: Selenium Manager must not look for (or download) one.
    return webdriver.Chrome(service=Service(executable_path=plan["chromedriver"]), options=options)


class Walk:
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
            problems = [f"browser error at {self.driver.current_url}: {error.msg or error}"]
        except Exception:
            problems = [f"crashed: {traceback.format_exc(limit=3)}"]
        if problems:
            self.failures += [f"{name}: {problem}" for problem in problems]
        else:
            self.passed.append(name)

    def until(self, condition, what):
        """Waits for `condition`; when it does not come, says what was expected and where the browser is."""
        try:
            return WebDriverWait(self.driver, BOUND).until(condition)
        except TimeoutException:
            raise Failure(f"{what} did not happen within {BOUND} s; the browser is at {self.driver.current_url} "
                          f"showing h1 {self.h1s()} and title {self.driver.title!r}") from None

    def h1s(self):
        return [h.text for h in self.driver.find_elements(By.TAG_NAME, "h1")]

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
        rows = [[cell.text.strip() for cell in row.find_elements(By.CSS_SELECTOR, "td")]
                for row in self.driver.find_elements(By.CSS_SELECTOR, f"table#{table_id} tr")]
        return [cells for cells in rows if cells]

    # --- the walk ----------------------------------------------------------------------------

    def sign_in_refuses_a_wrong_token(self):
        self.driver.get(self.console + "/console")
        self.loaded("a signed-out GET /console")
        self.until(EC.url_to_be(self.console + "/console/sign-in"), "a signed-out GET /console redirecting to /console/sign-in")
        problems = self.pages.check("sign-in")
        self.driver.find_element(By.ID, "token").send_keys("not-the-admin-token")
        self.submit(self.driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button[type=submit]"), "posting a wrong token")
        alert = self.until(EC.presence_of_element_located((By.CSS_SELECTOR, "p.error[role=alert]")),
                           "the sign-in page showing p.error[role=alert] after a wrong token")
        expect(alert.text.strip(), "the refusal's alert is empty")
        status = self.network.current_document(self.driver.current_url)
        expect(status and status["status"] == 401, f"a wrong token was answered {status and status['status']}, not 401")
        expect(self.driver.get_cookie("rg_console") is None, "a wrong token got a session cookie")
        return problems + self.pages.check("sign-in-refused")

    def sign_in(self):
        self.open("/console/sign-in")
        self.driver.find_element(By.ID, "token").send_keys(self.plan["admin_token"])
        self.submit(self.driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button[type=submit]"), "posting the admin token")
        self.until(EC.url_to_be(self.console + "/console"), "the right token landing on /console")
        self.until(lambda d: "Overview" in self.h1s(), "the overview (h1 Overview) showing after sign-in")
        self.network.drain()
        redirect = next((r for r in reversed(self.network.redirects) if r["from"].endswith("/console/sign-in")), None)
        expect(redirect and redirect["status"] == 303, f"signing in was answered {redirect and redirect['status']}, not a 303 to /console")
        session = self.driver.get_cookie("rg_console")
        expect(session is not None, "no rg_console cookie after signing in")
        expect(session.get("httpOnly") is True, "the session cookie is not HttpOnly")
        expect(session.get("sameSite") == "Strict", f"the session cookie is SameSite={session.get('sameSite')}, not Strict")
        expect(session.get("path") == "/console", f"the session cookie's path is {session.get('path')}, not /console")
        lifetime = session.get("expiry", 0) - time.time()
        expect(28_800 - 300 <= lifetime <= 28_800 + 60, f"the session cookie lives {lifetime:.0f} s, not Max-Age=28800")

    def overview_counts_what_metrics_count(self):
        status, _, metrics = http("GET", self.console + "/metrics", headers={"Authorization": f"Bearer {self.plan['admin_token']}"})
        expect(status == 200, f"GET /metrics on the console's listener answered {status}")
        counted = {}
        for store, outcome, value in re.findall(r'^receiptgate_verifications_total\{store="([^"]*)",outcome="([^"]*)"\} (\S+)$', metrics, re.M):
            if float(value) > 0:
                counted[(store, outcome)] = int(float(value))
        expect(counted, "/metrics has no receiptgate_verifications_total{store=…,outcome=…} series with a count")
        self.open("/console", "Overview")
        shown = {}
        for row in self.driver.find_elements(By.CSS_SELECTOR, "table#verifications tr"):
            parts = [row.find_elements(By.CSS_SELECTOR, f"td.{name}") for name in ("store", "outcome", "count")]
            if all(parts):
                shown[(parts[0][0].text.strip(), parts[1][0].text.strip())] = int(parts[2][0].text.strip())
        problems = []
        if shown != counted:
            problems.append(f"#verifications shows {sorted(shown.items())} but /metrics counts {sorted(counted.items())}")
        for made in self.plan["verifications"]:
            seen = sum(n for (store, outcome), n in shown.items() if store == made["store"] and re.fullmatch(made["outcome"], outcome))
            if seen != made["count"]:
                problems.append(f"#verifications shows {seen} {made['store']} {made['outcome']}, the test made {made['count']}")
        chart = self.driver.find_elements(By.CSS_SELECTOR, "figure#verifications-chart svg[role=img] title")
        if not chart:
            problems.append("no figure#verifications-chart with an svg[role=img] holding a title")
        health = {dd.get_attribute("id"): dd.text.strip() for dd in self.driver.find_elements(By.CSS_SELECTOR, "dl#health dd")}
        for name in ["outbox-pending", "outbox-failed", "outbox-oldest-pending", "refunds-24h", "pool-in-use", "pool-idle", "readiness"]:
            if name not in health:
                problems.append(f"dl#health has no dd#{name} (it has {sorted(health)})")
        if health.get("readiness") not in (None, "ready"):
            problems.append(f"readiness shows {health['readiness']!r} on a service that answers")
        if "outbox-failed" in health and not (health["outbox-failed"].isdigit() and int(health["outbox-failed"]) >= 1):
            problems.append(f"outbox-failed shows {health['outbox-failed']!r} while the test's deliveries were all given up")
        if "refunds-24h" in health and not (health["refunds-24h"].isdigit() and int(health["refunds-24h"]) >= 1):
            problems.append(f"refunds-24h shows {health['refunds-24h']!r} after a refund this minute")
        return problems + self.pages.check("overview")

    def every_page_is_readable(self):
        problems = []
        pages = [("clients", "/console/clients", "Clients"), ("client-new", "/console/clients/new", None),
                 ("purchases", "/console/purchases", "Purchases"), ("deliveries", "/console/deliveries?status=all", "Deliveries"),
                 ("accounts", "/console/accounts", "Accounts"), ("notifications", "/console/notifications", "Notifications"),
                 ("audit", "/console/audit", "Audit log")]
        for page, path, h1 in pages:
            try:
                self.open(path, h1)
            except Failure as failure:
                problems.append(str(failure))
                continue
            problems += self.layout_problems(page) + self.pages.check(page)
        return problems

    def layout_problems(self, page):
        """The header's search form, the navigation and sign-out of every signed-in page."""
        problems = []
        if not self.driver.find_elements(By.CSS_SELECTOR, "header form[role=search][method=get][action='/console/purchases'] input#q[name=q]"):
            problems.append("no search form (role=search, input#q) in the header")
        links = {a.text.strip(): a.get_attribute("href") for a in self.driver.find_elements(By.CSS_SELECTOR, "nav[aria-label=Console] a")}
        for text, path in [("Overview", "/console"), ("Clients", "/console/clients"), ("Purchases", "/console/purchases"),
                           ("Deliveries", "/console/deliveries"), ("Accounts", "/console/accounts"),
                           ("Notifications", "/console/notifications"), ("Audit log", "/console/audit")]:
            if links.get(text) != self.console + path:
                problems.append(f"the Console nav's {text!r} link goes to {links.get(text)}, not {path}")
        if not self.driver.find_elements(By.CSS_SELECTOR, "form[method=post][action='/console/sign-out'] button[type=submit]"):
            problems.append("no sign-out form")
        return [f"{page} page: {problem}" for problem in problems]

    def security_headers_outside_the_browser(self):
        problems = []
        status, headers, _ = http("GET", self.console + "/console/sign-in")
        problems += [f"GET /console/sign-in ({status}): {p}" for p in header_problems(headers)]
        if "rg_console_pre=" not in headers.get("set-cookie", ""):
            problems.append("GET /console/sign-in sets no rg_console_pre cookie")
        status, headers, _ = http("GET", self.console + "/console", cookie=self.cookie())
        expect(status == 200, f"GET /console with the browser's session cookie answered {status}")
        problems += [f"GET /console: {p}" for p in header_problems(headers)]
        for asset in ["/console/assets/console.css", "/console/assets/console.js"]:
            status, _, _ = http("GET", self.console + asset, cookie=self.cookie())
            if status != 200:
                problems.append(f"GET {asset} answered {status}")
        return problems

    def create_client(self):
        self.open("/console/clients", "Clients")
        self.submit(self.driver.find_element(By.CSS_SELECTOR, "a#new-client[href='/console/clients/new']"), "following the New client link")
        form = self.driver.find_element(By.CSS_SELECTOR, "form[method=post][action='/console/clients']")
        name = f"Browser test game {int(time.time())}"
        form.find_element(By.NAME, "name").send_keys(name)
        form.find_element(By.CSS_SELECTOR, "input[name=environments][value=sandbox]").click()
        problems = []
        bundle = form.find_elements(By.CSS_SELECTOR, "[name='setting.bundle-id']")
        expect(bundle, "the form has no setting.bundle-id field for the App Store's bundle id")
        if not form.find_elements(By.XPATH, ".//fieldset[legend[normalize-space()='App Store']]//*[@name='setting.bundle-id']"):
            # Not in the plugin's own group: the client still gets made, so the walk goes on.
            problems.append("setting.bundle-id is not in a fieldset whose legend is the plugin's name, App Store")
        bundle[0].send_keys("com.example.console")
        self.submit(form.find_element(By.CSS_SELECTOR, "button[type=submit]"), "creating the client")
        self.until(lambda d: "Client created" in self.h1s(), "the Client created page")
        created = self.network.current_document(self.driver.current_url)
        expect(created and created["status"] == 201, f"creating a client was answered {created and created['status']}, not 201")
        client_id = self.driver.find_element(By.CSS_SELECTOR, "code#new-client-id").text.strip()
        secret = self.driver.find_element(By.CSS_SELECTOR, "code#new-secret").text.strip()
        expect(client_id.startswith("rgc_"), f"#new-client-id shows {client_id!r}, not an rgc_ id")
        expect(secret.startswith("rgs_"), f"#new-secret shows {secret[:6]!r}…, not an rgs_ secret")
        expect(self.driver.find_elements(By.CSS_SELECTOR, "button[type=button].copy[data-copy=new-secret]"), "no copy button for the secret")
        expect(re.search(r"not (be )?shown again", self.driver.find_element(By.TAG_NAME, "main").text, re.I),
               "no note that the secret is not shown again")
        self.client = {"id": client_id, "name": name, "secret": secret}
        problems += self.pages.check("client-created", allow_secret=True)
        self.pages.secrets.append(secret)
        return problems

    def client_list_and_page_show_the_client(self):
        client_id, name = self.client["id"], self.client["name"]
        self.open("/console/clients", "Clients")
        rows = [row for row in self.driver.find_elements(By.CSS_SELECTOR, "table#clients tr")
                if row.find_elements(By.CSS_SELECTOR, f"a[href='/console/clients/{client_id}']")]
        expect(rows, f"table#clients has no row linking to /console/clients/{client_id}")
        link = rows[0].find_element(By.CSS_SELECTOR, "a")
        expect(link.text.strip() == name, f"the client's link reads {link.text!r}, not its name {name!r}")
        expect(rows[0].find_element(By.CSS_SELECTOR, "td.client-id").text.strip() == client_id, "td.client-id is not the client's id")
        expect(rows[0].find_element(By.CSS_SELECTOR, "td.status").text.strip() == "active", "the new client's td.status is not active")
        problems = self.pages.check("clients-with-new")
        self.submit(link, "opening the client's page")
        expect(name in self.h1s(), f"the client page's h1 is {self.h1s()}, not the name {name!r}")
        record = self.driver.find_element(By.CSS_SELECTOR, "dl#client").text
        for shown in [client_id, "active", "com.example.console", "sandbox"]:
            if shown not in record:
                problems.append(f"dl#client does not show {shown!r}")
        return problems + self.pages.check("client")

    def search(self, query):
        box = self.driver.find_element(By.CSS_SELECTOR, "header input#q")
        box.clear()
        box.send_keys(query)
        self.submit(self.driver.find_element(By.CSS_SELECTOR, "header form[role=search] button[type=submit]"), f"searching for {query!r}")
        self.until(lambda d: "Purchases" in self.h1s(), f"the Purchases page after searching for {query!r}")

    def found(self, purchase, query):
        """The row of table#purchases linking to the purchase; fails naming the query when absent."""
        transaction = purchase["transaction_id"]
        href = f"/console/purchases/app_store/{transaction}"
        for row in self.driver.find_elements(By.CSS_SELECTOR, "table#purchases tr"):
            links = row.find_elements(By.CSS_SELECTOR, f"a[href='{href}']")
            if links:
                expect(links[0].text.strip() == transaction, f"the purchase's link reads {links[0].text!r}, not {transaction}")
                return row, links[0]
        raise Failure(f"searching for {query!r} did not list {transaction} (no link to {href} in table#purchases)")

    def find_purchases(self):
        purchases = self.plan["purchases"]
        self.open("/console", "Overview")
        self.search(self.plan["order_id"])
        self.found(purchases["ordered"], f"App Store order {self.plan['order_id']}")
        problems = self.pages.check("purchases-by-order")
        self.search(purchases["refunded"]["player_id"])
        row, _ = self.found(purchases["refunded"], f"player {purchases['refunded']['player_id']}")
        if "refunded" not in row.text:
            problems.append(f"the refunded purchase's row does not say refunded: {row.text!r}")
        self.search(purchases["undelivered"]["player_id"])
        row, link = self.found(purchases["undelivered"], f"player {purchases['undelivered']['player_id']}")
        if purchases["undelivered"]["player_id"] not in row.text:
            problems.append(f"the row does not show the player: {row.text!r}")
        problems += self.pages.check("purchases-by-player")
        self.submit(link, "opening the purchase")
        return problems

    def purchase_page_shows_record_attempts_events(self):
        transaction = self.plan["purchases"]["undelivered"]["transaction_id"]
        self.open(f"/console/purchases/app_store/{transaction}", f"Purchase {transaction}")
        record = self.driver.find_element(By.CSS_SELECTOR, "dl#record").text
        expect(transaction in record, f"dl#record does not show {transaction}")
        expect(self.plan["purchases"]["undelivered"]["player_id"] in record, "dl#record does not show the player")
        attempts = self.rows("attempts")
        expect(len(attempts) >= 2, f"table#attempts lists {len(attempts)} attempts; the test verified it and sent it again")
        event = self.event_row()
        status = event.find_elements(By.CSS_SELECTOR, "td")
        expect(any(cell.text.strip() in ("failed", "dead") for cell in status), f"the given-up event's row says {event.text!r}, not failed or dead")
        problems = self.pages.check("purchase")
        refunded = self.plan["purchases"]["refunded"]["transaction_id"]
        self.open(f"/console/purchases/app_store/{refunded}", f"Purchase {refunded}")
        state = self.driver.find_element(By.CSS_SELECTOR, "dd#record-state").text.strip()
        if state != "refunded":
            problems.append(f"the refunded purchase's dd#record-state is {state!r}")
        if "transaction.refunded" not in self.driver.find_element(By.CSS_SELECTOR, "table#events").text:
            problems.append("the refunded purchase's table#events has no transaction.refunded event")
        return problems + self.pages.check("purchase-refunded")

    def event_row(self):
        event_id = self.plan["undelivered_event_id"]
        for row in self.driver.find_elements(By.CSS_SELECTOR, "table#events tr"):
            if event_id in row.text:
                return row
        raise Failure(f"table#events does not list the undelivered event {event_id}")

    def receiver_acknowledged(self):
        status, _, body = http("GET", self.plan["receiver_control"] + "/acknowledged")
        expect(status == 200, f"the receiver fake's control answered {status}")
        return json.loads(body)["event_ids"]

    def redeliver_the_dead_webhook(self):
        event_id = self.plan["undelivered_event_id"]
        transaction = self.plan["purchases"]["undelivered"]["transaction_id"]
        self.open(f"/console/purchases/app_store/{transaction}", f"Purchase {transaction}")
        expect(event_id not in self.receiver_acknowledged(), "the receiver had the event before it was redelivered")
        # The game server is back: nothing resends a given-up event by itself, only the operator.
        expect(http("POST", self.plan["receiver_control"] + "/accept", data=b"")[0] == 200, "the receiver fake did not come back up")
        button = self.event_row().find_elements(By.CSS_SELECTOR, f"form[method=post][action='/console/deliveries/{event_id}/redeliver'] button")
        expect(button and button[0].text.strip() == "Redeliver", f"the event's row has no Redeliver form posting to /console/deliveries/{event_id}/redeliver")
        self.submit(button[0], "redelivering the event")
        notice = self.until(EC.presence_of_element_located((By.CSS_SELECTOR, "p.notice[role=status]")), "a notice after redelivering")
        expect(notice.text.strip(), "the redeliver notice is empty")
        problems = []
        self.network.drain()
        action = f"/console/deliveries/{event_id}/redeliver"
        if not any(r["from"].endswith(action) and r["status"] == 303 for r in self.network.redirects):
            answered = self.network.current_document(self.driver.current_url)
            problems.append(f"POST {action} was answered {answered and answered['status']} at {self.driver.current_url}, "
                            "not a 303 back to a page (reloading it posts the redelivery again)")
        problems += self.pages.check("redelivered")
        try:
            WebDriverWait(self.driver, BOUND, poll_frequency=0.2).until(lambda _: event_id in self.receiver_acknowledged())
        except TimeoutException:
            raise Failure(f"the receiver did not get event {event_id} within {BOUND} s of the redelivery") from None

        def delivered(_):
            self.driver.get(self.console + f"/console/purchases/app_store/{transaction}")
            return "delivered" in self.event_row().text
        try:
            WebDriverWait(self.driver, BOUND, poll_frequency=0.5).until(delivered)
        except TimeoutException:
            problems.append(f"the purchase page still shows the event as {self.event_row().text!r} after the receiver took it")
        return problems

    def deliveries_list_the_failures(self):
        self.open("/console/deliveries?status=failed", "Deliveries")
        statuses = [cell.text.strip() for cell in self.driver.find_elements(By.CSS_SELECTOR, "table#deliveries td.status")]
        expect(statuses, "table#deliveries?status=failed lists nothing while three of the test's events are given up")
        expect(all(s in ("failed", "dead") for s in statuses), f"status=failed lists statuses {statuses}")
        expect(self.driver.find_elements(By.CSS_SELECTOR, "table#deliveries td.event-id"), "no td.event-id cells")
        return self.pages.check("deliveries-failed")

    def disable_the_client(self):
        client_id, secret = self.client["id"], self.client["secret"]
        api, path = self.plan["api"], "/v1/players/nobody/transactions"
        before = signed_get(api, client_id, secret, path)
        expect(before == 200, f"the new client's signed GET {path} was answered {before} before it was disabled, not 200")
        self.open(f"/console/clients/{client_id}", self.client["name"])
        form = self.driver.find_element(By.CSS_SELECTOR, f"form[method=post][action='/console/clients/{client_id}/disable']")
        self.submit(form.find_element(By.CSS_SELECTOR, "button"), "asking to disable the client")
        self.until(lambda d: any(h.startswith("Confirm") for h in self.h1s()), "the Confirm page of disabling")
        expect(signed_get(api, client_id, secret, path) == 200, "asking to disable (before confirming) already disabled the client")
        expect(self.driver.find_elements(By.XPATH, "//a[normalize-space()='Cancel']"), "the confirm page has no Cancel link")
        action = f"/console/clients/{client_id}/disable"
        expect(self.driver.find_elements(By.CSS_SELECTOR, f"form[method=post][action='{action}'] input[type=hidden][name=confirm][value=yes]"),
               f"the confirm page has no form posting to {action} with a hidden confirm=yes")
        problems = self.pages.check("confirm-disable")
        self.submit(self.driver.find_element(By.ID, "confirm"), "confirming the disable")
        self.until(EC.url_to_be(self.console + f"/console/clients/{client_id}"), "a 303 back to the client's page")
        expect("disabled" in self.driver.find_element(By.CSS_SELECTOR, "dl#client").text, "the client's page does not show status disabled")
        problems += self.pages.check("client-disabled")
        try:  # the service drops a changed client from its cache on a notification: at once, but not synchronously
            WebDriverWait(self.driver, BOUND, poll_frequency=0.2).until(lambda _: signed_get(api, client_id, secret, path) == 401)
        except TimeoutException:
            problems.append(f"the public API still answers the disabled client's signed GET {path} with "
                            f"{signed_get(api, client_id, secret, path)}, not 401")
        return problems

    def posts_without_csrf_are_refused(self):
        problems = []
        forged = f"Forged client {int(time.time())}"
        for path, fields in [("/console/clients", {"name": forged}), ("/console/no-such-page", {"x": "1"}),
                             ("/console/clients", {"name": forged, "csrf": "not-the-token"}), ("/console/sign-in", {"token": "x"})]:
            status, _, body = http("POST", self.console + path, data=fields, cookie=self.cookie())
            if status != 403:
                problems.append(f"POST {path} with fields {sorted(fields)} was answered {status}, not 403")
            elif not re.search(r'<p class="error" role="alert">|<p role="alert" class="error">', body):
                problems.append(f"the 403 page of POST {path} has no p.error[role=alert]")
        self.open("/console/clients", "Clients")
        if forged in self.driver.find_element(By.TAG_NAME, "main").text:
            problems.append("a POST without csrf created a client anyway")
        return problems

    def audit_log_records_the_walk(self):
        self.open("/console/audit", "Audit log")
        actions = {cell.text.strip() for cell in self.driver.find_elements(By.CSS_SELECTOR, "table#audit td.action")}
        missing = {"sign-in", "client.create", "client.disable", "delivery.redeliver"} - actions
        expect(not missing, f"table#audit has no {sorted(missing)} (it has {sorted(actions)})")
        who = [cell.text for cell in self.driver.find_elements(By.CSS_SELECTOR, "table#audit td.who")]
        expect(all(w.startswith("session ") for w in who), f"td.who names {who[:3]}, not the admin session")
        return self.pages.check("audit-after")

    def sign_out(self):
        old = self.cookie()
        self.open("/console", "Overview")
        self.submit(self.driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-out'] button[type=submit]"), "signing out")
        self.until(EC.url_to_be(self.console + "/console/sign-in"), "sign-out landing on /console/sign-in")
        status, headers, _ = http("GET", self.console + "/console", cookie=old)
        expect(status == 303, f"the signed-out session's cookie still opens /console (answered {status}, not 303)")
        location = headers.get("location", "")
        expect(location in ("/console/sign-in", self.console + "/console/sign-in"), f"the 303 goes to {location!r}, not /console/sign-in")

    def nothing_left_the_service(self):
        problems = [f"the browser requested {url}, outside {self.console}" for url in self.network.foreign_requests()]
        expect(self.network.requests, "Chrome's performance log recorded no request at all, so nothing was checked")
        for entry in self.driver.get_log("browser"):
            if "Content Security Policy" in entry["message"] or "Refused to" in entry["message"]:
                problems.append(f"the browser refused something the page asked for: {entry['message'][:200]}")
        return problems

    def run(self):
        self.step("sign-in refuses a wrong token", self.sign_in_refuses_a_wrong_token)
        self.step("sign-in", self.sign_in)
        signed_in = ["sign-in"]
        self.step("overview agrees with /metrics", self.overview_counts_what_metrics_count, signed_in)
        self.step("every page is readable", self.every_page_is_readable, signed_in)
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
