# Two commands take a fresh machine to working:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
INTEROP_VENV := .venv-pypaimon
PYPAIMON_PIN := pypaimon==2.1.0
# pypaimon's optional Rust runtime (write.native.enabled / read.native.enabled), a benchmark peer.
PYPAIMON_RUST_PIN := pypaimon-rust==0.4.0
# pypaimon's JDBC catalog reaches PostgreSQL through psycopg2 (the JDBC cross-checks in tests/catalog).
PSYCOPG2_PIN := psycopg2-binary==2.9.13

# pyproject.toml holds version ranges; constraints.txt the exact versions installed here (and so in CI).
CONSTRAINTS := -c constraints.txt
# `make test-min`: the same suite on the lowest versions the ranges allow (constraints-min.txt); not part of CI.
MIN_VENV := .venv-min

.PHONY: demo demo-python java-check test test-min bench setup interop-setup clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(CONSTRAINTS) -e '.[test]'
	touch $@

# pypaimon pins pyarrow<20: it lives in its own environment and is driven through a subprocess.
$(INTEROP_VENV)/.installed: Makefile
	$(PYTHON) -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/python -m pip install --quiet $(PYPAIMON_PIN) $(PYPAIMON_RUST_PIN) $(PSYCOPG2_PIN)
	touch $@

# Where the environment sets PYTHONDONTWRITEBYTECODE (this machine's does), every fresh process (Spark's Python
# workers, the tests' subprocesses) would compile laketide from source again (~0.35 s each). It is compiled here
# once, as a non-editable pip install does; an import checks each file's time stamp, so an edited module is
# still read from its source.
setup: $(VENV)/.installed
	$(PY) -m compileall -q laketide pyspark_laketide > /dev/null
interop-setup: $(INTEROP_VENV)/.installed

# The demo job is a streaming pipeline on local Spark: it needs Java 17+ and the `spark` extra (+ pandas for
# PySpark's Arrow hops).
$(VENV)/.spark-installed: $(VENV)/.installed pyproject.toml constraints.txt
	$(PY) -m pip install --quiet $(CONSTRAINTS) -e '.[spark,pandas]'
	touch $@

java-check:
	@command -v java >/dev/null 2>&1 || { echo "make demo runs Spark, which needs Java 17+ on PATH (e.g. apt-get install openjdk-17-jre-headless)"; exit 1; }
	@v=$$(java -version 2>&1 | awk -F'"' '/version/ {split($$2, p, "."); print (p[1] == "1" ? p[2] : p[1]); exit}'); \
	  [ "$${v:-0}" -ge 17 ] || { echo "make demo runs Spark, which needs Java 17+; found Java $$v"; exit 1; }

demo: setup $(VENV)/.spark-installed java-check
	$(PY) -W ignore::FutureWarning -m laketide.spark.demo_pipeline --warehouse demo-warehouse

# The same table operations in plain Python (no JVM): write, append, overwrite a partition, evolve, read.
demo-python: setup
	$(PY) -m laketide.demo --warehouse demo-warehouse

test: setup interop-setup
	LAKETIDE_PYPAIMON_PYTHON=$(abspath $(INTEROP_VENV))/bin/python $(PY) -m pytest -q tests

$(MIN_VENV)/.installed: pyproject.toml constraints-min.txt
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MIN_VENV)/bin/python -m pip install --quiet -c constraints-min.txt -e '.[test]'
	touch $@

# mypy's verdict depends on the annotations of the installed numpy / pyarrow / pyspark: it is checked on the
# pinned versions (`make test`), not on the floors.
test-min: $(MIN_VENV)/.installed interop-setup
	LAKETIDE_PYPAIMON_PYTHON=$(abspath $(INTEROP_VENV))/bin/python $(MIN_VENV)/bin/python -m pytest -q tests \
	  --deselect tests/test_typecheck.py::test_mypy_is_clean

# The benchmark's own peers (deltalake) and chart (matplotlib) come with the `bench` extra.
$(VENV)/.bench-installed: $(VENV)/.installed pyproject.toml constraints.txt
	$(PY) -m pip install --quiet $(CONSTRAINTS) -e '.[test,bench]'
	touch $@

# Two rounds: every sized suite runs at each size twice, sizes alternating, samples pooled (bench/rounds.py).
BENCH_ARGS ?= --rounds 2
bench: setup interop-setup $(VENV)/.bench-installed
	LAKETIDE_PYPAIMON_PYTHON=$(abspath $(INTEROP_VENV))/bin/python MPLBACKEND=Agg $(PY) -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(INTEROP_VENV) $(MIN_VENV) demo-warehouse
