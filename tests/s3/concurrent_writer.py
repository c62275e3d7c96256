"""One of several processes committing to the same S3 table: ``n`` commits of one row each.

    python -m tests.s3.concurrent_writer WAREHOUSE ENDPOINT WRITER N

Prints the snapshot ids it committed, one JSON list.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa

import laketide


def main() -> None:
    warehouse, endpoint, writer, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    cat = laketide.load_catalog(warehouse, endpoint_url=endpoint, key="test-key", secret="test-secret")
    t = cat.table("db.events")
    ids = []
    for i in range(n):
        sid = t.write(pa.table({"writer": pa.array([writer], pa.int32()), "seq": pa.array([i], pa.int32())}))
        ids.append(sid)
    print(json.dumps(ids))


if __name__ == "__main__":
    main()
