"""Time spent, as people read it: "45 s", "3 min 05 s", "2 h 07 min"."""

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | int | None) -> str:
    if seconds is None:
        return "\u2013"  # an en dash: unknown
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
