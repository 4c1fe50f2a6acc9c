"""What a process imports to start: Django's set-up, as every management command runs it, and
the URLconf, as the web server loads it."""

import os
import subprocess
import sys

from django.conf import settings


def _imported_after(code: str, names: tuple[str, ...]) -> list[str]:
    probe = (
        f"import sys, django; django.setup(); {code}; "
        f"print(','.join(sorted(name for name in {names!r} if name in sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
        capture_output=True,
        text=True,
        check=True,
    )
    return [name for name in result.stdout.strip().split(",") if name]


def test_starting_django_imports_neither_celery_nor_numpy():
    """A command such as import_issues sends no task and computes no agreement: Celery and the
    agreement's numpy were a third of its start."""
    assert _imported_after("pass", ("celery", "numpy")) == []


def test_loading_the_urlconf_imports_no_library_it_needs_only_for_one_action():
    """runserver's start (its checks load the URLconf) would otherwise spend seconds importing
    them: scikit-learn at the first kappa, openai at the first machine run, PyGithub at the
    first sync or source check, Celery at the first task sent, the Redis client at the first
    health check of the broker (the embedded default has none), numpy at the first agreement
    report or similar issues (the pages import the agreement's wording and defaults only)."""
    code = "from django.urls import get_resolver; get_resolver().url_patterns"
    libraries = ("sklearn", "openai", "github", "celery", "redis", "numpy")
    assert _imported_after(code, libraries) == []


def test_the_celery_app_is_made_when_a_module_of_tasks_is_imported():
    """Tasks are bound to the project's app, configured from Django's settings, not to a default
    app that Celery would make on first use."""
    code = (
        "import exports.tasks; from celery import current_app; from django.conf import settings; "
        "app = exports.tasks.export_dataset.app; "
        "assert app is current_app._get_current_object() and app.main == 'issuecoder'; "
        "assert app.conf.broker_url == settings.CELERY_BROKER_URL, app.conf.broker_url"
    )
    assert "celery" in _imported_after(code, ("celery",))


def test_the_agreement_package_imports_a_module_when_one_of_its_names_is_first_used():
    """`labeling.agreement` answers each public name from the module that defines it, and the
    wording without numpy; an unknown name is an AttributeError, as on any module."""
    code = (
        "import labeling.agreement as agreement; "
        "from labeling.agreement.wording import interpret_kappa; "
        "assert agreement.interpret_kappa is interpret_kappa; "
        "assert agreement.DEFAULT_MIN_PAIR_ITEMS == 10; "
        "assert not hasattr(agreement, 'no_such_name'); "
        "assert set(agreement.__all__) <= set(dir(agreement))"
    )
    assert _imported_after(code, ("numpy",)) == []
    code = (
        "import labeling.agreement as agreement; from labeling.agreement import cohen_kappa; "
        "assert cohen_kappa([1, 2], [1, 2]) == 1.0; "
        "[getattr(agreement, name) for name in agreement.__all__]"  # each module defines its names
    )
    assert _imported_after(code, ("numpy",)) == ["numpy"]
