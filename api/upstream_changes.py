"""The shapes of issues that changed on GitHub after they were labeled: what changed (a field
of the item where the API shows one), the changes found with who looked again (the side-by-side
view), and a manager's review (its route is in api.resolutions). The reads are in
labeling.upstream_changes, the writes in labeling.services.upstream_changes."""

from rest_framework import serializers

from labeling.models import UpstreamChange, UpstreamChangeCheck
from labeling.services.upstream_changes import MAX_REVIEW_NOTE


class ValueChangeSerializer(serializers.Serializer):
    before = serializers.CharField()
    now = serializers.CharField()


class DiffLineSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["added", "removed", "context", "hunk", "note"])
    text = serializers.CharField()


class LabelsChangeSerializer(serializers.Serializer):
    added = serializers.ListField(child=serializers.CharField(), source="labels_added")
    removed = serializers.ListField(child=serializers.CharField(), source="labels_removed")


class BodyChangeSerializer(serializers.Serializer):
    changed = serializers.BooleanField(source="body_changed")
    diff = DiffLineSerializer(source="body", many=True, help_text="a unified diff, line by line")
    cut = serializers.BooleanField(source="body_cut", help_text="the diff stops early")


class ChangedCommentSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="github_id", help_text="GitHub's comment id")
    author = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    body = serializers.CharField(help_text="Markdown source, as GitHub has it")


class CommentsChangeSerializer(serializers.Serializer):
    count = ValueChangeSerializer(source="comments_count", allow_null=True)
    added = ChangedCommentSerializer(source="comments_added", many=True)
    edited = ChangedCommentSerializer(source="comments_edited", many=True)
    removed = serializers.IntegerField(source="comments_removed")


class UpstreamChangeSerializer(serializers.Serializer):
    """What changed in the item's issue on GitHub since it was labeled: the version labeled
    against the issue as stored now. `known` is false for an item flagged before changes were
    kept: then only `detected_at` and `gone` say something."""

    detected_at = serializers.DateTimeField()
    gone = serializers.BooleanField(help_text="GitHub no longer has the issue (deleted or moved)")
    known = serializers.BooleanField()
    title = ValueChangeSerializer(allow_null=True)
    state = ValueChangeSerializer(allow_null=True, help_text='e.g. "closed (completed)"')
    labels = LabelsChangeSerializer(source="*", help_text="GitHub labels")
    body = BodyChangeSerializer(source="*")
    comments = CommentsChangeSerializer(source="*")


class UpstreamCheckSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", allow_null=True, default=None)

    class Meta:
        model = UpstreamChangeCheck
        fields = ["user", "kind", "note", "checked_at"]
        read_only_fields = fields


class UpstreamChangeRecordSerializer(serializers.ModelSerializer):
    """A change found in the item's issue: when, whether it is cleared, and who looked again
    (the audit trail)."""

    checks = UpstreamCheckSerializer(many=True, read_only=True)

    class Meta:
        model = UpstreamChange
        fields = ["id", "detected_at", "gone", "cleared_at", "checks"]
        read_only_fields = fields


class UpstreamReviewSerializer(serializers.Serializer):
    note = serializers.CharField(allow_blank=True, default="", max_length=MAX_REVIEW_NOTE)
