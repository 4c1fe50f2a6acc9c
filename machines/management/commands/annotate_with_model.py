from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from labeling.models import Study
from machines.models import MachineRun
from machines.runs import machine_run_execute
from machines.services import (
    classical_run_request,
    machine_annotator_get_or_create,
    machine_run_request,
)

# What only a language model takes: refused with --classical.
LLM_OPTIONS = ("base_url", "model", "api_key_env", "samples", "temperature", "seed", "name")


class Command(BaseCommand):
    help = (
        "Label a study's items with a language model behind an OpenAI-compatible "
        "chat-completions endpoint. The machine's labels are kept apart from people's: they "
        "never count toward k nor enter gold, and the agreement report measures them against "
        "people and gold. With --classical, a scikit-learn model trained on the study's gold "
        "labels (cross-validated) labels them instead, no endpoint needed. Without --now the "
        "run is queued for a Celery worker."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True, metavar="SLUG")
        parser.add_argument(
            "--classical",
            action="store_true",
            help="the scikit-learn annotator, trained on the study's gold labels",
        )
        parser.add_argument("--base-url", default=None, metavar="URL", help="e.g. .../v1")
        parser.add_argument("--model", default=None, metavar="NAME")
        parser.add_argument(
            "--api-key-env",
            default=None,
            metavar="VAR",
            help="the NAME of the environment variable holding the key (none: no key sent)",
        )
        parser.add_argument("--samples", type=int, default=None, metavar="N")
        parser.add_argument("--temperature", type=float, default=None, metavar="T")
        parser.add_argument("--seed", type=int, default=None, metavar="S")
        parser.add_argument(
            "--name", default=None, help="the machine annotator's name (default: the model's)"
        )
        parser.add_argument("--now", action="store_true", help="run in this process")

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study {options['study']!r}.")
        if options["classical"]:
            self._classical(study, options)
            return
        missing = [f"--{name}" for name in ("base_url", "model") if not options[name]]
        if missing:
            raise CommandError(
                f"{' and '.join(missing).replace('_', '-')} needed (or --classical)."
            )
        try:
            annotator, created = machine_annotator_get_or_create(
                study=study,
                name=options["name"] or "",
                base_url=options["base_url"],
                model=options["model"],
                api_key_env=options["api_key_env"] or "",
                temperature=0.0 if options["temperature"] is None else options["temperature"],
                seed=options["seed"],
                samples=1 if options["samples"] is None else options["samples"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        if created:
            self.stdout.write(f"Added the machine annotator {annotator.name} to {study.slug}.")
        run = machine_run_request(annotator=annotator, enqueue=not options["now"])
        if not options["now"]:
            run.refresh_from_db()
            self.stdout.write(f"Queued machine run {run.pk}: Celery task {run.task_id}")
            return
        run = machine_run_execute(run_id=run.pk)
        self.stdout.write(
            f"Machine run {run.pk} of {annotator.name} on {study.slug}: {run.status}. "
            f"Items done {run.items_done} (already labeled {run.items_skipped}, "
            f"failed {run.items_failed}) of {run.items_total}; requests {run.requests} "
            f"(cached answers {run.cache_hits}); tokens in {run.tokens_in}, out {run.tokens_out}."
        )
        for failure in run.item_errors[:5]:
            self.stdout.write(f"  item {failure['item']}: {failure['error']}")
        if run.status == MachineRun.Status.FAILED:
            raise CommandError(f"Machine run {run.pk} failed: {run.error}")

    def _classical(self, study: Study, options: dict) -> None:
        given = [f"--{name.replace('_', '-')}" for name in LLM_OPTIONS if options[name] is not None]
        if given:
            raise CommandError(
                f"{', '.join(given)}: a language model's settings, not the scikit-learn "
                "annotator's; give --classical alone."
            )
        try:
            run = classical_run_request(study=study, enqueue=not options["now"])
        except ApplicationError as error:
            raise CommandError(error.message) from error
        if not options["now"]:
            run.refresh_from_db()
            self.stdout.write(f"Queued machine run {run.pk}: Celery task {run.task_id}")
            return
        run = machine_run_execute(run_id=run.pk)
        dimensions = run.parameters.get("dimensions", {})
        trained = [key for key, record in dimensions.items() if "skipped" not in record]
        self.stdout.write(
            f"Machine run {run.pk} of {run.annotator.name} on {study.slug}: {run.status}. "
            f"Items done {run.items_done} of {run.items_total}; dimensions trained: "
            f"{', '.join(trained) or 'none'}."
        )
        for key, record in dimensions.items():
            if "skipped" in record:
                self.stdout.write(f"  {key} skipped: {record['skipped']}")
        if run.status == MachineRun.Status.FAILED:
            raise CommandError(f"Machine run {run.pk} failed: {run.error}")
