"""Verifies an access token the way an independent relying party would (PyJWT): fetches the
OpenID configuration and the JWKS over HTTP, then checks signature, issuer, audience and expiry.
Usage: verify_jwt.py <base url> <audience> <token>; prints the claims as JSON."""
import json
import sys
import urllib.request

import jwt

base, audience, token = sys.argv[1], sys.argv[2], sys.argv[3]
with urllib.request.urlopen(base + "/.well-known/openid-configuration") as response:
    configuration = json.load(response)
with urllib.request.urlopen(base + "/.well-known/jwks.json") as response:
    jwks = json.load(response)
kid = jwt.get_unverified_header(token)["kid"]
key = next(jwt.PyJWK(k) for k in jwks["keys"] if k["kid"] == kid)
claims = jwt.decode(token, key=key.key, algorithms=["ES256"], audience=audience, issuer=configuration["issuer"],
                    options={"require": ["exp", "iat", "iss", "sub", "aud"]})
print(json.dumps(claims))
