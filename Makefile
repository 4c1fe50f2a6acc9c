# The two commands of the README:
#   make run   set up the embedded default (SQLite, sample issues, starter codebook) and serve it
#   make test  set up and run the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
DOCS_PORT ?= 8001

.PHONY: run test setup setup-dev compile lint bench docs docs-serve docs-reference clean

# deploy/install.py installs with uv (pinned, from the package index, honouring pip's settings
# of this machine) and falls back to pip; ISSUECODER_INSTALL_WITH_PIP=1 uses pip only.
$(VENV)/.runtime: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) deploy/install.py requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt
	$(PY) deploy/install.py requirements-dev.txt
	touch $@

setup: $(VENV)/.runtime

setup-dev: $(VENV)/.dev

# The project's bytecode, compiled ahead: where PYTHONDONTWRITEBYTECODE is set, Python would
# compile every module of the project again at each start (about half a second). Once compiled,
# a second run only checks the files' times.
compile: setup
	$(PY) -m compileall -q -x '/\.venv/' .

# One process sets up the demo (at once when it is set up already) and serves it.
run: compile
	$(PY) manage.py demo --serve $(HOST):$(PORT)

test: setup-dev
	$(PY) -m pytest

lint: setup-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

bench: setup-dev
	# every script with a main; benchkit.py and locustfile.py are modules the others use
	for script in $$(grep -l '^if __name__ == "__main__":' bench/*.py); do $(PY) $$script || exit 1; done

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link or
# anchor. NO_MKDOCS_2_WARNING quiets the theme's notice about MkDocs' next major version.
docs: setup-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: setup-dev
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(HOST):$(DOCS_PORT)

# The reference pages written from the code (docs/reference/cli.md from the commands' parsers,
# api.md from the OpenAPI schema); tests/test_docs.py fails while they are stale.
docs-reference: setup
	$(PY) docs/gen_reference.py

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-* staticfiles site
