"""The app shell's parts that depend on who is looking: the study's tabs and the study switcher.

Every page of a study shows the same tabs, computed here once per page from the roles the study
carries (labeling.access loads a study with the user's roles, so asking again costs no query),
instead of each view passing its own flags to a shared include."""

from dataclasses import dataclass

from django import template
from django.urls import reverse

from labeling.access import (
    MANAGER,
    study_can_label,
    study_can_see_agreement,
    study_names_visible_to,
    study_roles,
)
from labeling.models import Study

register = template.Library()

SWITCHER_SIZE = 12  # the newest studies; the home page lists them all


@dataclass(frozen=True)
class Tab:
    label: str
    url_name: str
    # Pages reached from this tab, marked as being in it (an item is labeled from the queue).
    also_current: tuple[str, ...] = ()


def _tabs_for(roles: set[str]) -> list[Tab]:
    """The study's pages a user with these roles may open, in the order of the work."""
    labels = study_can_label(roles=roles)
    oversees = study_can_see_agreement(roles=roles)
    manages = MANAGER in roles
    tabs = [Tab("Overview", "study_overview")]
    if labels:
        tabs.append(Tab("My queue", "queue", ("next_item", "label_item")))
    if oversees:
        tabs += [
            Tab("Agreement", "agreement"),
            Tab("Disagreements", "disagreements", ("item_resolve", "item_upstream_review")),
            Tab("Report", "report"),
        ]
    if labels or oversees:
        tabs.append(Tab("To re-check", "study_recheck"))
    if manages:
        tabs += [
            Tab("Codebook", "study_codebook"),
            Tab("Proposals", "study_proposals"),
            Tab("Members", "study_members"),
            Tab("Machines", "study_machines", ("machine_run",)),
            Tab("Export", "study_export", ("study_export_jobs",)),
        ]
    return tabs


@register.inclusion_tag("web/_study_nav.html", takes_context=True)
def study_tabs(context: template.Context) -> dict:
    """The tabs of the study in the page's context, the current one marked; none outside a
    study (and on an error page, whose context may have no request)."""
    study = context.get("study")
    request = context.get("request")
    if not isinstance(study, Study) or request is None or not request.user.is_authenticated:
        return {"tabs": []}
    match = getattr(request, "resolver_match", None)
    current = match.url_name if match else None
    roles = study_roles(study=study, user=request.user)
    return {
        "study": study,
        "tabs": [
            {
                "label": tab.label,
                "url": reverse(tab.url_name, args=[study.slug]),
                "current": current == tab.url_name or current in tab.also_current,
            }
            for tab in _tabs_for(roles)
        ],
    }


@register.simple_tag(takes_context=True)
def switcher_studies(context: template.Context) -> list[Study]:
    """The newest studies the user may open, for the switcher in the top bar (one query)."""
    request = context.get("request")
    if request is None or not request.user.is_authenticated:
        return []
    return study_names_visible_to(user=request.user, limit=SWITCHER_SIZE)
