# Magnetar: `make run` starts a standalone server, `make test` runs every check.
# Both call `make setup`, which is idempotent.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`, each running whole test files (a module's fixtures
# stay in one worker); PYTEST_WORKERS=0 runs the suite in this one process.
PYTEST_WORKERS ?= 2

.PHONY: setup run test lint check-format format proto bench bench-setup clean chart-crds image e2e

# The install compiles the modules that pyproject.toml lists ([tool.magnetar.mypyc]) with mypyc
# (setup.py) and leaves their extension modules beside the sources, where Python imports them
# in preference to the .py: an edit to one of those sources rebuilds them in place (the venv's
# mypy, pinned as the build's), or the stale extension would run instead of the edited code.
# MAGNETAR_PURE_PYTHON=1 make setup installs without compiling and removes the extensions; each
# mode has its own stamp, so switching reinstalls.
COMPILED := $(shell sed -n '/^\[tool.magnetar.mypyc\]/,/^]/s/^ *"\([^"]*\.py\)",*$$/\1/p' pyproject.toml)
BUILT    := $(VENV)/.compiled
ifneq ($(filter-out 0,$(MAGNETAR_PURE_PYTHON)),)
STAMP := $(VENV)/.installed-pure
endif

setup: $(STAMP) $(BUILT) /usr/bin/etcd

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed $(VENV)/.installed-pure
	touch $(STAMP) $(BUILT)

$(BUILT): $(COMPILED)
	$(BIN)/python setup.py --quiet build_ext --inplace
	touch $(BUILT)

# Debian's etcd-server gives the real etcd that tests and local clusters use.
/usr/bin/etcd:
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq etcd-server
	-$(SUDO) systemctl disable --now etcd 2>/dev/null

run: setup
	$(BIN)/magnetar standalone

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy tests/bench
	$(BIN)/lint-imports

test: setup lint
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

proto: setup
	$(BIN)/python scripts/gen_proto.py

bench: setup bench-setup
	$(BIN)/python -m tests.bench.managed_ledger_append
	$(BIN)/python -m tests.bench.broker_official_client
	$(BIN)/python -m tests.bench.broker_official_client --client magnetar --no-consumer
	$(BIN)/python -m tests.bench.side_by_side
	$(BIN)/python -m tests.bench.side_by_side --client magnetar

# The side-by-side benchmark's durable peer: Debian's Redis (redis-server, redis-benchmark).
# The benchmark starts private servers on free loopback ports; the system service stays off.
bench-setup: setup /usr/bin/redis-server

/usr/bin/redis-server:
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server redis-tools
	-$(SUDO) systemctl disable --now redis-server 2>/dev/null
	-$(SUDO) service redis-server stop 2>/dev/null

# The chart ships copies of crds/*.yaml (a chart cannot read outside its folder); a test in
# tests/deploy fails when the copies drift.
chart-crds:
	mkdir -p charts/magnetar/crds
	rm -f charts/magnetar/crds/*.yaml
	cp crds/*.yaml charts/magnetar/crds/

# The one image for every role (needs Docker with BuildKit); see docs/kubernetes.md.
IMAGE ?= magnetar:dev
image:
	docker build -t $(IMAGE) .

# kind end to end (needs Docker, kind and kubectl): e2e/run.py --help says what it does.
e2e: setup
	$(BIN)/python e2e/run.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache build
	find services/src -name '*.so' -delete
