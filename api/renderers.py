"""The API's JSON renderer: DRF's, encoding with orjson.

DRF's encodes with the standard library's json module, which took a tenth of the time of a
queue page (100 assignments with their labels) and more of the agreement report's. orjson writes
the same JSON: what it does not know itself (dates and times, lazy translations, decimals, numpy
values) goes to DRF's encoder, so it reads exactly as before; keys that are not strings become
strings as with json. Indented output (`Accept: application/json; indent=4`, the browsable
API) and anything orjson refuses (an integer beyond 64 bits) go to DRF's renderer unchanged.
A NaN, which DRF's renderer refuses with a 500, is written as null.
"""

from typing import Any

import orjson
from rest_framework import renderers
from rest_framework.utils import encoders

_ENCODER = encoders.JSONEncoder()
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME


class JSONRenderer(renderers.JSONRenderer):
    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: dict | None = None,
    ) -> bytes:
        if data is None or self.get_indent(accepted_media_type, renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        try:
            encoded = orjson.dumps(data, default=_ENCODER.default, option=_OPTIONS)
        except TypeError:
            return super().render(data, accepted_media_type, renderer_context)
        # As DRF's: U+2028 and U+2029 escaped, so that the JSON is also valid JavaScript.
        return encoded.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
