"""The development server that `make run` serves with answers without waiting on Nagle's
algorithm: every connection it accepts has TCP_NODELAY set (common.apps)."""

import http.client
import socket
import threading

from django.core.servers import basehttp


def _hello(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


class _RecordingServer(basehttp.WSGIServer):
    """Django's development server, recording each connection's TCP_NODELAY before closing it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.nodelay: list[int] = []

    def shutdown_request(self, request) -> None:
        self.nodelay.append(request.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        super().shutdown_request(request)


def test_every_connection_of_the_development_server_sends_without_delay():
    server = _RecordingServer(("127.0.0.1", 0), basehttp.WSGIRequestHandler)
    server.set_app(_hello)
    thread = threading.Thread(target=server.handle_request)
    thread.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        connection.request("POST", "/", body=b"x=1")
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, b"hello")
        connection.close()
        thread.join(timeout=10)
    finally:
        server.server_close()
    assert server.nodelay == [1]
