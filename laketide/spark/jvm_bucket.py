"""Paimon's fixed bucket computed in the JVM (a Java UDF), so routing rows to writer tasks keeps them out of Python.

The default write path adds each row's bucket before shuffling rows to one task per bucket. As a scalar Arrow UDF
(``with_buckets``' fallback) the key columns cross into Python and back, and Spark buffers every row meanwhile:
measured on local[2] (bench/spark_write_floors.py), that stage costs about twice a plain JVM shuffle. The Java
class (jvm/PaimonBucket.java, the same BinaryRow bytes and murmur hash as laketide.meta.bucket) runs inside
Spark's task instead. It is compiled once per Spark version with the JDK's ``javac`` into a jar under the user's
cache directory and added to the session (``ADD JAR`` ships it to executors). Without a ``javac``, or for key
types the class does not encode (decimals, timestamps, floats, binaries), the Arrow UDF is used.

Paimon: org.apache.paimon.bucket.DefaultBucketFunction
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from laketide.spark.types import spark_name
from laketide.types import (
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["jvm_bucket_column", "jvm_bucket_sql"]

_LOG = logging.getLogger(__name__)
_SOURCE = Path(__file__).parent / "jvm" / "PaimonBucket.java"
_CLASS = "laketide.spark.PaimonBucket"
_FUNCTION = "laketide_paimon_bucket"
# laketide type -> the Spark type a DataFrame column must have to be sent as is
_SPARK_TYPES: dict[type, str] = {
    TinyIntType: "tinyint", SmallIntType: "smallint", IntType: "int", BigIntType: "bigint",
    BooleanType: "boolean", DateType: "date", VarCharType: "string",
}
_LOCK = threading.Lock()
_UNAVAILABLE: list[str] = []  # why no jar could be built in this process (then it is not tried again)
_KNOWN: weakref.WeakSet[SparkSession] = weakref.WeakSet()  # sessions the function is registered in


def jvm_bucket_column(df: DataFrame, key_columns: Sequence[str], key_types: Sequence[DataType],
                      num_buckets: int) -> Column | None:
    """The fixed bucket of each row of ``df`` as a JVM expression; None when the Java UDF cannot compute it
    (a key type it does not encode, a DataFrame column of another type than the table's, no JDK).

    Built as one SQL expression: each PySpark Column operation is ~10 py4j round trips (its call-site tracking),
    a parsed expression 3 (45 -> 4 round trips for one key column, ~15 ms of a write's driver time)."""
    from pyspark.sql import functions as F  # noqa: N812

    sql = jvm_bucket_sql(df, key_columns, key_types, num_buckets)
    return None if sql is None else F.expr(sql)


def jvm_bucket_sql(df: DataFrame, key_columns: Sequence[str], key_types: Sequence[DataType],
                   num_buckets: int) -> str | None:
    """``jvm_bucket_column`` as Spark SQL text (to build into a larger expression)."""
    spark_types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    fields: list[str] = []
    for name, dt in zip(key_columns, key_types, strict=True):
        want = _SPARK_TYPES.get(type(dt))
        if want is None or spark_types.get(name) != want:
            return None
        # A date goes as its epoch day: the slot holds that int, and no time zone touches it on the way.
        column = spark_name(name)
        fields.append(f"'k{len(fields)}', {f'unix_date({column})' if want == 'date' else column}")
    if not _registered(df.sparkSession):
        return None
    return f"{_FUNCTION}(named_struct({', '.join(fields)}), {int(num_buckets)})"


def _registered(spark: SparkSession) -> bool:
    """Whether the UDF is registered in ``spark`` (functions are per session: registered once per session, and
    remembered per session object, since asking the catalog is a py4j round trip, ~6-20 ms of each write)."""
    with _LOCK:
        if _UNAVAILABLE:
            return False
        if spark in _KNOWN:
            return True
        try:
            if not spark.catalog.functionExists(_FUNCTION):
                jar = _jar(spark.version)
                if jar is None:
                    _UNAVAILABLE.append("no jar")
                    return False
                spark.sql(f"ADD JAR '{jar}'")
                spark.udf.registerJavaFunction(_FUNCTION, _CLASS, "int")
            _KNOWN.add(spark)
            return True
        except Exception as e:  # noqa: BLE001 - any failure keeps the Arrow UDF, which is always right
            _LOG.info("laketide: the JVM bucket function is unavailable (%s); buckets are computed in Python", e)
            _UNAVAILABLE.append(str(e))
            return False


def _jar(spark_version: str) -> Path | None:
    """The compiled jar, built on first use (None: no javac, or it failed)."""
    source = _SOURCE.read_bytes()
    digest = hashlib.sha256(source + spark_version.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "laketide" / "jvm"
    jar = cache / f"laketide-bucket-{digest}.jar"
    if jar.exists():
        return jar
    javac = _javac()
    if javac is None:
        _LOG.info("laketide: no javac found; Spark writes compute buckets in Python")
        return None
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    classpath = os.pathsep.join(str(p) for p in sorted(jars.glob("spark-sql-api*.jar")))
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as work:
        out = Path(work) / "classes"
        done = subprocess.run([javac, "--release", "17", "-nowarn", "-cp", classpath, "-d", str(out), str(_SOURCE)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            _LOG.info("laketide: javac failed (%s); Spark writes compute buckets in Python", done.stderr[-500:])
            return None
        partial = Path(work) / jar.name
        with zipfile.ZipFile(partial, "w") as z:
            for cls in sorted(out.rglob("*.class")):
                z.write(cls, cls.relative_to(out).as_posix())
        os.replace(partial, jar)  # atomic: another process compiling at once writes the same bytes
    return jar


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")
