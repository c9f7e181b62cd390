"""What every console page must do for whoever reads it, checked on the page the browser shows:
one h1, a label for every field, readable contrast, no inline script or style in what the server
sent, the contract's security headers, and a screenshot at desktop and phone width (with the HTML
as sent beside it).

Used by console_browser.py; each check returns a list of problems, each naming the page."""

import json
import os
import re
from html.parser import HTMLParser

REQUIRED_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
CSP_DIRECTIVES = {
    "default-src": "'none'", "script-src": "'self'", "style-src": "'self'", "img-src": "'self'",
    "form-action": "'self'", "frame-ancestors": "'none'", "base-uri": "'none'",
}
MINIMUM_CONTRAST = 4.5
# What a person reads on a console page, by the name a failure reports.
TEXT_KINDS = {
    "body text": "body, main p:not(.notice):not(.error), main td, main dd, main dt, label, legend",
    "link": "a",
    "button": "button",
    "table header": "th",
    "notice": ".notice",
    "error": ".error",
}
# Only the viewport changes: switching mobile emulation on makes Chrome load the page again (a second GET).
SIZES = {"desktop": (1280, 800, False), "phone": (390, 844, False)}

# Resolves any CSS color the page uses (rgb, hsl, oklch, named) to sRGB bytes through a canvas,
# composites backgrounds up the ancestors, and returns the elements whose contrast is too low.
CONTRAST_SCRIPT = r"""
const kinds = arguments[0], minimum = arguments[1];
const canvas = document.createElement('canvas'); canvas.width = canvas.height = 1;
const pen = canvas.getContext('2d', {willReadFrequently: true});
function rgba(color) {
  pen.clearRect(0, 0, 1, 1); pen.fillStyle = 'rgba(0,0,0,0)'; pen.fillStyle = color; pen.fillRect(0, 0, 1, 1);
  const d = pen.getImageData(0, 0, 1, 1).data; return [d[0], d[1], d[2], d[3] / 255];
}
function over(top, under) {
  const a = top[3]; return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
}
function background(el) {
  const layers = [];
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (style.backgroundImage !== 'none') return null;  // a gradient or image: not computable here
    const color = rgba(style.backgroundColor);
    if (color[3] > 0) layers.push(color);
    if (color[3] >= 1) break;
  }
  let result = [255, 255, 255, 1];  // the canvas behind an unpainted root is white
  for (const layer of layers.reverse()) result = over(layer, result);
  return result;
}
function luminance(c) {
  const [r, g, b] = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
function ownText(el) {
  return [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim() || el.innerText.trim();
}
const problems = [], measured = {};
for (const [kind, selector] of Object.entries(kinds)) {
  measured[kind] = 0;
  for (const el of document.querySelectorAll(selector)) {
    const style = getComputedStyle(el);
    if (el.getClientRects().length === 0 || style.visibility === 'hidden') continue;
    if (el.tagName !== 'BODY' && !ownText(el)) continue;
    const back = background(el);
    if (!back) continue;
    const fore = over(rgba(style.color), back);
    const [hi, lo] = [luminance(fore), luminance(back)].sort((x, y) => y - x);
    const ratio = (hi + 0.05) / (lo + 0.05);
    measured[kind] += 1;
    if (ratio < minimum) problems.push(`${kind} "${ownText(el).slice(0, 40)}" is ${style.color} on rgb(${back.slice(0, 3).map(Math.round)}): ` +
                                       `contrast ${ratio.toFixed(2)}:1`);
  }
}
return {problems, measured};
"""

UNLABELLED_SCRIPT = r"""
const labelled = new Set([...document.querySelectorAll('label[for]')].map(label => label.htmlFor));
return [...document.querySelectorAll('input, select, textarea')]
  .filter(el => el.type !== 'hidden')
  .filter(el => !(el.id && labelled.has(el.id)) && !(el.getAttribute('aria-label') || '').trim())
  .map(el => el.outerHTML.slice(0, 120) + (el.closest('label') ? ' (inside a <label> without for=, which the contract does not count)' : ''));
"""


