from django.apps import AppConfig


class MachinesConfig(AppConfig):
    name = "machines"

    def ready(self) -> None:
        from labeling.agreement_report import REPORT_EXTENSIONS
        from machines.report import report_add_machines

        # labeling sits below machines and may not import it: the report calls what is
        # registered here.
        if report_add_machines not in REPORT_EXTENSIONS:
            REPORT_EXTENSIONS.append(report_add_machines)
