// A game server's refund-callback endpoint, checking each call with the Alogame gateway contract's own
// verifyAlogameSignature ("What Alogame sends"), copied in spirit from that page only.
// Not product code. Environment: PORT, CLIENT_ID, CLIENT_SECRET. Prints one JSON line per call:
// {"verified": bool, "body": <parsed body>}; answers 200 when verified, 401 otherwise.
import { createHmac, createHash, timingSafeEqual } from 'crypto';
import http from 'http';

const { PORT, CLIENT_ID, CLIENT_SECRET } = process.env;

function verifyAlogameSignature(req) {
  const { 'x-client-id': clientId, 'x-timestamp': timestamp, 'x-signature': signature } = req.headers;
  if (clientId !== CLIENT_ID) return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false; // same 5-min replay window

  const bodyHash  = createHash('sha256').update(req.rawBody).digest('hex');
  const message   = `${clientId}.${timestamp}.${bodyHash}`;
  const expected  = createHmac('sha256', CLIENT_SECRET).update(message).digest('hex');

  const given = Buffer.from(signature || '', 'hex');
  const wanted = Buffer.from(expected, 'hex');
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    req.rawBody = Buffer.concat(chunks);
    const verified = verifyAlogameSignature(req);
    let body;
    try { body = JSON.parse(req.rawBody.toString('utf8')); } catch { body = null; }
    console.log(JSON.stringify({ verified, body }));
    res.writeHead(verified ? 200 : 401).end();
  });
}).listen(Number(PORT), '127.0.0.1', () => console.log(JSON.stringify({ listening: Number(PORT) })));
