# Two commands for a new user (README): `make demo` and `make test`. Both run `setup` first,
# which installs what is missing (tools/setup.sh) and is a no-op when nothing changed.
VENV    ?= .venv
PY      := $(VENV)/bin/python
CODEGEN := $(VENV)/bin/codegen
OUT     ?= out

.PHONY: all setup demo test test-all lint generate firmware clean

all: demo

setup:
	@bash tools/setup.sh

firmware: setup
	$(CODEGEN) firmware --out $(OUT)/firmware

# The demo: built-in data set (reused when up to date), the shipped model compiled to C + ELF,
# QEMU streaming each clip's mixed audio (int16 PCM, chunks of 1,022 samples) through the
# device's audio mode: integer MFCC and one LSTM step per hop on the device, then the paper's
# strict and bounded-continual ELaTTA and cmvn_select (the deployed input adaptation,
# docs/adaptation.md), beside no-adapt, as the continual protocol (segments of one condition,
# then a switch: 4 clips each for the 200 audio clips over 50 conditions, 12 for the 600
# feature clips); every result checked bit-exactly against the integer chain (MFCC -> encoder
# -> adaptation); tables in $(OUT)/run/report.md. 200 clips per mode (every noise and SNR): an
# audio clip is ~32 KB on the link, 16 times its features, so this keeps the demo near a few
# minutes. Then cmvn_select on feature input, 600 clips, tables in $(OUT)/run-cmvn/report.md.
DEMO_DATA  ?= $(OUT)/data/demo
DEMO_BUILD ?= $(OUT)/build/kws
DEMO_LIMIT ?= 200

demo: setup
	$(CODEGEN) data --out $(DEMO_DATA) --preset demo
	$(CODEGEN) build --model models/default/model.pt --basis models/default/basis.npz \
		--config configs/default.toml --data $(DEMO_DATA) --out $(DEMO_BUILD)
	$(CODEGEN) run --build $(DEMO_BUILD) --data $(DEMO_DATA) --qemu --jobs 2 \
		--input pcm --chunk 1022 --mode strict --mode continual_bounded --mode cmvn_select \
		--limit $(DEMO_LIMIT) --stream-segment 4 --report $(OUT)/run --force-restart
	$(CODEGEN) run --build $(DEMO_BUILD) --data $(DEMO_DATA) --qemu --jobs 2 \
		--input features --mode cmvn_select --limit 600 \
		--stream-segment 12 --report $(OUT)/run-cmvn --force-restart

# Every layer but the `slow` tests (pure Python, host C with sanitizers, QEMU end to end);
# `make test-all` adds the slow ones. TEST_JOBS pytest-xdist workers (default: the cores this
# process may use, at most 4), one test file per worker at a time (`--dist loadfile`: a file's
# module fixtures are built once); much of a QEMU test is waiting on the emulated UART, so two
# workers on two cores finish in about half the time. TEST_JOBS=0 runs in this process.
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST_JOBS = $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile)

test: setup
	$(PY) -m pytest -m "not slow" -q $(PYTEST_JOBS)

test-all: setup
	$(PY) -m pytest -q $(PYTEST_JOBS)

lint: setup
	$(VENV)/bin/ruff check codegen host measure tests bench tools
	$(VENV)/bin/ruff format --check codegen host measure tests bench tools
	$(VENV)/bin/mypy codegen host measure
	$(VENV)/bin/clang-format --dry-run --Werror firmware/*.[ch] firmware/board/*/*.[ch] \
		firmware/kernels/*/*.[ch] firmware/host/*.[ch] \
		tests/neonprobe/*.[ch] tests/intharness/*.[ch] tests/regfile/*.[ch]

# Every checked-in generated file (the modes and payload headers, the CRC-32 tables) from its
# one description (tools/generate.py); tests/tools/test_generated.py fails when one is stale.
generate: setup
	$(PY) tools/generate.py

clean:
	rm -rf $(OUT) build .pytest_cache
