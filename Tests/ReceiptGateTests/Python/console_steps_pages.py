"""The overview against /metrics, every page of the contract read as a person would, and the
audit log of the walk. Steps of console_browser.py's walk."""

import re

from selenium.webdriver.common.by import By

from console_http import Failure, expect, http


class PageSteps:
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
                 ("refunds", "/console/refunds", "Refund requests"), ("audit", "/console/audit", "Audit log")]
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
        for text, path in [("Overview", "/console"), ("Analytics", "/console/analytics"), ("Clients", "/console/clients"), ("Purchases", "/console/purchases"),
                           ("Deliveries", "/console/deliveries"), ("Accounts", "/console/accounts"),
                           ("Notifications", "/console/notifications"), ("Refunds", "/console/refunds"), ("Audit log", "/console/audit")]:
            if links.get(text) != self.console + path:
                problems.append(f"the Console nav's {text!r} link goes to {links.get(text)}, not {path}")
        if not self.driver.find_elements(By.CSS_SELECTOR, "form[method=post][action='/console/sign-out'] button[type=submit]"):
            problems.append("no sign-out form")
        return [f"{page} page: {problem}" for problem in problems]

    def audit_log_records_the_walk(self):
        self.open("/console/audit", "Audit log")
        actions = {cell.text.strip() for cell in self.driver.find_elements(By.CSS_SELECTOR, "table#audit td.action")}
        missing = {"sign-in", "client.create", "client.disable", "delivery.redeliver"} - actions
        expect(not missing, f"table#audit has no {sorted(missing)} (it has {sorted(actions)})")
        who = [cell.text for cell in self.driver.find_elements(By.CSS_SELECTOR, "table#audit td.who")]
        expect(all(w.startswith("session ") for w in who), f"td.who names {who[:3]}, not the admin session")
        return self.pages.check("audit-after")
