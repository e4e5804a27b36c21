# realm_ros: `make test` and `make demo` set everything up on a fresh machine, then run.
# Setup is idempotent: it creates .venv/ in the repo once and re-installs only when the
# dependency declarations (setup.py, constraints.txt) change.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.realm-ros-setup
# Isolate DDS traffic to this machine; tests also pick their own ROS_DOMAIN_ID.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp
export MUJOCO_GL ?= egl
export PYTHONUNBUFFERED := 1

.PHONY: setup test test-fast test-unit demo bench lint clean sysdeps lerobot-env

setup: $(STAMP)

$(STAMP): setup.py constraints.txt
	@$(MAKE) --no-print-directory sysdeps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[ros,test,torch,physx,arena,ray]'
	@# Kit-less PhysX (Isaac Sim's engine) for backend physx; --no-deps: see setup.py 'physx'.
	@# Where its wheel cannot install (not x86_64 Linux / glibc < 2.35) the PhysX tests skip.
	$(PY) -m pip install --quiet --no-deps -c constraints.txt ovphysx || \
	  echo 'ovphysx not installable here: backend physx and its tests are skipped'
	$(PY) -c "import rclpy, mujoco, cma, rosbags; print('realm_ros setup ok')"
	touch $(STAMP)

# Offscreen rendering needs EGL (Mesa on the CPU). Install it only where it is missing.
sysdeps:
	@if ! ldconfig -p 2>/dev/null | grep -q 'libEGL.so.1'; then \
	  echo 'installing EGL/Mesa for offscreen rendering'; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
	    apt-get install -y -qq libegl1 libegl-mesa0 libgl1-mesa-dri libgles2 >/dev/null; \
	  else echo 'run as root or: sudo apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri'; fi; \
	fi
	@# The arena's browser test (test/e2e/test_arena_browser.py) runs Debian's Chromium headless.
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  echo 'installing chromium for the arena browser test'; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && \
	    apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else echo 'run as root or: sudo apt-get install chromium chromium-driver'; fi; \
	fi

# Two workers, one test file each at a time (docs/testing.md): 12 min here instead of 17.
TEST_WORKERS ?= 2

test: setup
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

test-fast: setup
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile -m 'not slow'

# The pure, in-process tests only (test/unit: no node, no DDS, no browser; docs/testing.md).
test-unit: setup
	$(PY) -m pytest test/unit

demo: setup
	$(VENV)/bin/realm-ros demo --out demo_out

# Every figure is printed with its baseline and the machine, and appended to
# bench/results/bench.jsonl (one JSON object per line). docs/performance.md explains them.
bench: setup
	$(PY) bench/bench_twin.py
	$(PY) bench/bench_sysid.py
	$(PY) bench/bench_episodes.py
	$(PY) bench/bench_ik_outcomes.py
	@echo 'figures appended to bench/results/bench.jsonl'

# LeRobot in its own venv (lerobot 0.4.4 pins torch < 2.11; the project pins 2.13): the
# `lerobot` policy starts realm_ros/policies/lerobot_server.py with it (docs/learned-policy.md).
# Not part of setup: PyPI has only CUDA torch builds, 8 GB installed. Its tests skip without it.
LEROBOT_VENV ?= .venv-lerobot
LEROBOT_PYTHON ?= python3.11

lerobot-env: setup
	$(PY) bench/lerobot_check.py --lerobot 0.4.4 --venv $(LEROBOT_VENV) \
	  --python $(LEROBOT_PYTHON) --env-only

lint: setup
	$(VENV)/bin/ruff check realm_ros test bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
