"""``python -m bench`` (``make bench``): every benchmark, results under bench/results/."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import append_table, pk_table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-peers", action="store_true", help="skip pypaimon in the primary-key benchmark")
    args = parser.parse_args()
    out = Path(__file__).parent / "results"
    text = "# laketide benchmarks\n\n## Append table (2 cores)\n\n"
    text += append_table.run(args.rows, repeat=args.repeat, out_dir=out)
    text += "\n## Primary-key table, 4 buckets: write, upsert rows/4 (half new keys), merge read (2 cores)\n\n"
    text += pk_table.run(args.rows, repeat=args.repeat, out_dir=out, peers=not args.no_peers)
    print(text)
    (Path(__file__).parent.parent / "BENCHMARKS.md").write_text(text)


if __name__ == "__main__":
    main()
