from django.apps import AppConfig


class CommonConfig(AppConfig):
    name = "common"

    def ready(self) -> None:
        from django.core.servers import basehttp

        # The development server (runserver, which `make run` serves with, and the tests' live
        # server) writes a response in several small packets; with Nagle's algorithm on, the
        # last waited for the client's delayed acknowledgement, 40 ms more on most requests.
        # socketserver's own switch sets TCP_NODELAY on every connection the server accepts.
        basehttp.WSGIRequestHandler.disable_nagle_algorithm = True
