"""The API's JSON renderer writes what DRF's writes, byte for byte, faster."""

import datetime
import decimal
import json
import uuid
from collections import OrderedDict

import numpy as np
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer as DRFJSONRenderer
from rest_framework.test import APIClient
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from api.renderers import JSONRenderer


def _payload() -> ReturnDict:
    utc, plus_two = datetime.UTC, datetime.timezone(datetime.timedelta(hours=2))
    return ReturnDict(
        {
            "int": 1,
            2: "a key that is not a string",
            "utc": datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=utc),
            "offset": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=plus_two),
            "naive": datetime.datetime(2026, 1, 1),
            "date": datetime.date(2026, 1, 2),
            "time": datetime.time(1, 2, 3),
            "decimal": decimal.Decimal("1.50"),
            "uuid": uuid.UUID(int=5),
            "lazy": gettext_lazy("Not found."),
            "numpy": [np.float64(0.25), np.int64(3), np.array([1, 2])],
            "text": "é \u2028 \u2029 </script>",
            "rows": ReturnList([OrderedDict(b=2.5, c=None, d=True)], serializer=None),
            "floats": [0.1, 1e300, -0.0, 1 / 3],
            "tuple": (1, 2),
            "frozenset": frozenset([1]),
        },
        serializer=None,
    )


def test_it_writes_what_drfs_renderer_writes():
    assert JSONRenderer().render(_payload()) == DRFJSONRenderer().render(_payload())


def test_the_line_separators_are_escaped_as_javascript_needs():
    rendered = JSONRenderer().render({"text": "a\u2028b\u2029c"})
    assert rendered == b'{"text":"a\\u2028b\\u2029c"}'


def test_indented_output_and_what_orjson_refuses_go_to_drfs_renderer():
    indented = JSONRenderer().render({"a": [1]}, "application/json; indent=2")
    assert indented == DRFJSONRenderer().render({"a": [1]}, "application/json; indent=2")
    huge = {"n": 2**70}
    assert JSONRenderer().render(huge) == DRFJSONRenderer().render(huge)


def test_nothing_is_an_empty_body_and_nan_is_null():
    assert JSONRenderer().render(None) == b""
    assert json.loads(JSONRenderer().render({"kappa": float("nan")})) == {"kappa": None}


def test_the_api_answers_with_it(study, people):
    client = APIClient()
    client.force_authenticate(people["annotator1"])
    response = client.get("/api/studies/")
    assert response.status_code == 200 and response.data["results"]
    assert isinstance(response.accepted_renderer, JSONRenderer)
    assert response.content == DRFJSONRenderer().render(response.data)
