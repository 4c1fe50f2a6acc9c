"""The project's package. The Celery app (`config.celery`) is made when it is first imported:
by a worker (`celery -A config` finds it there) and by the modules of tasks, which bind their
tasks to it, so that a process that sends no task (a management command, most web requests)
does not spend a tenth of its start importing Celery."""
