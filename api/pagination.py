"""The API's pagination: pages of PAGE_SIZE (50) by default, `?page_size=` up to 200; the lists
that grow with the corpus leave out the count (UncountedPagination)."""

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param


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


class UncountedPagination(PageSizePagination):
    """The same pages without `count`, for the lists that grow with the corpus and the studies
    (issues, assignments): counting every row a user may see cost more than reading the page
    and grew with the size (0.3 s at 20k issues). A page is read with one row more, to know
    whether another follows."""

    def paginate_queryset(self, queryset, request, view=None) -> list:
        self.request = request
        size = self.get_page_size(request)
        self.number = self.get_page_number(request, None)
        start = (self.number - 1) * size
        rows = list(queryset[start : start + size + 1])
        if not rows and self.number > 1:
            raise NotFound("A page past the last.")
        self.has_next = len(rows) > size
        return rows[:size]

    def get_paginated_response(self, data) -> Response:
        return Response(
            {"next": self.get_next_link(), "previous": self.get_previous_link(), "results": data}
        )

    def get_next_link(self) -> str | None:
        if not self.has_next:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(url, self.page_query_param, self.number + 1)

    def get_previous_link(self) -> str | None:
        if self.number == 1:
            return None
        url = self.request.build_absolute_uri()
        if self.number == 2:
            return remove_query_param(url, self.page_query_param)
        return replace_query_param(url, self.page_query_param, self.number - 1)

    def get_paginated_response_schema(self, schema: dict) -> dict:
        paginated = super().get_paginated_response_schema(schema)
        del paginated["properties"]["count"]
        paginated["required"] = [name for name in paginated["required"] if name != "count"]
        return paginated
