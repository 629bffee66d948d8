"""Which arena bytes are taken when: the occupancy `cvm-bufferize` asks before placing a buffer by first fit.

A placed buffer is a rectangle: the steps it is live (`first` to `last`, both included) by its bytes (`lo` to
`hi`, half-open). `Occupancy` answers, for a new lifetime, the lowest offset where `size` bytes are free at every
one of its steps (first fit), and whether a given range is free, in O(log(steps)) sorted lists of merged byte
ranges rather than a scan of every placed buffer:

    occupancy = Occupancy(steps=len(groups) + 1)
    occupancy.add(first, last, lo, hi)
    offset = occupancy.first_fit(first, last, size)      # lowest offset, as a scan over every placed buffer
    occupancy.is_free(first, last, offset, size)

It is a segment tree over steps: a buffer is recorded in `cover` of the O(log n) nodes whose step ranges
partition its lifetime, and in `under` of those nodes and their ancestors (everything recorded in a subtree). The
buffers live at some step of a node are then those of its `under` and of its ancestors' `cover`, so a query
reads O(log n) lists; each list keeps its byte ranges merged (two touching ranges become one), so a contiguous
region of the arena costs one entry however many buffers fill it.

The answer is the one a scan over every placed buffer live at the same time gives (sorted by offset, the first
gap of `size` bytes): both are the lowest offset >= 0 whose `size` bytes meet no such buffer, given `size` > 0
and non-empty buffers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

ALIGN = 64
ELEMENT_BYTES = {"i32": 4, "i16": 2, "u8": 1, "i8": 1}  # every CVM tensor is int32; packed operands may be narrower


class Ranges:
    """Disjoint half-open byte ranges, sorted, touching ones merged."""

    __slots__ = ("his", "los")

    def __init__(self) -> None:
        self.los: list[int] = []
        self.his: list[int] = []

    def add(self, lo: int, hi: int) -> None:
        los, his = self.los, self.his
        i = bisect_left(his, lo)  # the first range ending at or after lo: it touches or overlaps [lo, hi)
        j = bisect_right(los, hi)  # past the last range starting at or before hi
        if i < j:
            lo, hi = min(lo, los[i]), max(hi, his[j - 1])
        los[i:j] = [lo]
        his[i:j] = [hi]

    def blocker(self, offset: int, size: int) -> int | None:
        """The end of the range that meets [offset, offset + size), if one does (the lowest such range)."""
        i = bisect_right(self.his, offset)  # the first range ending after offset
        if i < len(self.los) and self.los[i] < offset + size:
            return self.his[i]
        return None


def disjoint(rects: list[tuple[int, int, int, int]]) -> bool:
    """Whether no two non-empty rectangles (first step, last step, lo, hi) meet: a sweep over steps keeping the
    live ones sorted by offset (they are disjoint, so a new one meets one iff it meets a neighbour)."""
    order = sorted(range(len(rects)), key=lambda k: rects[k][0])
    ends = sorted(range(len(rects)), key=lambda k: rects[k][1])
    los: list[int] = []  # the live rectangles' byte ranges, sorted
    his: list[int] = []
    e = 0
    for k in order:
        first, _, lo, hi = rects[k]
        while e < len(ends) and rects[ends[e]][1] < first:  # dead before this one starts
            gone = rects[ends[e]][2]
            i = bisect_left(los, gone)
            del los[i], his[i]
            e += 1
        i = bisect_left(los, lo)
        if (i > 0 and his[i - 1] > lo) or (i < len(los) and los[i] < hi):
            return False
        los.insert(i, lo)
        his.insert(i, hi)
    return True


class Occupancy:
    """The byte ranges taken at each of `steps` steps (0 to steps - 1)."""

    def __init__(self, steps: int):
        self.steps = steps
        self.size = 1 << max(0, steps - 1).bit_length()
        self.cover: dict[int, Ranges] = {}  # node -> the ranges of buffers live at all of its steps (not its parent's)
        self.under: dict[int, Ranges] = {}  # node -> the ranges recorded in `cover` of it or of a node below it

    def _nodes(self, first: int, last: int) -> list[int]:
        """The nodes whose step ranges partition first..last (to the tree's end when `last` is the last step: no
        step lives past it, and the heads, which live to it, then take O(log n) nodes at most, not twice that)."""
        if last == self.steps - 1:
            last = self.size - 1
        lo, hi = first + self.size, last + self.size + 1
        nodes: list[int] = []
        while lo < hi:
            if lo & 1:
                nodes.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                nodes.append(hi)
            lo >>= 1
            hi >>= 1
        return nodes

    @staticmethod
    def _ancestors(nodes: list[int]) -> list[int]:
        seen: set[int] = set()
        for n in nodes:
            n >>= 1
            while n and n not in seen:
                seen.add(n)
                n >>= 1
        return list(seen)

    def add(self, first: int, last: int, lo: int, hi: int) -> None:
        """Record bytes lo..hi (half-open) as taken from step `first` to step `last`."""
        nodes = self._nodes(first, last)
        for table, where in ((self.cover, nodes), (self.under, (*nodes, *self._ancestors(nodes)))):
            for n in where:
                ranges = table.get(n)
                if ranges is None:
                    ranges = table[n] = Ranges()
                ranges.add(lo, hi)

    def _lists(self, first: int, last: int) -> list[Ranges]:
        nodes = self._nodes(first, last)
        found = [self.under[n] for n in nodes if n in self.under]
        found += [self.cover[n] for n in self._ancestors(nodes) if n in self.cover]
        return found

    def first_fit(self, first: int, last: int, size: int) -> int:
        """The lowest offset where `size` bytes are free from step `first` to step `last`."""
        lists = self._lists(first, last)
        offset, moved = 0, True
        while moved:
            moved = False
            for ranges in lists:
                end = ranges.blocker(offset, size)
                while end is not None:  # every offset below `end` meets that range
                    offset, moved = end, True
                    end = ranges.blocker(offset, size)
        return offset

    def is_free(self, first: int, last: int, offset: int, size: int) -> bool:
        """Whether bytes offset..offset + size (half-open) are free from step `first` to step `last`."""
        return all(r.blocker(offset, size) is None for r in self._lists(first, last))


@dataclass
class Buffer:
    """A base allocation: the input, a param, or an arena slot (`offset` in bytes)."""

    kind: str  # "input", "param", "arena", or "unused" (an output no kernel stores: `Group.stores_output`)
    elements: int
    element: str = "i32"
    tensor: int = -1  # the input's or param's tensor id
    offset: int = 0
    first: int = 0  # the step that writes it
    last: int = 0  # the last step that reads it

    @property
    def nbytes(self) -> int:
        return self.elements * ELEMENT_BYTES[self.element]

    @property
    def slot_bytes(self) -> int:
        """Its bytes rounded up to the arena's alignment."""
        return -(-self.nbytes // ALIGN) * ALIGN


def _fit(buffers: list[Buffer], steps: int) -> int:
    """Place `buffers` in order, each at the lowest offset where it meets no buffer live at the same time
    (`Occupancy`: O(log steps) lists per buffer). Returns the arena's bytes."""
    occupancy = Occupancy(steps)
    arena = 0
    for b in buffers:
        b.offset = occupancy.first_fit(b.first, b.last, b.slot_bytes)
        occupancy.add(b.first, b.last, b.offset, b.offset + b.slot_bytes)
        arena = max(arena, b.offset + b.slot_bytes)
    return arena


def _fit_by_scan(buffers: list[Buffer]) -> int:
    """`_fit` by scanning every placed buffer (quadratic): for empty buffers, which `Occupancy` cannot hold."""
    placed: list[Buffer] = []
    arena = 0
    for b in buffers:
        busy = sorted((p.offset, p.offset + p.slot_bytes) for p in placed if p.first <= b.last and b.first <= p.last)
        offset = 0
        for lo, hi in busy:
            if offset + b.slot_bytes <= lo:
                break
            offset = max(offset, hi)
        b.offset = offset
        placed.append(b)
        arena = max(arena, offset + b.slot_bytes)
    return arena


def place(buffers: list[Buffer], steps: int) -> int:
    """Offsets in one arena for the buffers of kind "arena", live from `first` to `last` of `steps` steps: first
    fit, largest buffer first (earliest first among equals), 64-byte aligned. Returns the arena's bytes."""
    slots = sorted((b for b in buffers if b.kind == "arena"), key=lambda b: (-b.nbytes, b.first))
    if all(b.slot_bytes > 0 and b.first <= b.last for b in slots):
        return _fit(slots, steps)
    return _fit_by_scan(slots)
