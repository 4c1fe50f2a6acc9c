"""Links to outside pages only when they are web links."""

from django import template

from corpus.records import is_http_url

register = template.Library()


@register.filter
def http_url(url: str | None) -> str:
    """The URL when it is http(s), else "": a javascript: or data: URL stored before the import
    refused them must not become a link."""
    return url if is_http_url(url) else ""
