"""Links to outside pages only when they are web links."""

from django import template

from common.text import issue_reference_parse
from corpus.records import is_http_url

register = template.Library()


@register.filter
def http_url(url: str | None) -> str:
    """The URL when it is http(s), else "": a javascript: or data: URL stored before the import
    refused them must not become a link."""
    return url if is_http_url(url) else ""


@register.filter
def example_url(example: str | None) -> str:
    """Where a codebook example links: an issue reference ("owner/name#123") to the issue on
    GitHub, a web link to itself; anything else is shown as text, without a link."""
    try:
        owner, name, number = issue_reference_parse(example or "")
    except ValueError:
        return http_url(example)
    return f"https://github.com/{owner}/{name}/issues/{number}"
