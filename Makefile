# Two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test test-deploy demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test,bench]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	mkdir -p var
	$(BIN)/benchwatch db upgrade
	$(BIN)/benchwatch serve

# The whole suite but the live docker-compose deployment (its own target: ~10 minutes of image builds).
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m "not deploy" $(PYTEST_ARGS)

# Build the images and run the real compose stack (tests/test_deploy_live.py); .ci/run runs it too.
test-deploy: $(STAMP)
	$(BIN)/python -m pytest -q -m deploy $(PYTEST_ARGS)

demo: $(STAMP)
	$(BIN)/python -m tests.demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) var .pytest_cache
