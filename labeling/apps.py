from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
