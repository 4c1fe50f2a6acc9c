"""What web/_upstream_change.html shows: the panel is one include on the labeling page and on
the adjudication page, so it reads its own data here rather than in each page's view."""

from typing import Any

from django import template

from labeling.access import MANAGER, study_roles
from labeling.models import Assignment, StudyItem
from labeling.upstream_changes import (
    item_upstream_change,
    item_upstream_change_for_annotator,
    item_upstream_history,
    item_upstream_waiting_for,
)

register = template.Library()


@register.simple_tag(takes_context=True)
def upstream_change_panel(
    context: template.Context, item: StudyItem, assignment: Assignment | None = None
) -> dict[str, Any] | None:
    """The panel's data, or None when there is nothing to show. With `assignment` (the labeling
    page): the open change, to the annotator who labeled the item before it, and no query for
    an item that is not flagged. Without (the adjudication page, for managers and
    adjudicators): the open change, who still has to look again, and the earlier changes."""
    if assignment:  # "" when the page has none
        diff = item_upstream_change_for_annotator(assignment=assignment)
        if diff is None:
            return None
        return {
            "diff": diff,
            "for_annotator": True,
            "looked_again": diff.change.pk is not None
            and diff.change.checks.filter(user_id=assignment.annotator_id).exists(),
            "final": assignment.status == Assignment.Status.SUBMITTED
            and item.status != StudyItem.Status.OPEN,
        }
    history = item_upstream_history(item=item)
    diff = item_upstream_change(item=item)
    if diff is None and not history:
        return None
    user = context["request"].user
    current = next((change for change in history if change.cleared_at is None), None)
    return {
        "diff": diff,
        "for_annotator": False,
        "checks": list(current.checks.all()) if current else [],
        "waiting_for": item_upstream_waiting_for(item=item),
        "earlier": [change for change in history if change.cleared_at is not None],
        "can_review": diff is not None
        and MANAGER in study_roles(study=context["study"], user=user),
    }
