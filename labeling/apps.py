from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"

    def ready(self) -> None:
        from corpus.signals import issues_changed_upstream
        from labeling.receivers import study_items_flag_on_upstream_change

        issues_changed_upstream.connect(
            study_items_flag_on_upstream_change, dispatch_uid="labeling.flag_changed_items"
        )