class InlineCode(HTMLParser):
    """Finds what the CSP forbids in the markup itself: script or style elements with content,
    style attributes and on… event handler attributes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found, self.open_element = [], None

    def handle_starttag(self, tag, attrs):
        for name, _ in attrs:
            if name == "style" or re.fullmatch(r"on[a-z]+", name):
                self.found.append(f'<{tag} {name}=…>')
        self.open_element = tag if tag in ("script", "style") else None

    def handle_data(self, data):
        if self.open_element and data.strip():
            self.found.append(f"inline <{self.open_element}>{data.strip()[:40]}…")

    def handle_endtag(self, tag):
        self.open_element = None


def inline_code(html):
    parser = InlineCode()
    parser.feed(html)
    return parser.found


def header_problems(headers):
    """The contract's headers on one console response (`headers` with lower-cased names)."""
    problems = []
    for name, value in REQUIRED_HEADERS.items():
        if headers.get(name, "").strip().lower() != value:
            problems.append(f"header {name} is {headers.get(name)!r}, not {value!r}")
    csp = headers.get("content-security-policy")
    if not csp:
        return problems + ["no Content-Security-Policy header"]
    directives = dict((part.split(None, 1) + [""])[:2] for part in (p.strip() for p in csp.split(";")) if part)
    for name, value in CSP_DIRECTIVES.items():
        if directives.get(name, "").strip() != value:
            problems.append(f"CSP {name} is {directives.get(name)!r}, not {value!r} (whole policy: {csp})")
    return problems


class PageChecks:
    def __init__(self, driver, network, screenshots):
        self.driver, self.network, self.screenshots = driver, network, screenshots
        self.secrets = []  # strings no page may show (a client secret, once its one page is gone)
        self.pages = []
        os.makedirs(screenshots, exist_ok=True)

    def check(self, page, allow_secret=False):
        """Every check on the page the browser shows now; its screenshots are taken last."""
        self.pages.append(page)
        problems = []
        h1s = self.driver.execute_script("return Array.from(document.querySelectorAll('h1'), h => h.innerText.trim())")
        if len(h1s) != 1:
            problems.append(f"{len(h1s)} h1 elements ({h1s}), not exactly one")
        problems += [f"field without a label[for] or aria-label: {field}" for field in self.driver.execute_script(UNLABELLED_SCRIPT)]
        contrast = self.driver.execute_script(CONTRAST_SCRIPT, TEXT_KINDS, MINIMUM_CONTRAST)
        problems += contrast["problems"][:5]
        if len(contrast["problems"]) > 5:
            problems.append(f"and {len(contrast['problems']) - 5} more elements below {MINIMUM_CONTRAST}:1")
        document = self.network.current_document(self.driver.current_url)
        if document is None:
            problems.append("the browser's network log has no response for this page")
        else:
            problems += header_problems(document["headers"])
            html = self.network.body(document)
            if html is None:
                problems.append("DevTools no longer holds the HTML the server sent, so it could not be checked")
                html = ""
            problems += [f"the HTML sent has {found}" for found in inline_code(html)]
            with open(os.path.join(self.screenshots, f"{page}.html"), "w") as file:  # beside its screenshots, to see what failed
                file.write(html)
            if not allow_secret:
                problems += [f"the page shows a client secret ({secret[:8]}…)" for secret in self.secrets if secret in html]
        problems += self.screenshot(page)
        return [f"{page} page ({self.driver.current_url}): {problem}" for problem in problems]

    def screenshot(self, page):
        """Screenshots at each width; returns the widths at which the page scrolls sideways."""
        overflowing = []
        for size, (width, height, mobile) in SIZES.items():
            self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
            self.driver.save_screenshot(os.path.join(self.screenshots, f"{page}-{size}.png"))
            scroll_width = self.driver.execute_script("return document.documentElement.scrollWidth")
            if scroll_width > width:
                overflowing.append(f"at {width} px wide the page is {scroll_width} px wide: it scrolls sideways")
        width, height, mobile = SIZES["desktop"]
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
        return overflowing


class NetworkLog:
    """Chrome's performance log, read as it grows: every request the pages made, and every
    document response with its status, headers and (through DevTools) the body as sent."""

    def __init__(self, driver, origin):
        self.driver, self.origin = driver, origin
        self.requests, self.documents, self.redirects = [], [], []

    def drain(self):
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            method, params = message.get("method"), message.get("params", {})
            if method == "Network.requestWillBeSent":
                request = params["request"]
                self.requests.append(request["url"])
                if "redirectResponse" in params:
                    self.redirects.append({"from": params["redirectResponse"]["url"], "to": request["url"],
                                           "status": params["redirectResponse"]["status"]})
            elif method == "Network.responseReceived" and params.get("type") == "Document":
                response = params["response"]
                self.documents.append({"url": response["url"], "status": response["status"], "request_id": params["requestId"],
                                       "headers": {k.lower(): v for k, v in response["headers"].items()}})

    def current_document(self, url):
        self.drain()
        return next((d for d in reversed(self.documents) if d["url"] == url), None)

    def body(self, document):
        """The bytes the server sent, not the page as scripts may have changed it since."""
        try:
            return self.driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": document["request_id"]})["body"]
        except Exception:  # evicted from DevTools' buffer
            return None

    def foreign_requests(self):
        self.drain()
        return sorted({url for url in self.requests if not url.startswith(self.origin + "/")})
