"""RoaringBitmap32 in the portable serialization format, with Java RoaringBitmap's container choices.

Java's ``RoaringBitmap32.serialize`` runs ``runOptimize`` first; :func:`serialize_roaring32` makes the same
array / bitmap / run choices (checked against RoaringBitmap 1.3.0), so a bitmap built from a set of positions
gets the bytes Java writes for that set. Used by deletion vectors and the bitmap / BSI file indexes.

Format: https://github.com/RoaringBitmap/RoaringFormatSpec. Paimon: org.apache.paimon.utils.RoaringBitmap32
"""

from __future__ import annotations

import array
import struct
from typing import Final

import numpy as np
from pyroaring import BitMap

__all__ = [
    "RoaringFormatError",
    "bitmap_from_array",
    "bitmap_to_array",
    "deserialize_bitmap",
    "parse_roaring32",
    "serialize_bitmap",
    "serialize_roaring32",
    "serialize_roaring32_many",
    "serialize_roaring32_mask",
    "serialized_size",
]

_COOKIE_RUN: Final = 12347
_COOKIE_NO_RUN: Final = 12346
_NO_OFFSET_THRESHOLD: Final = 4
_ARRAY_MAX_CARD: Final = 4096
_BITMAP_BYTES: Final = 8192


def serialize_roaring32(values: np.ndarray) -> bytes:
    """Serialize ascending unique uint32 ``values`` as Java's ``runOptimize(); serialize()`` would."""
    n = int(values.size)
    if n == 0:
        return struct.pack("<II", _COOKIE_NO_RUN, 0)
    v = values.astype(np.int64, copy=False)
    high = v >> 16
    low = (v & 0xFFFF).astype("<u2")
    cut = np.flatnonzero(high[1:] != high[:-1]) + 1
    starts = np.concatenate(([0], cut))
    ends = np.concatenate((cut, [n]))
    cards = ends - starts
    keys = high[starts]
    size = int(keys.size)

    run_head = np.ones(n, dtype=np.bool_)
    run_head[1:] = (v[1:] - v[:-1]) != 1
    run_head[starts] = True  # 65535 -> 65536 is consecutive but crosses a container
    n_runs = np.add.reduceat(run_head.astype(np.int64), starts)
    run_bytes = 2 + 4 * n_runs
    # ArrayContainer / BitmapContainer.runOptimize: a run container only when strictly smaller than the
    # container's data (2 * card for arrays, 8192 for bitmaps; note: not counting the array's card field).
    as_bitmap = cards > _ARRAY_MAX_CARD
    plain_bytes = np.where(as_bitmap, _BITMAP_BYTES, 2 * cards)
    is_run = plain_bytes > run_bytes
    is_bitmap = as_bitmap & ~is_run
    data_bytes = np.where(is_run, run_bytes, plain_bytes)

    parts: list[bytes] = []
    has_run = bool(is_run.any())
    if has_run:
        parts.append(struct.pack("<I", _COOKIE_RUN | ((size - 1) << 16)))
        parts.append(np.packbits(is_run, bitorder="little").tobytes())
        with_offsets = size >= _NO_OFFSET_THRESHOLD
        header = 4 + (size + 7) // 8 + 4 * size + (4 * size if with_offsets else 0)
    else:
        parts.append(struct.pack("<II", _COOKIE_NO_RUN, size))
        with_offsets = True
        header = 8 + 8 * size
    desc = np.empty((size, 2), dtype="<u2")
    desc[:, 0] = keys
    desc[:, 1] = cards - 1
    parts.append(desc.tobytes())
    if with_offsets:
        offsets = header + np.concatenate(([0], np.cumsum(data_bytes)[:-1]))
        parts.append(offsets.astype("<u4").tobytes())

    if not has_run and not is_bitmap.any():
        parts.append(low.tobytes())  # all array containers: the low halves back to back
        return b"".join(parts)

    heads = np.flatnonzero(run_head)
    tails = np.concatenate((heads[1:] - 1, [n - 1]))
    run_pairs = np.empty((heads.size, 2), dtype="<u2")
    run_pairs[:, 0] = low[heads]
    run_pairs[:, 1] = v[tails] - v[heads]
    run_index = np.concatenate(([0], np.cumsum(n_runs)))
    for i in range(size):
        if is_run[i]:
            a, b = int(run_index[i]), int(run_index[i + 1])
            parts.append(struct.pack("<H", b - a))
            parts.append(run_pairs[a:b].tobytes())
        elif is_bitmap[i]:
            bits = np.zeros(65536, dtype=np.bool_)
            bits[low[starts[i] : ends[i]]] = True
            parts.append(np.packbits(bits, bitorder="little").tobytes())
        else:
            parts.append(low[starts[i] : ends[i]].tobytes())
    return b"".join(parts)


