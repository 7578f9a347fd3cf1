# Two commands for a new user (README): `make demo` and `make test`. Both run `setup` first,
# which installs what is missing (tools/setup.sh) and is a no-op when nothing changed.
VENV    ?= .venv
PY      := $(VENV)/bin/python
CODEGEN := $(VENV)/bin/codegen
OUT     ?= out

.PHONY: all setup demo test test-all lint firmware clean

all: demo

setup:
	@bash tools/setup.sh

firmware: setup
	$(CODEGEN) firmware --out $(OUT)/firmware

# The demo: built-in data set (reused when up to date), the shipped model compiled to C + ELF,
# QEMU streaming 600 clips per mode (all 504 test utterances, every noise and SNR) as the
# continual protocol (segments of 12 clips of one condition, then a switch) in the paper's strict
# and bounded-continual ELaTTA and in cmvn (docs/adaptation.md), beside no-adapt; every result
# checked bit-exactly; tables in $(OUT)/run/report.md.
DEMO_DATA  ?= $(OUT)/data/demo
DEMO_BUILD ?= $(OUT)/build/kws
DEMO_LIMIT ?= 600

demo: setup
	$(CODEGEN) data --out $(DEMO_DATA) --preset demo
	$(CODEGEN) build --model models/default/model.pt --basis models/default/basis.npz \
		--config configs/default.toml --data $(DEMO_DATA) --out $(DEMO_BUILD)
	$(CODEGEN) run --build $(DEMO_BUILD) --data $(DEMO_DATA) --qemu --jobs 2 \
		--mode strict --mode continual_bounded --mode cmvn --limit $(DEMO_LIMIT) \
		--stream-segment 12 --report $(OUT)/run --force-restart

# Fast layers + one QEMU end-to-end test; `slow` tests are for test-all.
test: setup
	$(PY) -m pytest -m "not slow" -q

test-all: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check codegen host tests bench tools
	$(VENV)/bin/ruff format --check codegen host tests bench tools
	$(VENV)/bin/mypy codegen host
	$(VENV)/bin/clang-format --dry-run --Werror firmware/*.[ch] firmware/host/*.[ch] \
		tests/neonprobe/*.[ch] tests/intharness/*.[ch]

clean:
	rm -rf $(OUT) build .pytest_cache
