"""A stand-in SMTP server for tests: plain SMTP (no TLS, no AUTH) on a free port of 127.0.0.1,
in a thread of the test process. It accepts every mail and keeps it, parsed, in `messages`, so
that a test sees what Django's SMTP backend really sent over a socket.
"""

from __future__ import annotations

import socketserver
import threading
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Self


class _Session(socketserver.StreamRequestHandler):
    server: _Server

    def reply(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode())

    def handle(self) -> None:
        self.reply("220 localhost stand-in SMTP")
        recipients: list[str] = []
        while True:
            line = self.rfile.readline()
            if not line:
                return
            command = line.decode(errors="replace").strip()
            verb = command.split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250 localhost")
            elif verb == "MAIL":
                recipients = []
                self.reply("250 OK")
            elif verb == "RCPT":
                recipients.append(command.partition(":")[2].strip().strip("<>"))
                self.reply("250 OK")
            elif verb == "DATA":
                self.reply("354 End data with <CR><LF>.<CR><LF>")
                self.server.keep(recipients, self.read_data())
                self.reply("250 OK: queued")
            elif verb in ("RSET", "NOOP"):
                self.reply("250 OK")
            elif verb == "QUIT":
                self.reply("221 Bye")
                return
            else:
                self.reply("502 Command not implemented")

    def read_data(self) -> bytes:
        lines = []
        while True:
            line = self.rfile.readline()
            if not line or line in (b".\r\n", b".\n"):
                return b"".join(lines)
            lines.append(line[1:] if line.startswith(b".") else line)  # dot-stuffing


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Session)
        self.messages: list[EmailMessage] = []
        # The envelope's recipients (RCPT TO) of each message.
        self.recipients: list[list[str]] = []
        self.lock = threading.Lock()

    def keep(self, recipients: list[str], data: bytes) -> None:
        message = message_from_bytes(data, policy=policy.default)
        with self.lock:
            self.messages.append(message)  # type: ignore[arg-type]
            self.recipients.append(recipients)


class FakeSMTP:
    def __init__(self) -> None:
        self._server = _Server()
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def messages(self) -> list[EmailMessage]:
        with self._server.lock:
            return list(self._server.messages)

    @property
    def recipients(self) -> list[list[str]]:
        with self._server.lock:
            return list(self._server.recipients)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