class RoaringFormatError(ValueError):
    """Bytes that are not a valid portable roaring bitmap; callers turn it into their own typed error."""


def parse_roaring32(buf: memoryview, pos: int) -> tuple[np.ndarray, int]:
    """Parse one portable 32-bit roaring bitmap at ``pos``; returns uint32 values and the end position."""
    (cookie,) = struct.unpack_from("<I", buf, pos)
    if cookie & 0xFFFF == _COOKIE_RUN:
        size = (cookie >> 16) + 1
        pos += 4
        flag_len = (size + 7) // 8
        run_flags = np.unpackbits(np.frombuffer(buf, np.uint8, flag_len, pos), bitorder="little")[:size]
        pos += flag_len
        with_offsets = size >= _NO_OFFSET_THRESHOLD
    elif cookie == _COOKIE_NO_RUN:
        (size,) = struct.unpack_from("<I", buf, pos + 4)
        pos += 8
        if size > 65536:
            raise RoaringFormatError(f"roaring bitmap claims {size} containers")
        run_flags = np.zeros(size, dtype=np.uint8)
        with_offsets = True
    else:
        raise RoaringFormatError(f"bad roaring cookie {cookie}")
    desc = np.frombuffer(buf, "<u2", 2 * size, pos).reshape(size, 2).astype(np.int64)
    pos += 4 * size
    if with_offsets:
        pos += 4 * size
    keys, cards = desc[:, 0], desc[:, 1] + 1
    if size > 1 and not bool(np.all(keys[1:] > keys[:-1])):
        raise RoaringFormatError("roaring container keys are not ascending")
    if not run_flags.any() and not bool((cards > _ARRAY_MAX_CARD).any()):
        # Only array containers: the low halves lie back to back.
        total = int(cards.sum())
        lows = np.frombuffer(buf, "<u2", total, pos).astype(np.int64)
        values = lows + np.repeat(keys << 16, cards)
        return _ascending_uint32(values), pos + 2 * total
    chunks: list[np.ndarray] = []
    for i in range(size):
        card = int(cards[i])
        if run_flags[i]:
            (n_runs,) = struct.unpack_from("<H", buf, pos)
            pairs = np.frombuffer(buf, "<u2", 2 * n_runs, pos + 2).reshape(n_runs, 2).astype(np.int64)
            pos += 2 + 4 * n_runs
            lengths = pairs[:, 1] + 1
            if int(lengths.sum()) != card or (n_runs and int((pairs[:, 0] + pairs[:, 1]).max()) > 0xFFFF):
                raise RoaringFormatError("roaring run container does not match its cardinality")
            firsts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
            lows = np.repeat(pairs[:, 0] - firsts, lengths) + np.arange(card, dtype=np.int64)
        elif card > _ARRAY_MAX_CARD:
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, _BITMAP_BYTES, pos), bitorder="little")
            pos += _BITMAP_BYTES
            lows = np.flatnonzero(bits)
            if lows.size != card:
                raise RoaringFormatError("roaring bitmap container does not match its cardinality")
        else:
            lows = np.frombuffer(buf, "<u2", card, pos).astype(np.int64)
            pos += 2 * card
        chunks.append(lows + (int(keys[i]) << 16))
    if not chunks:
        return np.empty(0, dtype=np.uint32), pos
    return _ascending_uint32(np.concatenate(chunks)), pos


def _ascending_uint32(values: np.ndarray) -> np.ndarray:
    if values.size > 1 and not bool(np.all(values[1:] > values[:-1])):
        raise RoaringFormatError("roaring bitmap values are not strictly ascending")
    return values.astype(np.uint32)


