"""Personal API tokens over the API: list your own, create one (its key is in the answer, once),
revoke one. Thin: the rules are in accounts.services and accounts.selectors.

Creating a token needs a signed-in session: a token cannot mint further tokens, so a stolen key
gives no lasting foothold once it is revoked. Listing and revoking work with either.
"""

from django_filters import rest_framework as filters
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from accounts.models import MAX_TOKEN_NAME, ApiToken
from accounts.selectors import api_token_get_for_user, api_token_list_for_user
from accounts.services import MAX_ACTIVE_TOKENS, api_token_create, api_token_revoke
from api.exception_handler import ErrorSerializer


class ApiTokenSerializer(serializers.ModelSerializer):
    active = serializers.BooleanField(
        source="is_active", read_only=True, help_text="neither revoked nor expired"
    )

    class Meta:
        model = ApiToken
        fields = [
            "id", "name", "key_prefix", "created_at", "last_used_at", "expires_at",
            "revoked_at", "active",
        ]  # fmt: skip
        read_only_fields = fields


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    key = serializers.CharField(
        read_only=True,
        help_text="the key, shown this once: it is not stored and cannot be read again",
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=MAX_TOKEN_NAME, help_text="what the token is for")
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="in the future; null: never"
    )


class ApiTokenFilter(filters.FilterSet):
    # A choice, not a BooleanFilter: that one ignores a value it cannot read, and an unknown
    # filter value is a 400 everywhere in the API.
    active = filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_active",
        help_text="true: usable tokens only; false: revoked or expired ones",
    )

    class Meta:
        model = ApiToken
        fields = ["active"]

    def filter_active(self, tokens, name: str, value: str):
        usable = ApiToken.objects.active().values("pk")
        return tokens.filter(pk__in=usable) if value == "true" else tokens.exclude(pk__in=usable)


class SignedInSession(BasePermission):
    """The request came with a session cookie, not a token."""

    message = "Tokens are created in a signed-in session (the account page), not with a token."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.successful_authenticator, SessionAuthentication)


def _token_id(value: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise NotFound("No such token.") from None


class ApiTokenViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Your own API tokens. Another user's token is a 404 for you, whoever you are: a
    superuser revokes other people's tokens in the admin."""

    serializer_class = ApiTokenSerializer
    filterset_class = ApiTokenFilter
    queryset = ApiToken.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return ApiToken.objects.none()
        return api_token_list_for_user(user=self.request.user)

    def get_permissions(self):
        if self.action == "create":
            return [IsAuthenticated(), SignedInSession()]
        return super().get_permissions()

    @extend_schema(
        request=ApiTokenCreateSerializer,
        responses={
            201: ApiTokenCreatedSerializer,
            400: OpenApiResponse(
                ErrorSerializer,
                description=f"not valid, or you have {MAX_ACTIVE_TOKENS} active tokens already",
            ),
            403: OpenApiResponse(ErrorSerializer, description="not a signed-in session"),
        },
        description=(
            "Create a token. The answer holds its key, this once: only a hash is stored. Send "
            "it as `Authorization: Token <key>`. Needs a signed-in session (a token cannot "
            f"create tokens); at most {MAX_ACTIVE_TOKENS} active tokens a user."
        ),
    )
    def create(self, request, *args, **kwargs):
        body = ApiTokenCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        token, key = api_token_create(
            user=request.user,
            name=body.validated_data["name"],
            expires_at=body.validated_data["expires_at"],
        )
        token.key = key
        return Response(ApiTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=None,
        responses={
            204: None,
            404: OpenApiResponse(ErrorSerializer, description="not one of your tokens"),
        },
        description="Revoke one of your tokens: it stops working at once. Revoking twice is fine.",
    )
    def destroy(self, request, *args, **kwargs):
        token = api_token_get_for_user(user=request.user, token_id=_token_id(kwargs["pk"]))
        if token is None:
            raise NotFound("No such token.")
        api_token_revoke(token=token, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
