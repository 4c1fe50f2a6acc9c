from django.apps import AppConfig


class WebConfig(AppConfig):
    """The web pages: views, forms, templates and static files over the domain apps."""

    name = "web"