def bitmap_from_array(values: np.ndarray) -> BitMap:
    """A pyroaring bitmap of the (uint32-range) ``values``."""
    # array.array is pyroaring's bulk-add fast path; a numpy array would be iterated element by element.
    buf = array.array("I")
    buf.frombytes(np.ascontiguousarray(values, dtype=np.uint32).tobytes())
    return BitMap(buf)


def bitmap_to_array(bitmap: BitMap) -> np.ndarray:
    """The values of ``bitmap``, ascending, as uint32."""
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32)


def serialize_bitmap(bitmap: BitMap) -> bytes:
    """``bitmap`` as Java's ``RoaringBitmap32.serialize()`` writes it."""
    return serialize_roaring32(bitmap_to_array(bitmap))


def deserialize_bitmap(buf: bytes | memoryview) -> BitMap:
    """Parse a portable 32-bit roaring bitmap at the start of ``buf`` (trailing bytes are ignored).

    Raises :class:`RoaringFormatError` for bytes that are not a valid bitmap.
    """
    try:
        return BitMap.deserialize(bytes(buf))
    except ValueError as e:
        raise RoaringFormatError(str(e)) from e


def _put_u16(out: np.ndarray, pos: np.ndarray, values: np.ndarray) -> None:
    v = values.astype(np.uint32, copy=False)
    out[pos] = (v & 0xFF).astype(np.uint8)
    out[pos + 1] = (v >> 8).astype(np.uint8)


def _put_u32(out: np.ndarray, pos: np.ndarray, values: np.ndarray) -> None:
    v = values.astype(np.uint64, copy=False)
    for i in range(4):
        out[pos + i] = ((v >> np.uint64(8 * i)) & np.uint64(0xFF)).astype(np.uint8)


def _exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.size, dtype=np.int64)
    if x.size > 1:
        np.cumsum(x[:-1], out=out[1:])
    return out


