"""What the corpus tells the apps built on it, without knowing them.

The corpus sits below labeling in the import graph: it may not import studies to flag their
items, so it announces the change and labeling listens (`labeling.apps`).
"""

from django.dispatch import Signal

# Sent inside the writing transaction, with `issue_ids`: stored issues that GitHub changed after
# they were first stored (edited, closed, reopened), or that it no longer has (deleted or
# transferred) while something kept them in the corpus (`gone`). A change is announced before
# the issues and their comments are written, so their rows still hold the earlier version.
issues_changed_upstream = Signal()
