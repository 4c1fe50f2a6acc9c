from django.conf import settings
from django.db import models

from common.models import TimestampedModel
from corpus.models import Issue
from taxonomy.models import Category, CodebookVersion, Dimension

# ---------------------------------------------------------------------------------------------
# Studies: who labels what, against which codebook version.
# ---------------------------------------------------------------------------------------------


class Study(TimestampedModel):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        CLOSED = "closed", "Closed"

    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    codebook_version = models.ForeignKey(
        CodebookVersion, on_delete=models.PROTECT, related_name="studies"
    )

    class ResolutionRule(models.TextChoices):
        ADJUDICATION = "adjudication", "Every disagreement goes to an adjudicator"
        MAJORITY = "majority", "A strict majority decides (k of 3 or more)"

    k = models.PositiveSmallIntegerField(default=2, help_text="annotators per item")
    blind = models.BooleanField(default=True)
    # Keys of the dimensions that must be answered to submit, when the study chooses them
    # rather than its codebook version (null: as the codebook says).
    required_dimensions = models.JSONField(null=True, blank=True)
    # Items are given to annotators up front (balanced); otherwise annotators claim the next item
    # that still needs them when they ask for one.
    preassign = models.BooleanField(default=True)
    # The share of items coded by k annotators; the others are coded by one (1.0: all by k).
    overlap = models.FloatField(default=1.0)
    # What happens to a disagreement once all annotators of an item have submitted.
    resolution_rule = models.CharField(
        max_length=12, choices=ResolutionRule.choices, default=ResolutionRule.ADJUDICATION
    )

    class ScreenInOverride(models.TextChoices):
        RELABEL = "relabel", "Annotators who have not seen the item label what now applies"
        ADJUDICATOR = "adjudicator", "The adjudicator decides what now applies"

    # Who labels the dimensions that an adjudicator's decision makes apply although the item's
    # annotators did not answer them (they screened it out, the adjudicator screened it in).
    screen_in_override = models.CharField(
        max_length=12, choices=ScreenInOverride.choices, default=ScreenInOverride.RELABEL
    )
    sampling = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    # The labeling page's similar-issues panel shows the gold labels of the similar items
    # (never people's or machines' labels): a hint some studies want and others call a bias.
    show_similar_gold = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=models.Q(k__gte=1), name="study_k_positive"),
            models.CheckConstraint(
                condition=models.Q(overlap__gte=0, overlap__lte=1), name="study_overlap_fraction"
            ),
            # A majority of two is unanimity: the majority rule needs three annotators or more.
            models.CheckConstraint(
                condition=~models.Q(resolution_rule="majority") | models.Q(k__gte=3),
                name="study_majority_needs_three",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        MANAGER = "manager", "Manager"
        ANNOTATOR = "annotator", "Annotator"
        ADJUDICATOR = "adjudicator", "Adjudicator"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=12, choices=Role.choices)

    class Meta:
        ordering = ["study", "role", "user"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user", "role"], name="unique_membership"),
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.study}"


class Round(models.Model):
    class Kind(models.TextChoices):
        PILOT = "pilot", "Pilot"
        MAIN = "main", "Main"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="rounds")
    name = models.CharField(max_length=100)
    position = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MAIN)
    # The κ every required dimension must reach (its headline κ, labeling.agreement.headline_of),
    # and per dimension key a target of its own that overrides it.
    target_kappa = models.FloatField(null=True, blank=True)
    dimension_targets = models.JSONField(default=dict, blank=True)
    # A main round after pilot rounds with targets hands out no item until they pass, or until a
    # manager opens it anyway (why: gate_opened_reason, and the activity log). Set once open.
    gate_opened_at = models.DateTimeField(null=True, blank=True)
    gate_opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    gate_opened_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="unique_round_position"),
            models.UniqueConstraint(fields=["study", "name"], name="unique_round_name"),
        ]

    def __str__(self) -> str:
        return self.name


