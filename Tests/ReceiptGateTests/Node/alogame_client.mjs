// A game server's call to the Alogame IAP Gateway, written only from the Alogame gateway contract's Node.js example
// ("Request signing"), so our reading of the contract is checked by code we did not
// write in Swift. Not product code.
//
// Environment: GATEWAY_URL, CLIENT_ID, CLIENT_SECRET, BODY (the JSON text to send, verbatim),
// optionally TIMESTAMP_SHIFT (seconds added to the timestamp) and SEND_TWICE=1 (replay).
// Prints one JSON line per response: {"status": ..., "body": ...}.
import { createHmac, createHash } from 'crypto';

const { GATEWAY_URL, CLIENT_ID, CLIENT_SECRET, BODY } = process.env;
const body = BODY;

const timestamp = String(Math.floor(Date.now() / 1000) + Number(process.env.TIMESTAMP_SHIFT || 0));
const bodyHash  = createHash('sha256').update(body).digest('hex');
const message   = `${CLIENT_ID}.${timestamp}.${bodyHash}`;
const signature = createHmac('sha256', CLIENT_SECRET).update(message).digest('hex');

const times = process.env.SEND_TWICE === '1' ? 2 : 1;
for (let i = 0; i < times; i++) {
  const res = await fetch(`${GATEWAY_URL}/iap/gateway/verify`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Client-ID':  CLIENT_ID,
      'X-Timestamp':  timestamp,
      'X-Signature':  signature,
    },
    body,
  });
  const text = await res.text();
  let parsed;
  try { parsed = JSON.parse(text); } catch { parsed = text; }
  console.log(JSON.stringify({ status: res.status, body: parsed }));
}
