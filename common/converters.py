"""Path converters for ids in URLs.

Django's `<int:...>` takes any run of digits; an id beyond what a database integer holds
(2^63 - 1) then reaches the query, and SQLite raises OverflowError (a 500) where PostgreSQL
finds nothing. `<id:...>` matches only ids a row can have, so a larger one is a plain 404.
"""

ID_MAX = 2**63 - 1


class IdConverter:
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > ID_MAX:
            # A ValueError here makes the pattern not match: Django answers 404.
            raise ValueError(f"{value} is larger than any id")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
