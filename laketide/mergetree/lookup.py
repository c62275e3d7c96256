"""Looking keys up in the higher levels of one bucket: where does the live version of a key sit?

Each data file of a level above 0 gets a local lookup file the first time a lookup reaches it: its key-value rows
(or only its keys, sequence numbers and row kinds, where the caller needs only positions) as an uncompressed Arrow
IPC file in a local temporary directory, memory-mapped when read (the OS pages it, the process holds only what a
lookup touches). Row ``i`` of the lookup file is row position ``i`` of the data file, which is what a deletion
vector marks. Lookup files are kept per table for the whole process (``writer_lookup_files``), so each data file
is read from the table's file system once, however many writes look into it, and dropped when a compaction
replaces the data file.

They go to ``local-temp-dir`` (default: the system temp dir); ``lookup.cache-max-disk-size`` bounds the disk
they take (per table and process): beyond it the least recently used are removed, and rebuilt from their data
file when a lookup needs them again, as are files nothing read for ``lookup.cache-file-retention`` (as Java's
lookup file cache evicts and expires; mergetree/lookup_files.py).

A lookup is one hash join per file of the probe keys against the file's keys (floating keys compared through
their Java order rank, so -0.0 / NaN match as Java's comparator does), level by level from the lowest: a key
found at one level is not looked up further. Rows already deleted by a deletion vector do not count.

Paimon: mergetree.LookupLevels (with PositionedKeyValueProcessor), lookup.LookupStoreFactory
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from laketide.meta.manifest import DataFileMeta
from laketide.mergetree.key_order import order_column, py_key
from laketide.mergetree.levels import Levels
from laketide.mergetree.lookup_files import LocalLookupFiles
from laketide.mergetree.merge import key_order

__all__ = ["LookupLevels", "LookupResult"]

_POSITION = "_LOOKUP_POSITION"
_READ_BATCH_ROWS = 65536


@dataclass(frozen=True, slots=True)
class LookupResult:
    """Rows found (key-value layout of the files), and per file the row positions they came from."""

    rows: pa.Table | None
    positions: dict[str, np.ndarray]


class LookupLevels:
    """Lazily built local lookup files for the files of one bucket's levels above 0."""

    def __init__(
        self,
        levels: Levels,
        *,
        key_names: Sequence[str],
        read_file: Callable[[DataFileMeta, int], Iterator[pa.Table]],
        files: LocalLookupFiles | None = None,
        layout: str = "",
    ) -> None:
        """``files``: where the lookup files live (shared by the table's writers; None: files of this object's
        own, removed by ``close``); ``layout``: what ``read_file`` gives (schema and columns), part of each
        lookup file's name, so that writers reading the same data file differently do not share its file."""
        self.levels = levels
        self.key_names = list(key_names)
        self.read_file = read_file
        self._owned = files is None
        self._files = LocalLookupFiles() if files is None else files
        self._layout = layout

    def _name(self, file_name: str) -> str:
        return f"{file_name}-{self._layout}"

    def _local(self, f: DataFileMeta) -> pa.Table:
        name = self._name(f.file_name)
        local = self._files.get(name)
        if local is None:
            local = self._files.put(name, self.read_file(f, _READ_BATCH_ROWS))
        return local

    def forget(self, file_name: str) -> None:
        """The file left the bucket: drop its lookup file."""
        self._files.forget(self._name(file_name))

    def close(self) -> None:
        """Remove the lookup files, unless they are shared (they outlive this bucket's writer then)."""
        if self._owned:
            self._files.close()

    # -- lookups -----------------------------------------------------------------------------------------------
    def _files_at(self, level: int, skip: set[str]) -> list[DataFileMeta]:
        return [f for f in self.levels.run_of_level(level).files if f.file_name not in skip]

    def has_files(self, *, start_level: int, skip: set[str]) -> bool:
        """Whether a lookup from ``start_level`` (``skip`` left out) has any file to look in."""
        return any(self._files_at(level, skip) for level in range(max(start_level, 1), self.levels.number_of_levels))

    def _join_keys(self, table: pa.Table) -> pa.Table:
        return pa.table({f"k{i}": order_column(table.column(n)) for i, n in enumerate(self.key_names)})

    def _bounds(self, keys: pa.Table) -> tuple[tuple[object, ...], tuple[object, ...]]:
        if len(self.key_names) == 1 and pa.types.is_integer(keys.schema.field(self.key_names[0]).type):
            # One integer key: its min and max are the bounds in Java's order too, without a sort.
            low_high = pc.min_max(keys.column(self.key_names[0]))
            return py_key([low_high["min"].as_py()]), py_key([low_high["max"].as_py()])
        order = key_order(keys, self.key_names)
        first, last = int(order[0].as_py()), int(order[-1].as_py())
        lo = py_key([keys.column(n)[first].as_py() for n in self.key_names])
        hi = py_key([keys.column(n)[last].as_py() for n in self.key_names])
        return lo, hi

    def lookup(
        self,
        keys: pa.Table,
        *,
        start_level: int,
        skip: set[str],
        deleted_mask: Callable[[str, int], np.ndarray | None],
        first_only: bool = True,
    ) -> LookupResult:
        """The live rows of ``keys`` (distinct, key columns) in levels ``start_level`` and up.

        ``skip``: file names not to look in (the files being compacted); ``deleted_mask``: a file's deleted
        positions (its deletion vector, as the caller maintains it); ``first_only``: a key found at one level is
        not looked up in the levels above (else every version of it is returned).
        """
        positions: dict[str, np.ndarray] = {}
        found: list[pa.Table] = []
        remaining = keys
        names = [f"k{i}" for i in range(len(self.key_names))]
        for level in range(max(start_level, 1), self.levels.number_of_levels):
            if remaining.num_rows == 0:
                break
            files = self._files_at(level, skip)
            if not files:
                continue
            lo, hi = self._bounds(remaining)
            hit_parts: list[pa.Table] = []
            for f in files:
                f_lo, f_hi = self.levels.key_range(f)
                if f_hi < lo or f_lo > hi:
                    continue
                local = self._local(f)
                if local.num_rows == 0:
                    continue
                probe = self._join_keys(remaining)
                side = self._join_keys(local).append_column(_POSITION, pa.array(np.arange(local.num_rows)))
                joined = side.join(probe, keys=names, join_type="inner")
                if joined.num_rows == 0:
                    continue
                pos = np.sort(joined.column(_POSITION).to_numpy())
                mask = deleted_mask(f.file_name, local.num_rows)
                if mask is not None:
                    pos = pos[~mask[pos]]
                if pos.size == 0:
                    continue
                positions[f.file_name] = pos
                rows = local.take(pa.array(pos))
                found.append(rows)
                hit_parts.append(self._join_keys(rows))
            if hit_parts and first_only:
                hits = pa.concat_tables(hit_parts)
                probe = self._join_keys(remaining).append_column(_POSITION, pa.array(np.arange(remaining.num_rows)))
                left = probe.join(hits, keys=names, join_type="left anti")
                remaining = remaining.take(pa.array(np.sort(left.column(_POSITION).to_numpy())))
        rows = pa.concat_tables(found, promote_options="none") if found else None
        return LookupResult(rows, positions)
