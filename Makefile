# p4vtep: top-level entry points. `make demo` and `make test` are all a new
# user needs; both install what they need first (`make deps`).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
P4C ?= p4c
P4_MAIN := p4src/v1model/p4vtep.p4
P4_BUILD := p4src/v1model/build
DEB_PACKAGES := python3-venv python3-dev iproute2 ethtool tcpdump iputils-ping iperf3 mininet \
	pkg-config libvirt-dev tcpreplay

.PHONY: all deps deps-system deps-python p4 p4-check proto ptf unit test demo demo-cli clean \
	bench bench-convergence bench-memory bench-move bench-dataplane bench-server bench-report

all: test

deps: deps-system deps-python

# Debian packages, installed only when one is missing (idempotent, no apt
# update when nothing is needed).
deps-system:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  SUDO=$$([ $$(id -u) -eq 0 ] || echo sudo); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; \
	fi

deps-python: $(VENV)/.installed

$(VENV)/.installed: requirements.txt control_plane/pyproject.toml
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	$(VPY) -m pip install -q --no-deps -e control_plane
	@# Mininet comes from Debian (with mnexec); let the virtualenv import it.
	if [ -d /usr/lib/python3/dist-packages/mininet ]; then \
	  ln -sfn /usr/lib/python3/dist-packages/mininet \
	    "$$($(VPY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/mininet"; fi
	touch $@

# Compile the pipeline; the outputs are committed next to the sources.
p4:
	@command -v $(P4C) >/dev/null || { echo "p4c not found: see docs/toolchain.md"; exit 1; }
	mkdir -p $(P4_BUILD)
	$(P4C) --target bmv2 --arch v1model --std p4-16 -o $(P4_BUILD) \
	  --p4runtime-files $(P4_BUILD)/p4vtep.p4info.txtpb $(P4_MAIN)
	rm -f $(P4_BUILD)/p4vtep.p4i

# The service API's generated code (committed; tests/test_api_generated.py checks it).
proto: deps-python
	cd control_plane && ../$(VPY) -m grpc_tools.protoc -I. --python_out=. \
	  --grpc_python_out=. --pyi_out=. p4vtep/api/overlay.proto

# Fails when the committed outputs differ from what p4c makes of the sources.
p4-check: deps-python
	$(VPY) -m pytest -q tests/test_p4_outputs.py

unit: deps
	$(VPY) -m pytest -q tests

ptf: deps
	$(VPY) ptf_tests/run_suite.py

test: deps
	$(VPY) -m pytest -q tests
	$(VPY) ptf_tests/run_suite.py

# The main job: the Mininet leaf-spine fabric, the controller, and the checks.
demo: deps
	@if command -v $(P4C) >/dev/null; then $(MAKE) --no-print-directory p4; fi
	$(VPY) topologies/demo.py

demo-cli: deps
	$(VPY) topologies/demo.py --cli

# Benchmarks: each writes bench/results/NAME.json; bench-report renders
# docs/benchmarks.md with plots. They report figures; they never fail on speed.
bench: bench-convergence bench-memory bench-move bench-dataplane bench-server bench-report

bench-convergence: deps
	$(VPY) bench/convergence.py
bench-memory: deps
	$(VPY) bench/memory.py
bench-move: deps
	$(VPY) bench/vm_move.py
bench-dataplane: deps
	$(VPY) bench/dataplane.py
bench-server: deps
	$(VPY) bench/server_cost.py
bench-report: deps-python
	$(VPY) bench/report.py

clean:
	rm -rf $(VENV) .pytest_cache
