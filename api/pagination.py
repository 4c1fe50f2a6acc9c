"""The API's one pagination: pages of PAGE_SIZE (50) by default, `?page_size=` up to 200."""

from rest_framework.pagination import PageNumberPagination


class PageSizePagination(PageNumberPagination):
    """`?page=N&page_size=M`: M is capped at `max_page_size`, so a client cannot ask for the
    whole table in one page."""

    page_size_query_param = "page_size"
    max_page_size = 200
