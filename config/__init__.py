"""The project's package. The Celery app (`config.celery`) is made when it is first imported:
by a worker (`celery -A config`) and by the modules of tasks, which bind their tasks to it, so
that a process that sends no task (a management command, most web requests) does not spend a
tenth of its start importing Celery."""


def __getattr__(name: str) -> object:
    # `config.celery_app`, as Celery's Django guide names it, for whoever asks.
    if name == "celery_app":
        from config.celery import app

        return app
    raise AttributeError(f"module 'config' has no attribute {name!r}")
