from django.apps import AppConfig


class MachinesConfig(AppConfig):
    name = "machines"

    def ready(self) -> None:
        from labeling.report_extensions import report_extension_register

        # labeling sits below machines and may not import it: the report calls what is
        # registered here.
        report_extension_register("machines.report.report_add_machines")
