"""Signing in and out, and what guards a session: the contract's headers, CSRF on every POST,
and no request leaving the console's origin. Steps of console_browser.py's walk."""

import re
import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from console_http import expect, http
from console_page_checks import header_problems


class SessionSteps:
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
