"""Purchases found through the header's search (App Store order id, player id), their pages, and a
dead webhook redelivered to a game server that is back. Steps of console_browser.py's walk."""

import json

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from console_http import BOUND, Failure, expect, http


class PurchaseSteps:
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
        status = event.find_element(By.CSS_SELECTOR, "td.status").text.strip()
        expect(status == "dead", f"the given-up event's td.status says {status!r}, not dead (the API's word)")
        problems = self.pages.check("purchase")
        # The newcomer's links: the player's page and the client's, each by name.
        player = self.plan["purchases"]["undelivered"]["player_id"]
        links = {a.get_attribute("href") for a in self.driver.find_elements(By.CSS_SELECTOR, "p#record-links a")}
        if self.console + f"/console/players/{player}" not in links:
            problems.append(f"p#record-links does not link the player's page (it links {sorted(links)})")
        client = self.driver.find_elements(By.CSS_SELECTOR, "p#record-links a span.client[title]")
        if not client or client[0].text.strip() != self.plan["client_name"] or not client[0].get_attribute("title").startswith("rgc_"):
            problems.append("p#record-links does not name the client with its id on hover")
        for section in ["purchase-refund-requests-empty", "consumption-report-empty"]:
            if not self.driver.find_elements(By.CSS_SELECTOR, f"#{section}"):
                problems.append(f"the purchase page has no #{section} saying there is none")
        clients = [cell.text.strip() for cell in self.driver.find_elements(By.CSS_SELECTOR, "table#attempts td.client")]
        if not clients or any(name != self.plan["client_name"] for name in clients):
            problems.append(f"table#attempts names the client {clients}, not {self.plan['client_name']!r}")
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
        # A long id is shortened on the page, its full value on hover (the title).
        for row in self.driver.find_elements(By.CSS_SELECTOR, "table#events tr"):
            if event_id in row.text or row.find_elements(By.CSS_SELECTOR, f"td.event-id [title='{event_id}']"):
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
        # Found and read in one script inside the page: a handle found, then read, goes stale when
        # the document is replaced in between (the redirect's page still arriving).
        notice = self.until(lambda d: d.execute_script(
            "const n = document.querySelector('p.notice[role=status]'); return n ? [n.innerText.trim()] : null"),
            "a notice after redelivering")
        expect(notice[0], "the redeliver notice is empty")
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
