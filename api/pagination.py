"""The API's one pagination: pages of PAGE_SIZE (50) by default, `?page_size=` up to 200."""

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination


def _page_parameter(request, name: str) -> int | None:
    """A page parameter as a whole number of 1 or more; None when absent; a 400 otherwise
    (DRF's own pagination read `page=0` as a 404 and `page_size=-5` as no size at all)."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ValidationError({name: ["A whole number of 1 or more."]})
    return int(raw)


class PageSizePagination(PageNumberPagination):
    """`?page=N&page_size=M`: both whole numbers of 1 or more (anything else is a 400); M is
    capped at `max_page_size`, so a client cannot ask for the whole table in one page; a page
    past the last is a 404."""

    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request) -> int:
        size = _page_parameter(request, self.page_size_query_param)
        return self.page_size if size is None else min(size, self.max_page_size)

    def get_page_number(self, request, paginator) -> int:
        return _page_parameter(request, self.page_query_param) or 1

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["description"] = (
                    f"Results per page; {self.page_size} when not given, at most "
                    f"{self.max_page_size} (a larger number gives {self.max_page_size})."
                )
            else:
                parameter["description"] = "A page number, from 1; a page past the last is a 404."
        return parameters
