"""Each study item's number of assignments (`StudyItem.holders`), the order in which claims take
items. Every service that adds or removes assignments counts their items again here, inside its
own transaction."""

from collections.abc import Iterable

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from labeling.models import Assignment, StudyItem

CHUNK = 5000


def items_holders_recount(*, item_ids: Iterable[int]) -> None:
    """Set each item's `holders` to the number of its assignments, counted now (not added to:
    a count that went wrong is right again at the next change of the item)."""
    ids = sorted(set(item_ids))
    counted = (
        Assignment.objects.filter(item=OuterRef("pk"))
        .order_by()
        .values("item")
        .annotate(n=Count("id"))
        .values("n")
    )
    # In chunks: SQLite takes at most 32,766 parameters a statement.
    for start in range(0, len(ids), CHUNK):
        StudyItem.objects.filter(pk__in=ids[start : start + CHUNK]).update(
            holders=Coalesce(Subquery(counted), 0)
        )
