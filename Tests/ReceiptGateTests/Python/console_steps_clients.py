"""A client made through the console's form, shown in its list and page, then disabled, which the
public API must honour. Steps of console_browser.py's walk."""

import re
import time

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from console_http import BOUND, expect, signed_get


class ClientSteps:
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
