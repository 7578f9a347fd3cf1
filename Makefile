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

demo: firmware
	$(CODEGEN) device info --qemu $(OUT)/firmware/fw.elf
	$(CODEGEN) device echo --qemu $(OUT)/firmware/fw.elf --count 200

# Fast layers + one QEMU end-to-end test; `slow` tests are for test-all.
test: setup
	$(PY) -m pytest -m "not slow" -q

test-all: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check codegen host tests
	$(VENV)/bin/mypy codegen host

clean:
	rm -rf $(OUT) build .pytest_cache
