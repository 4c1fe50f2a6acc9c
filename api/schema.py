"""The schema's inspector: drf-spectacular's, with every error an operation can answer
documented in the one error shape (api.exception_handler), so that a client and the
conformance tests (tests/api/test_schemathesis.py) know each status before they meet it.

An operation's own @extend_schema responses stay as they are (their descriptions say more);
the inspector adds only the codes they leave out, by what the operation takes: a body or query
parameters can be refused (400), a body that is not JSON is a 415, a path parameter names
something that may not exist for the caller (404), as may a page past the last of a list.
"""

from drf_spectacular import openapi
from drf_spectacular.utils import OpenApiResponse

from api.exception_handler import ErrorSerializer

BODY_METHODS = ("POST", "PUT", "PATCH")


class AutoSchema(openapi.AutoSchema):
    def _get_parameters(self) -> list[dict]:
        parameters = super()._get_parameters()
        for parameter in parameters:
            # DRF and django-filter read an optional `?name=` as the parameter not given, so
            # an empty value is allowed, whatever a non-blank field would say.
            schema = parameter.get("schema", {})
            if (
                parameter["in"] == "query"
                and not parameter.get("required")
                and schema.get("type") == "string"
            ):
                if schema.get("minLength") == 1:
                    del schema["minLength"]
                if "pattern" in schema:
                    schema["pattern"] = f"^$|{schema['pattern']}"
        return parameters

    def _get_response_bodies(self, direction: str = "response") -> dict:
        responses = super()._get_response_bodies(direction)
        for code, description in self._error_responses().items():
            if code not in responses:
                responses[code] = self._get_response_for_code(
                    OpenApiResponse(ErrorSerializer, description=description),
                    code,
                    direction=direction,
                )
        return dict(sorted(responses.items()))

    def _error_responses(self) -> dict[str, str]:
        parameters = self._get_parameters()
        takes_body = self.method in BODY_METHODS and bool(self._get_request_body())
        in_query = any(parameter["in"] == "query" for parameter in parameters)
        in_path = any(parameter["in"] == "path" for parameter in parameters)
        errors = {}
        if takes_body or in_query:
            errors["400"] = "not valid: `details` names each field or query parameter refused"
        auth = self.get_auth()
        if auth and {} not in auth:
            errors["401"] = "no credentials, or a token that is unknown, revoked or expired"
        errors["403"] = "your role does not allow it (or a session request without its CSRF token)"
        if in_path:
            errors["404"] = "no such object for you"
        elif self._is_list_view() and self._get_paginator() is not None:
            errors["404"] = "a page past the last"
        if takes_body:
            errors["415"] = "a body that is not JSON"
        errors["429"] = "too many requests; try again after Retry-After seconds"
        return errors