def serialize_roaring32_many(values: np.ndarray, bounds: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Serialize many bitmaps at once, each exactly as :func:`serialize_roaring32` would.

    ``values[bounds[g]:bounds[g + 1]]`` are the ascending unique uint32 values of bitmap g. Returns the
    bitmaps' bytes back to back and each one's size. Vectorized over all bitmaps: no per-bitmap Python work
    except for the (large, hence few) bitmap containers.
    """
    v = np.ascontiguousarray(values, dtype=np.int64)
    bounds = np.asarray(bounds, dtype=np.int64)
    n_groups = bounds.size - 1
    n = int(v.size)
    counts = np.diff(bounds)
    gid = np.repeat(np.arange(n_groups, dtype=np.int64), counts)
    high = v >> 16
    low = v & 0xFFFF

    brk = np.ones(n, dtype=np.bool_)
    if n > 1:
        brk[1:] = (gid[1:] != gid[:-1]) | (high[1:] != high[:-1])
    cstart = np.flatnonzero(brk)
    ccard = np.diff(np.append(cstart, n))
    n_cont = int(cstart.size)
    ckey = high[cstart]
    cgid = gid[cstart]
    cid = np.repeat(np.arange(n_cont, dtype=np.int64), ccard)

    run_head = np.ones(n, dtype=np.bool_)
    if n > 1:
        run_head[1:] = (v[1:] - v[:-1]) != 1
    run_head[cstart] = True  # 65535 -> 65536 is consecutive but crosses a container
    heads_cum = np.cumsum(run_head)
    cruns = np.add.reduceat(run_head.astype(np.int64), cstart) if n_cont else np.zeros(0, np.int64)
    as_bitmap = ccard > _ARRAY_MAX_CARD
    plain = np.where(as_bitmap, _BITMAP_BYTES, 2 * ccard)
    run_bytes = 2 + 4 * cruns
    is_run = plain > run_bytes
    is_bitmap = as_bitmap & ~is_run
    cdata = np.where(is_run, run_bytes, plain)

    gsize = np.bincount(cgid, minlength=n_groups).astype(np.int64)
    ghas_run = np.bincount(cgid, weights=is_run, minlength=n_groups) > 0
    with_offsets = ~ghas_run | (gsize >= _NO_OFFSET_THRESHOLD)
    desc_at = np.where(ghas_run, 4 + (gsize + 7) // 8, 8)
    header = desc_at + 4 * gsize + np.where(with_offsets, 4 * gsize, 0)
    gdata = np.bincount(cgid, weights=cdata, minlength=n_groups).astype(np.int64)
    sizes = header + gdata
    gpos = _exclusive_cumsum(sizes)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)

    # Headers: cookie, then the container count or the run flags, descriptors, offsets.
    cookie = np.where(ghas_run, _COOKIE_RUN | ((np.maximum(gsize, 1) - 1) << 16), _COOKIE_NO_RUN)
    _put_u32(out, gpos, cookie)
    plain_groups = np.flatnonzero(~ghas_run)
    _put_u32(out, gpos[plain_groups] + 4, gsize[plain_groups])
    cfirst = _exclusive_cumsum(gsize)
    cidx = np.arange(n_cont, dtype=np.int64) - cfirst[cgid]
    runs = np.flatnonzero(is_run)
    if runs.size:
        np.add.at(out, gpos[cgid[runs]] + 4 + (cidx[runs] >> 3), (1 << (cidx[runs] & 7)).astype(np.uint8))
    desc_pos = gpos[cgid] + desc_at[cgid] + 4 * cidx
    _put_u16(out, desc_pos, ckey)
    _put_u16(out, desc_pos + 2, ccard - 1)
    cdata_rel = header[cgid] + (_exclusive_cumsum(cdata) - _exclusive_cumsum(cdata)[cfirst[cgid]])
    off = np.flatnonzero(with_offsets[cgid])
    _put_u32(out, gpos[cgid[off]] + desc_at[cgid[off]] + 4 * gsize[cgid[off]] + 4 * cidx[off], cdata_rel[off])
    cpos = gpos[cgid] + cdata_rel

    # Array containers: the low halves.
    in_array = ~(is_run | is_bitmap)[cid]
    idx = np.flatnonzero(in_array)
    _put_u16(out, cpos[cid[idx]] + 2 * (idx - cstart[cid[idx]]), low[idx])
    # Run containers: the run count, then (start, length - 1) per run.
    _put_u16(out, cpos[runs], cruns[runs])
    heads = np.flatnonzero(run_head & is_run[cid])
    if heads.size:
        head_cid = cid[heads]
        tails_end = np.append(np.flatnonzero(run_head)[1:], n)  # next head (any container) or the end
        next_head = tails_end[np.searchsorted(np.flatnonzero(run_head), heads)]
        run_len = v[next_head - 1] - v[heads]
        rank: np.ndarray = heads_cum[heads] - heads_cum[cstart[head_cid]]
        pos = cpos[head_cid] + 2 + 4 * rank
        _put_u16(out, pos, low[heads])
        _put_u16(out, pos + 2, run_len)
    # Bitmap containers (more than 4096 values each, so few): the 8 KiB bit set.
    for c in np.flatnonzero(is_bitmap):
        bits = np.zeros(65536, dtype=np.bool_)
        bits[low[cstart[c] : cstart[c] + ccard[c]]] = True
        at = int(cpos[c])
        out[at : at + _BITMAP_BYTES] = np.packbits(bits, bitorder="little")
    return out.tobytes(), sizes


def serialized_size(buf: bytes | memoryview, pos: int = 0) -> int:
    """Byte size of the portable roaring bitmap starting at ``pos`` (reads its headers only).

    Raises :class:`RoaringFormatError` when the headers are malformed or run past the end of ``buf``.
    """
    try:
        start = pos
        (cookie,) = struct.unpack_from("<I", buf, pos)
        if cookie & 0xFFFF == _COOKIE_RUN:
            size = (cookie >> 16) + 1
            pos += 4
            flags = np.unpackbits(np.frombuffer(buf, np.uint8, (size + 7) // 8, pos), bitorder="little")[:size]
            pos += (size + 7) // 8
            with_offsets = size >= _NO_OFFSET_THRESHOLD
        elif cookie == _COOKIE_NO_RUN:
            (size,) = struct.unpack_from("<I", buf, pos + 4)
            if size > 65536:
                raise RoaringFormatError(f"roaring bitmap claims {size} containers")
            pos += 8
            flags = np.zeros(size, dtype=np.uint8)
            with_offsets = True
        else:
            raise RoaringFormatError(f"bad roaring cookie {cookie}")
        cards = np.frombuffer(buf, "<u2", 2 * size, pos).reshape(size, 2)[:, 1].astype(np.int64) + 1
        pos += 4 * size + (4 * size if with_offsets else 0)
        if not flags.any():
            pos += int(np.where(cards > _ARRAY_MAX_CARD, _BITMAP_BYTES, 2 * cards).sum())
        else:
            for i in range(size):
                if flags[i]:
                    (n_runs,) = struct.unpack_from("<H", buf, pos)
                    pos += 2 + 4 * n_runs
                else:
                    pos += _BITMAP_BYTES if cards[i] > _ARRAY_MAX_CARD else 2 * int(cards[i])
    except RoaringFormatError:
        raise
    except (struct.error, ValueError) as e:
        raise RoaringFormatError(f"truncated roaring bitmap ({e})") from e
    if pos > len(buf):
        raise RoaringFormatError(f"roaring bitmap of {pos - start} bytes runs past the end")
    return pos - start


def _header(keys: np.ndarray, cards: np.ndarray, is_run: np.ndarray, data_sizes: np.ndarray) -> bytes:
    """The portable format's header for containers with these keys, cardinalities, kinds and data sizes."""
    size = int(keys.size)
    if size == 0:
        return struct.pack("<II", _COOKIE_NO_RUN, 0)
    parts: list[bytes] = []
    if is_run.any():
        parts.append(struct.pack("<I", _COOKIE_RUN | ((size - 1) << 16)))
        parts.append(np.packbits(is_run, bitorder="little").tobytes())
        with_offsets = size >= _NO_OFFSET_THRESHOLD
        header = 4 + (size + 7) // 8 + 4 * size + (4 * size if with_offsets else 0)
    else:
        parts.append(struct.pack("<II", _COOKIE_NO_RUN, size))
        with_offsets = True
        header = 8 + 8 * size
    desc = np.empty((size, 2), dtype="<u2")
    desc[:, 0] = keys
    desc[:, 1] = cards - 1
    parts.append(desc.tobytes())
    if with_offsets:
        parts.append((header + _exclusive_cumsum(data_sizes)).astype("<u4").tobytes())
    return b"".join(parts)


def serialize_roaring32_mask(mask: np.ndarray) -> bytes:
    """Serialize the positions where the boolean ``mask`` is set, exactly as :func:`serialize_roaring32` would.

    Cheaper for dense bitmaps over consecutive rows (BSI slices, existence bitmaps): it works per 64 Ki chunk
    of the mask, never per set position.
    """
    m = np.ascontiguousarray(mask, dtype=np.bool_)
    n = int(m.size)
    n_chunks = (n + 65535) // 65536
    padded = np.zeros(n_chunks * 65536, dtype=np.bool_)
    padded[:n] = m
    chunks = padded.reshape(n_chunks, 65536)
    starts = chunks.copy()
    starts[:, 1:] &= ~chunks[:, :-1]
    cards = np.count_nonzero(chunks, axis=1)
    runs = np.count_nonzero(starts, axis=1)
    keys = np.flatnonzero(cards)
    cards, runs = cards[keys].astype(np.int64), runs[keys].astype(np.int64)
    plain = np.where(cards > _ARRAY_MAX_CARD, _BITMAP_BYTES, 2 * cards)
    run_bytes = 2 + 4 * runs
    is_run = plain > run_bytes
    data: list[bytes] = []
    for i, key in enumerate(keys.tolist()):
        chunk = chunks[key]
        if is_run[i]:
            first = np.flatnonzero(starts[key])
            ends = np.flatnonzero(chunk & ~np.append(chunk[1:], False))
            pairs = np.empty((first.size, 2), dtype="<u2")
            pairs[:, 0] = first
            pairs[:, 1] = ends - first
            data.append(struct.pack("<H", first.size) + pairs.tobytes())
        elif cards[i] > _ARRAY_MAX_CARD:
            data.append(np.packbits(chunk, bitorder="little").tobytes())
        else:
            data.append(np.flatnonzero(chunk).astype("<u2").tobytes())
    sizes = np.where(is_run, run_bytes, plain)
    return _header(keys, cards, is_run, sizes) + b"".join(data)
