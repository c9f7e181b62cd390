"""The analytics page against the figures the test computed in SQL from the same ledger (purchases
in three stores and two currencies, refunds, subscriptions): each range and environment, its
charts with their numbers beside them, and its download. Steps of console_browser.py's walk."""

from selenium.webdriver.common.by import By

from console_http import expect, http


class AnalyticsSteps:
    def headline(self):
        return {dd.get_attribute("id"): dd.text.strip() for dd in self.driver.find_elements(By.CSS_SELECTOR, "dl#headline dd")}

    def analytics_show_the_ledger(self):
        problems = []
        for query, key, page in [("", "30", "analytics"), ("?range=7", "7", "analytics-7-days"),
                                 ("?range=90&environment=sandbox", "sandbox-90", "analytics-sandbox")]:
            self.open("/console/analytics" + query, "Analytics")
            shown = self.headline()
            for name, value in self.plan["analytics"][key].items():
                if shown.get(name) != value:
                    problems.append(f"/console/analytics{query}: dd#{name} shows {shown.get(name)!r}, the ledger says {value!r}")
            problems += self.pages.check(page)
        self.open("/console/analytics", "Analytics")
        for figure in ["sales-chart", "subscriptions-chart", "verifications-day-chart"]:
            if not self.driver.find_elements(By.CSS_SELECTOR, f"figure#{figure} svg[role=img] title"):
                problems.append(f"no figure#{figure} with an svg[role=img] holding a title")
        # Each chart's legend names its series as its table's columns do.
        for figure, table in [("sales-chart", "sales-per-day"), ("verifications-day-chart", "verifications-per-day")]:
            legend = [li.text.strip() for li in self.driver.find_elements(By.CSS_SELECTOR, f"figure#{figure} ul.legend li")]
            columns = [th.text.strip() for th in self.driver.find_elements(By.CSS_SELECTOR, f"table#{table} thead th")][1:-1]
            if not legend or legend != columns:
                problems.append(f"figure#{figure}'s legend {legend} is not table#{table}'s columns {columns}")
        stores = {li.text.strip() for li in self.driver.find_elements(By.CSS_SELECTOR, "figure#sales-chart ul.legend li")}
        if not {"app_store", "google_play", "stripe"} <= stores:
            problems.append(f"the sales chart's legend lists {sorted(stores)}, not the three stores the ledger holds")
        # One colour per meaning: a verification that passed is never drawn in a refusal's colour.
        verified = self.driver.find_elements(By.CSS_SELECTOR, "figure#verifications-day-chart rect.tone-good")
        refused = [rect.get_attribute("class") for rect in self.driver.find_elements(By.CSS_SELECTOR, "figure#verifications-day-chart rect")
                   if "refused" in (rect.find_element(By.TAG_NAME, "title").get_attribute("textContent") or "")]
        if not verified or any("tone-warm" not in cls for cls in refused):
            problems.append(f"verified bars {len(verified)}, refused bars' classes {refused}")
        link = self.driver.find_element(By.CSS_SELECTOR, "a#analytics-download").get_attribute("href")
        status, headers, body = http("GET", link, headers={"Cookie": self.cookie()})
        expect(status == 200, f"the download answered {status}")
        lines = [line for line in body.split("\r\n") if line]
        if len(lines) - 1 != self.plan["analytics"]["export_rows"]:
            problems.append(f"the download holds {len(lines) - 1} rows, the ledger has {self.plan['analytics']['export_rows']} purchases and refunds")
        return problems
