"""A local SMTP sink for the e-mail tests (aiosmtpd from PyPI): listens on a free loopback port,
reports it on stderr as `listening <port>`, and writes each message received as one JSON line on
stdout: {"from", "to", "data"}."""
import asyncio
import json
import sys

from aiosmtpd.smtp import SMTP


class Sink:
    async def handle_DATA(self, server, session, envelope):
        line = {"from": envelope.mail_from, "to": envelope.rcpt_tos,
                "data": envelope.content.decode("utf-8", "replace")}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
        return "250 OK"


async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(Sink(), hostname="sink.test"), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sys.stderr.write(f"listening {port}\n")
    sys.stderr.flush()
    await server.serve_forever()

asyncio.run(main())
