"""Requests made outside the browser (as curl would), the public API's request signing, and the
failure every step of the walk raises. Used by console_browser.py and its steps."""

import hashlib
import hmac
import time
import urllib.error
import urllib.parse
import urllib.request

BOUND = 30  # seconds any one condition may take on a slow shared machine


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
