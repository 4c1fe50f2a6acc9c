"""Invitations over the API: managers make, list and withdraw a study's invitations; anyone with
a token accepts it. Thin: the rules are in labeling.services.invitations."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, Throttled
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.services import user_names_change
from api.exception_handler import ErrorSerializer
from api.resolutions import ERRORS
from api.setup import MANAGERS
from common.middleware import client_address
from labeling.models import Invitation, Membership
from labeling.services.invitations import (
    invitation_accept,
    invitation_attempt_allowed,
    invitation_create,
    invitation_get_by_token,
    invitation_guess_record,
    invitation_join,
    invitation_path,
    invitation_revoke,
    invitation_state,
)


class InvitationCreateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Membership.Role.values)
    email = serializers.EmailField(
        required=False, allow_blank=True, help_text="mailed there when mail is configured"
    )


class InvitationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    role = serializers.CharField()
    email = serializers.CharField(allow_blank=True)
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    state = serializers.CharField(help_text="pending, accepted, expired or revoked")
    accepted_by = serializers.CharField(allow_null=True)


class NewInvitationSerializer(InvitationSerializer):
    token = serializers.CharField(help_text="shown once; the link holds it")
    link = serializers.CharField()
    mailed = serializers.BooleanField()


class AcceptSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=100)
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, write_only=True)
    first_name = serializers.CharField(max_length=150, required=False, allow_blank=True)
    last_name = serializers.CharField(max_length=150, required=False, allow_blank=True)


class AcceptedSerializer(serializers.Serializer):
    username = serializers.CharField()
    study = serializers.CharField()
    role = serializers.CharField()


def _row(invitation: Invitation) -> dict:
    return {
        "id": invitation.pk,
        "role": invitation.role,
        "email": invitation.email,
        "created_by": invitation.created_by.get_username() if invitation.created_by else None,
        "created_at": invitation.created_at,
        "expires_at": invitation.expires_at,
        "state": invitation_state(invitation),
        "accepted_by": invitation.accepted_by.get_username() if invitation.accepted_by else None,
    }


INVITATION_ID = OpenApiParameter("invitation_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class StudyInvitationActions:
    """A study's invitations, mixed into StudyViewSet."""

    @extend_schema(
        methods=["get"],
        responses={200: InvitationSerializer(many=True), 403: ERRORS[403], 404: ERRORS[404]},
        description="The study's invitations, newest first, with their state. Managers.",
    )
    @extend_schema(
        methods=["post"],
        request=InvitationCreateSerializer,
        responses={201: NewInvitationSerializer, **ERRORS},
        description=(
            "Make an invitation link for a role, valid 7 days, usable once; mailed to `email` "
            "when mail is configured. The token is in this answer only. At most 50 an hour per "
            "manager. Logged. Managers of the study."
        ),
    )
    @action(detail=True, methods=["get", "post"], permission_classes=MANAGERS)
    def invitations(self, request, slug=None):
        study = self.get_object()
        if request.method == "GET":
            invitations = Invitation.objects.filter(study=study).select_related(
                "created_by", "accepted_by"
            )
            page = self.paginate_queryset(invitations)
            return self.get_paginated_response(
                InvitationSerializer([_row(i) for i in page], many=True).data
            )
        body = InvitationCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        new = invitation_create(
            study=study,
            by=request.user,
            role=body.validated_data["role"],
            email=body.validated_data.get("email", ""),
            base_url=request.build_absolute_uri("/").rstrip("/"),
        )
        data = {
            **_row(new.invitation),
            "token": new.token,
            "link": request.build_absolute_uri(invitation_path(new.token)),
            "mailed": new.mailed,
        }
        return Response(NewInvitationSerializer(data).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[INVITATION_ID],
        request=None,
        responses={204: None, **ERRORS},
        description="Withdraw a pending invitation. Logged. Managers of the study.",
    )
    @action(
        detail=True,
        methods=["delete"],
        url_path=r"invitations/(?P<invitation_id>[0-9]+)",
        url_name="invitation",
        permission_classes=MANAGERS,
    )
    def invitation(self, request, slug=None, invitation_id=None):
        study = self.get_object()
        invitation = Invitation.objects.filter(study=study, pk=int(invitation_id)).first()
        if invitation is None:
            raise NotFound("No such invitation in this study.")
        invitation_revoke(invitation=invitation, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _token_body(request, serializer_class) -> dict:
    """The checked body of a call that carries an invitation token: refused while the client is
    throttled, and a token that opens nothing counted against it (a guess)."""
    if not invitation_attempt_allowed(client_address=client_address(request)):
        raise Throttled()
    body = serializer_class(data=request.data)
    body.is_valid(raise_exception=True)
    if invitation_get_by_token(token=body.validated_data["token"]) is None:
        invitation_guess_record(client_address=client_address(request))
    return body.validated_data


class InvitationAcceptView(APIView):
    """Accept an invitation: no sign-in needed, the token is the credential."""

    permission_classes = [AllowAny]

    @extend_schema(
        request=AcceptSerializer,
        responses={
            201: AcceptedSerializer,
            400: OpenApiResponse(ErrorSerializer, description="not valid, used, expired"),
            401: OpenApiResponse(
                ErrorSerializer, description="a token that is unknown, revoked or expired was sent"
            ),
            429: OpenApiResponse(ErrorSerializer, description="too many attempts"),
        },
        description=(
            "Create an account (the password passes the server's validators) with the "
            "invitation's role in its study, once. A used, expired or withdrawn invitation is "
            "a 400 whose `details.state` says which. Throttled per client address."
        ),
    )
    def post(self, request):
        data = _token_body(request, AcceptSerializer)
        user, study = invitation_accept(
            token=data["token"],
            username=data["username"],
            password=data["password"],
            first_name=data.get("first_name", ""),
            last_name=data.get("last_name", ""),
        )
        role = Invitation.objects.filter(accepted_by=user).values_list("role", flat=True).first()
        accepted = {"username": user.get_username(), "study": study.slug, "role": role}
        return Response(AcceptedSerializer(accepted).data, status=status.HTTP_201_CREATED)


class JoinSerializer(serializers.Serializer):
    token = serializers.CharField(max_length=100)


class InvitationJoinView(APIView):
    """Accept an invitation with the account one is signed in with."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=JoinSerializer,
        responses={
            200: AcceptedSerializer,
            400: OpenApiResponse(
                ErrorSerializer, description="not valid, used, expired, or the role held already"
            ),
            401: OpenApiResponse(ErrorSerializer, description="not signed in"),
            429: OpenApiResponse(ErrorSerializer, description="too many attempts"),
        },
        description=(
            "Give the signed-in account (a password or single sign-on account) the "
            "invitation's role in its study, once. Refused as `invitations/accept/` refuses, "
            "and with `details.state` `member` when the account holds that role already. "
            "Throttled per client address."
        ),
    )
    def post(self, request):
        data = _token_body(request, JoinSerializer)
        invitation = invitation_join(token=data["token"], user=request.user)
        joined = {
            "username": request.user.get_username(),
            "study": invitation.study.slug,
            "role": invitation.role,
        }
        return Response(AcceptedSerializer(joined).data)


class AccountSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)
    first_name = serializers.CharField(max_length=150, allow_blank=True, required=False)
    last_name = serializers.CharField(max_length=150, allow_blank=True, required=False)


class AccountView(APIView):
    """One's own account: the name (the password changes on the sign-in pages)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: AccountSerializer}, description="Your username and name.")
    def get(self, request):
        return Response(AccountSerializer(request.user).data)

    @extend_schema(
        request=AccountSerializer,
        responses={200: AccountSerializer, 400: ERRORS[400]},
        description="Change your name (first, last: either), checked as every name is.",
    )
    def patch(self, request):
        body = AccountSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        names = {"first_name": request.user.first_name, "last_name": request.user.last_name}
        user_names_change(user=request.user, **(names | body.validated_data))
        return Response(AccountSerializer(request.user).data)
