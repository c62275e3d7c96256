# Two commands take a fresh machine to working:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INTEROP_VENV := .venv-pypaimon
PYPAIMON_PIN := pypaimon==2.1.0
# pypaimon's optional Rust runtime (write.native.enabled / read.native.enabled), a benchmark peer.
PYPAIMON_RUST_PIN := pypaimon-rust==0.4.0

.PHONY: demo test bench setup interop-setup clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

# pypaimon pins pyarrow<20: it lives in its own environment and is driven through a subprocess.
$(INTEROP_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/python -m pip install --quiet $(PYPAIMON_PIN) $(PYPAIMON_RUST_PIN)
	touch $@

setup: $(VENV)/.installed
interop-setup: $(INTEROP_VENV)/.installed

demo: setup
	$(PY) -m laketide.demo --warehouse demo-warehouse

test: setup interop-setup
	LAKETIDE_PYPAIMON_PYTHON=$(abspath $(INTEROP_VENV))/bin/python $(PY) -m pytest -q tests

bench: setup interop-setup
	LAKETIDE_PYPAIMON_PYTHON=$(abspath $(INTEROP_VENV))/bin/python $(PY) -m bench

clean:
	rm -rf $(VENV) $(INTEROP_VENV) demo-warehouse