class StudyItem(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        IN_RESOLUTION = "in_resolution", "In resolution"
        RESOLVED = "resolved", "Resolved"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    issue = models.ForeignKey(Issue, on_delete=models.PROTECT, related_name="study_items")
    round = models.ForeignKey(Round, on_delete=models.PROTECT, related_name="items")
    status = models.CharField(max_length=15, choices=Status.choices, default=Status.OPEN)
    # How many annotators label the item: the study's k, or 1 for an item outside the overlap.
    annotators_needed = models.PositiveSmallIntegerField(default=1)
    # How many assignments the item has, of any status: a claim takes the open item with the
    # fewest first (labeling.services.studies.item_claim_for_annotator). Counted again by
    # labeling.services.holders wherever assignments are added or removed.
    holders = models.PositiveSmallIntegerField(default=0)
    # Set when the issue changed on GitHub after someone labeled it; labels are never touched.
    changed_upstream_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "issue"], name="unique_study_issue"),
        ]
        indexes = [
            # Claiming the next item walks a study's open items in order; the resolved ones,
            # most of a study that is far along, stay out of the walk.
            models.Index(
                fields=["study", "id"], condition=models.Q(status="open"), name="studyitem_open_idx"
            ),
            # A study's first item, in one index step: the bound that starts an annotator's
            # walk to their next item at the study (labeling.selectors.assignment_held_next).
            models.Index(fields=["study", "id"], name="studyitem_study_order"),
            # The items a claim may take, in the order it takes them: open, with a place left,
            # fewest holders first, then the oldest. The first is one index step away however
            # many items are held already.
            models.Index(
                fields=["study", "holders", "id"],
                condition=models.Q(status="open", holders__lt=models.F("annotators_needed")),
                name="studyitem_claim_order",
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.pk} of {self.study_id}"


class Assignment(models.Model):
    class Status(models.TextChoices):
        TODO = "todo", "To do"
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignments")
    # The item's study, kept beside the item (an item never changes study): counting one's
    # assignments in a study then reads one index instead of looking up every item of it. Not
    # indexed alone: the indexes below lead with the annotator and the study, and with one on
    # the study alone PostgreSQL read every annotator's assignments of a study to count one's.
    study = models.ForeignKey(
        Study, on_delete=models.CASCADE, related_name="+", editable=False, db_index=False
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.TODO)
    skip_reason = models.TextField(blank=True)
    # Why this item went to this annotator (pre-assigned, least-annotated, ...).
    selection_reason = models.CharField(max_length=200, blank=True)
    # Added to an item in resolution to break a tie: with this label, a strict majority decides.
    is_tiebreaker = models.BooleanField(default=False)
    # The keys of the dimensions this assignment labels; null: all of them. Set for the
    # annotators who label what an adjudicator's decision opened (an item screened in over its
    # annotators): the decided dimensions are settled for them and not asked.
    dimension_keys = models.JSONField(null=True, blank=True)
    assigned_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    seconds_spent = models.PositiveIntegerField(default=0)
    # Bumped on every save, so that two tabs cannot overwrite each other silently. Every write
    # of labels raises it (a save, an import, a machine's seat), so an assignment still at 0
    # has none, and neither its page nor its first save looks for them.
    version = models.PositiveIntegerField(default=0)
    # The codebook version the labels were submitted under (set on each submit). Moving the
    # study to a new version migrates the labels but keeps this, so that agreement can be
    # reported for each version.
    codebook_version = models.ForeignKey(
        CodebookVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["item", "annotator"]
        constraints = [
            models.UniqueConstraint(fields=["item", "annotator"], name="unique_assignment"),
        ]
        indexes = [
            # One's drafts, or to-dos, in item order: the next item to label is the first.
            models.Index(fields=["annotator", "status", "item"], name="assignment_next_order"),
            # A queue is one's assignments in a study by item: read a page in order, not all
            # and sorted.
            models.Index(fields=["annotator", "study", "item"], name="assignment_queue_order"),
            # One's progress in a study: counted by status from the index alone.
            models.Index(fields=["annotator", "study", "status"], name="assignment_progress"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} for {self.annotator}"

    def save(self, *args, **kwargs) -> None:
        # The services that create assignments in bulk give the study, as bulk_create skips
        # this; one created alone may leave it to the item.
        if self.study_id is None:
            self.study_id = self.item.study_id
        super().save(*args, **kwargs)


class Annotation(models.Model):
    """What one annotator said about one item on one dimension. No categories: none applies."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="annotations")
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="annotations")
    categories = models.ManyToManyField(Category, blank=True, related_name="annotations")
    unsure = models.BooleanField(default=False)
    rationale = models.TextField(blank=True)
    evidence = models.TextField(blank=True)
    # A category the annotator would add to the codebook (open coding).
    proposal = models.CharField(max_length=200, blank=True)
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    # Set when the study moved to a codebook version that split or removed a chosen category:
    # the old category stays chosen until the annotator re-checks the label (review_note says
    # what happened); saving the dimension again clears it.
    needs_review_since = models.DateTimeField(null=True, blank=True)
    review_note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["assignment", "dimension__position"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "dimension"], name="unique_annotation_dimension"
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.assignment_id}, dimension {self.dimension_id}"


class AnnotationRevision(models.Model):
    """Every change to an annotation, as it was after the change."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="revisions")
    category_keys = models.JSONField(default=list)
    unsure = models.BooleanField(default=False)
    rationale = models.TextField(blank=True)
    evidence = models.TextField(blank=True)
    proposal = models.CharField(max_length=200, blank=True)
    assignment_status = models.CharField(max_length=10)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["annotation", "changed_at", "id"]

    def __str__(self) -> str:
        return f"revision of annotation {self.annotation_id} at {self.changed_at}"


class Resolution(models.Model):
    """The gold label of an item on a dimension, and how it was decided: the annotators agreed
    (consensus, recorded automatically), a majority of them agreed (majority), or a person
    decided (an adjudicator's decision, or consensus reached in discussion)."""

    class Method(models.TextChoices):
        CONSENSUS = "consensus", "Consensus"
        MAJORITY = "majority", "Majority"
        ADJUDICATED = "adjudicated", "Adjudicator decision"
        DISCUSSION = "discussion", "Consensus after discussion"

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="resolutions")
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="resolutions")
    categories = models.ManyToManyField(Category, blank=True, related_name="resolutions")
    method = models.CharField(max_length=12, choices=Method.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField(blank=True)
    # Bumped on every change, so that a second adjudicator's decision cannot silently replace
    # the first one's.
    version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # As on Annotation: a gold label whose category was split or removed by a new codebook
    # version; a decision recorded after this time settles it.
    needs_review_since = models.DateTimeField(null=True, blank=True)
    review_note = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["item", "dimension__position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "dimension"], name="unique_resolution"),
        ]

    def __str__(self) -> str:
        return f"resolution of item {self.item_id}, dimension {self.dimension_id}"


class ResolutionRevision(models.Model):
    """Every change to a resolution: who, when, the gold labels before and after, and why."""

    resolution = models.ForeignKey(Resolution, on_delete=models.CASCADE, related_name="revisions")
    category_keys = models.JSONField(default=list)
    method = models.CharField(max_length=12)
    note = models.TextField(blank=True)
    # What the resolution held before this change; null for the first decision.
    previous_category_keys = models.JSONField(null=True, blank=True)
    previous_method = models.CharField(max_length=12, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["resolution", "changed_at", "id"]

    def __str__(self) -> str:
        return f"revision of resolution {self.resolution_id} at {self.changed_at}"


class DiscussionComment(models.Model):
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="discussion")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "created_at"]

    def __str__(self) -> str:
        return f"comment by {self.author} on item {self.item_id}"


# ---------------------------------------------------------------------------------------------
# The codebook while a study runs: moving to a new version, and open coding.
# ---------------------------------------------------------------------------------------------


class StudyCodebookChange(models.Model):
    """A study moved from one codebook version to another; what the move did, in counts."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="codebook_changes")
    from_version = models.ForeignKey(CodebookVersion, on_delete=models.PROTECT, related_name="+")
    to_version = models.ForeignKey(CodebookVersion, on_delete=models.PROTECT, related_name="+")
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    # {"annotations_migrated": n, "annotations_flagged": n, "resolutions_migrated": n, ...}
    counts = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["study", "changed_at", "id"]

    def __str__(self) -> str:
        return f"{self.study} moved to {self.to_version}"


class ProposalDecision(models.Model):
    """What a manager made of a category proposed by annotators (open coding): the proposals of
    one dimension with the same text (`text` is normalised: case and spaces folded) either mean
    an existing category or became a new category of a draft version. The annotators' labels
    are not changed by it: they chose what they chose, and a new category reaches them through
    the next version."""

    class Kind(models.TextChoices):
        MAPPED = "mapped", "Mapped to an existing category"
        CREATED = "created", "Created in a draft"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="proposal_decisions")
    dimension_key = models.SlugField(max_length=100)
    text = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The category's key and version as decided, kept if a draft's category is deleted later.
    category_key = models.SlugField(max_length=100)
    # Discarding a draft discards what was created in it: its proposals are open again.
    version = models.ForeignKey(CodebookVersion, on_delete=models.CASCADE, related_name="+")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "dimension_key", "text"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "dimension_key", "text"], name="unique_proposal_decision"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.text!r} -> {self.category_key} ({self.kind})"


# ---------------------------------------------------------------------------------------------
# Issues that changed on GitHub after they were labeled.
# ---------------------------------------------------------------------------------------------


class UpstreamChange(models.Model):
    """The issue of a labeled item changed on GitHub (or is gone from it): what the issue was
    when it was labeled, kept when the sync (or an import) found the change, so that the pages
    can show what changed beside the labels. Open (`cleared_at` empty) while the item's
    `changed_upstream_at` is set, until the annotators submitted again or a manager confirmed
    the labels; the cleared ones and their checks are the audit trail."""

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="upstream_changes")
    detected_at = models.DateTimeField()
    # The issue before the change: {"title", "body", "labels", "state", "state_reason",
    # "comments_count", "updated_at", "comments": {github id: updated_at}}; {} when not known
    # (items flagged before changes were kept).
    before = models.JSONField(default=dict, blank=True)
    # GitHub answers 404/410 for the issue: deleted, or transferred to another repository.
    gone = models.BooleanField(default=False)
    cleared_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item"],
                condition=models.Q(cleared_at__isnull=True),
                name="one_open_upstream_change_per_item",
            ),
        ]

    def __str__(self) -> str:
        return f"upstream change of item {self.item_id} at {self.detected_at:%Y-%m-%d %H:%M}"


class UpstreamChangeCheck(models.Model):
    """Someone looked at the item again after its issue changed: an annotator who submitted
    their labels again, or a manager who confirmed that the labels still hold."""

    class Kind(models.TextChoices):
        RESUBMITTED = "resubmitted", "Submitted the labels again"
        REVIEWED = "reviewed", "Reviewed: the labels still hold"

    change = models.ForeignKey(UpstreamChange, on_delete=models.CASCADE, related_name="checks")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    note = models.TextField(blank=True)
    checked_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} by {self.user} on {self.change}"


class StudyEvent(models.Model):
    """One act on a study, for its activity log: who did what, when and why. Kept as written:
    the log is history, so an event is never changed or removed (a deleted user leaves the
    event without its actor)."""

    class Action(models.TextChoices):
        CLOSED = "closed", "Closed the study"
        REOPENED = "reopened", "Reopened the study"
        MEMBER_ADDED = "member_added", "Gave a role"
        MEMBER_REMOVED = "member_removed", "Took a role away"
        ITEMS_REASSIGNED = "items_reassigned", "Handed an annotator's items on"
        CODEBOOK_MOVED = "codebook_moved", "Moved to another codebook version"
        ROUND_SAVED = "round_saved", "Set a round up"
        GATE_OPENED = "gate_opened", "Opened a main round before its pilot passed"
        GATE_PASSED = "gate_passed", "The pilot passed: a main round opened"
        INVITED = "invited", "Invited someone"
        INVITATION_REVOKED = "invitation_revoked", "Revoked an invitation"
        INVITATION_ACCEPTED = "invitation_accepted", "Accepted an invitation"
        ANNOTATIONS_IMPORTED = "annotations_imported", "Imported annotations from a file"
        MACHINE_RATER = "machine_rater", "Chose the machine counted as one of k"
        RESTORED = "restored", "Restored the study from a dataset file"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=30, choices=Action.choices)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["study", "-at"])]

    def __str__(self) -> str:
        return f"{self.get_action_display()} ({self.study})"

    @property
    def detail_pairs(self) -> list[tuple[str, object]]:
        """The details as (key, value) pairs, for templates: `details.items` there would read a
        detail named "items" instead of the dict's method."""
        return list(self.details.items())


class Invitation(models.Model):
    """A link that makes whoever opens it first a member of a study with a role, once, before it
    expires. Only a hash of its token is stored: the link is shown (or mailed) once."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=12, choices=Membership.Role.choices)
    email = models.EmailField(blank=True, help_text="where the link was mailed, if it was")
    token_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.role} of {self.study}"
