# Production image: gunicorn for the web, the same image for the Celery worker and beat.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production

RUN apt-get update && apt-get install -y --no-install-recommends curl postgresql-client \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 issuecoder
WORKDIR /app

COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt

COPY --chown=issuecoder:issuecoder . .
# The app's bytecode in the image: with PYTHONDONTWRITEBYTECODE, every start (web, worker, beat,
# each migration step) would compile it again.
RUN python -m compileall -q .
# collectstatic needs settings but no secrets; give it throwaway ones for the build only.
RUN SECRET_KEY=build-only-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') \
    ALLOWED_HOSTS=build REDIS_URL=redis://build:6379/0 \
    python manage.py collectstatic --noinput

# The app folder is the app user's: beat keeps its schedule file there (celerybeat-schedule).
# media/ (export files, shared by web and worker) and backups/ are volumes in
# docker-compose.yml; a new volume takes its owner from the image's folder.
RUN mkdir -p media backups && chown issuecoder:issuecoder . media backups

USER issuecoder
EXPOSE 8000
# The web service; docker-compose.yml gives the worker and beat their own commands. Workers,
# timeouts and JSON logs: config/gunicorn.py. Health: GET /health/ (database and broker).
CMD ["gunicorn", "config.wsgi:application", "--config", "config/gunicorn.py"]
