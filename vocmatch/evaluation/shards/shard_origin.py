"""Which shard of which run a saved state holds, and the check that the states merged make
one whole run.

A shard's state records its place (``k`` of ``n``), the run it belongs to (a digest over the
options and the ground-truth and prediction listings, the same for every shard of one run) and
the name the user gave the run, if any (a model's name: it tells apart two runs whose files
are named alike). :func:`check_shards` refuses states that do not make one whole run (a shard
missing or given twice, states of different runs), unless a partial merge is asked for, which
the report then says; states that record no shard (made by an evaluator fed arrays, or saved
by an earlier vocmatch) merge unchecked, and the report says that too.

Example:
    >>> run = "a" * 64
    >>> check = check_shards(
    ...     [("1.vms", ShardOrigin(1, 3, run)), ("2.vms", ShardOrigin(2, 3, run))], partial=True
    ... )
    >>> check.missing, check.notes()
    ((3,), ('partial merge: shard 3 of 3 missing: the numbers are not those of the whole run',))
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vocmatch.errors import Message, Option, StateError
from vocmatch.evaluation.shards.reading_notes import ReadingNotes
from vocmatch.words import plural

__all__ = ["ShardCheck", "ShardOrigin", "check_shards"]

#: A run's digest: SHA-256, in hexadecimal.
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: States, or shard numbers, named in one message before the rest are counted.
_NAMED = 3


@dataclass(frozen=True, slots=True)
class ShardOrigin:
    """The shard a state holds and the run it is part of.

    Attributes:
        shard: Its place, ``k`` of ``shards`` (1-based); a whole run is shard 1 of 1.
        shards: How many shards the run was split into.
        run: The run's digest (SHA-256, hexadecimal) over its options and the listings of
            its ground truth and predictions: every shard of one run has the same.
        run_id: The name the user gave the run (a model's name), or None.
        reading: What the notes of the shard's reading are worded from (the merge of a
            run's shards words them from their sum, as one run does); None when the state
            was not read from files by a run (an evaluator fed arrays).
    """

    shard: int
    shards: int
    run: str
    run_id: str | None = None
    reading: ReadingNotes | None = None

    def __str__(self) -> str:
        return f"{self.shard}/{self.shards}"

    def to_header(self) -> dict[str, Any]:
        """The header's ``shard`` object."""
        header: dict[str, Any] = {
            "shard": self.shard, "shards": self.shards, "run": self.run, "run_id": self.run_id
        }  # fmt: skip
        if self.reading is not None:
            header["reading"] = self.reading.to_header()
        return header

    @classmethod
    def of_header(cls, value: object, source: str) -> ShardOrigin:
        """The origin a state's header records in its ``shard`` object.

        Raises:
            StateError: The object is not one :meth:`to_header` writes.
        """
        if not isinstance(value, Mapping):
            raise StateError(f"{source}: corrupted header (shard)")
        shard, shards = value.get("shard"), value.get("shards")
        run, run_id = value.get("run"), value.get("run_id")
        if not (
            type(shard) is int
            and type(shards) is int
            and 1 <= shard <= shards
            and isinstance(run, str)
            and _DIGEST.fullmatch(run)
            and (run_id is None or isinstance(run_id, str))
        ):
            raise StateError(f"{source}: corrupted header (shard)")
        reading = value.get("reading")
        if reading is not None:
            reading = ReadingNotes.of_header(reading, source)
        return cls(shard, shards, run, run_id, reading)


@dataclass(frozen=True, slots=True)
class ShardCheck:
    """What the check of the states merged found.

    Attributes:
        partial: A partial merge was asked for (states that do not make a whole run merge).
        shards: How many shards the run was split into (None: no state records it, or they
            disagree).
        present: The shard numbers merged, sorted, each once.
        missing: The shard numbers of the run not merged.
        repeated: The shard numbers given more than once.
        runs: How many runs the states recording their shard come from.
        unchecked: The states that record no shard (their completeness cannot be checked).
    """

    partial: bool = False
    shards: int | None = None
    present: tuple[int, ...] = ()
    missing: tuple[int, ...] = ()
    repeated: tuple[int, ...] = ()
    runs: int = 0
    unchecked: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every state records its shard, and together they are every shard of one run,
        each once."""
        return not (self.unchecked or self.missing or self.repeated) and self.runs == 1

    def notes(self) -> tuple[str, ...]:
        """What the report says of the merge: nothing when it is complete."""
        notes: list[str] = []
        if self.partial and self.runs >= 1 and not self.complete:
            found = []
            if self.missing:
                found.append(f"{_shards(self.missing, self.shards)} missing")
            if self.repeated:
                found.append(f"{_shards(self.repeated, self.shards)} given more than once")
            if self.runs > 1 or self.shards is None:
                found.append(f"states of {self.runs} runs merged")
            if found:
                notes.append(
                    f"partial merge: {'; '.join(found)}: the numbers are not those of the whole run"
                )
        if self.unchecked:
            named = _named(self.unchecked)
            records = "records" if len(self.unchecked) == 1 else "record"
            notes.append(
                f"completeness of the merge not checked: {named} {records} no shard of a run "
                "(made from arrays, or saved by an earlier vocmatch)"
            )
        return tuple(notes)


def check_shards(
    states: Sequence[tuple[str, ShardOrigin | None]], *, partial: bool = False
) -> ShardCheck:
    """Check that the states to merge are every shard of one run, each once.

    Args:
        states: Each state's name (its path) and the origin it records, or None.
        partial: Merge states that are not a whole run (what is wrong is found, not refused).

    Returns:
        What was found: complete, or (with ``partial``, or states recording no shard) what
        the report must say.

    Raises:
        StateError: Without ``partial``: states of different runs (other run names, other
            files or options, another number of shards), a shard given twice, or a shard
            missing; the message names the states and the shard numbers.

    Example:
        >>> run = "b" * 64
        >>> check = check_shards([("x", ShardOrigin(2, 2, run)), ("y", ShardOrigin(1, 2, run))])
        >>> check.complete, check.present
        (True, (1, 2))
        >>> try:
        ...     check_shards([("x.vms", ShardOrigin(2, 2, run))])
        ... except StateError as error:
        ...     print(str(error).split(";")[0])
        cannot merge: shard 1 of 2 is missing (x.vms is shard 2/2)
    """
    known = [(source, origin) for source, origin in states if origin is not None]
    unchecked = tuple(source for source, origin in states if origin is None)
    runs = {(o.run, o.run_id, o.shards) for _, o in known}
    if not partial:
        _refuse_other_runs(known)
    counts = {o.shards for _, o in known}
    shards = counts.pop() if len(counts) == 1 else None
    numbers = sorted(o.shard for _, o in known)
    present = tuple(sorted(set(numbers)))
    repeated = tuple(sorted({n for n in numbers if numbers.count(n) > 1}))
    missing = tuple(n for n in range(1, shards + 1) if n not in present) if shards else ()
    check = ShardCheck(partial, shards, present, missing, repeated, len(runs), unchecked)
    if partial or not known:
        return check
    if repeated:
        number = repeated[0]
        given = [source for source, o in known if o.shard == number]
        raise StateError(
            f"cannot merge: shard {number} of {shards} is given more than once ({_named(given)})"
        )
    if missing:
        shown = ", ".join(f"{source} is shard {o}" for source, o in known[:_NAMED])
        more = f" and {len(known) - _NAMED} more" if len(known) > _NAMED else ""
        raise StateError(
            Message(
                f"cannot merge: {_shards(missing, shards)} "
                f"{'is' if len(missing) == 1 else 'are'} missing ({shown}{more}); "
                "give every shard, or ask for a partial merge (",
                Option("partial"),
                ")",
            )
        )
    return check


def _refuse_other_runs(known: Sequence[tuple[str, ShardOrigin]]) -> None:
    """Refuse states of other runs, naming the first state that differs from the first."""
    if not known:
        return
    first_source, first = known[0]
    for source, origin in known[1:]:
        if origin.run_id != first.run_id:
            raise StateError(
                f"cannot merge states of different runs: {first_source} is of run "
                f"{_run_name(first.run_id)}, {source} of run {_run_name(origin.run_id)}"
            )
        if origin.shards != first.shards:
            raise StateError(
                f"cannot merge states of different runs: {first_source} is shard {first}, "
                f"{source} shard {origin}"
            )
        if origin.run != first.run:
            raise StateError(
                f"cannot merge states of different runs: {first_source} and {source} were "
                "made from other ground truth, predictions or options"
            )


def _run_name(run_id: str | None) -> str:
    return "(no run id)" if run_id is None else repr(run_id)


def _shards(numbers: Sequence[int], shards: int | None) -> str:
    """``shard 3 of 4``, ``shards 1, 2 and 3 of 4``, ``shards 1, 2, 3 and 5 more of 9``."""
    of = f" of {shards}" if shards is not None else ""
    if len(numbers) == 1:
        return f"shard {numbers[0]}{of}"
    shown = [str(n) for n in numbers[:_NAMED]]
    if len(numbers) > _NAMED:
        return f"shards {', '.join(shown)} and {len(numbers) - _NAMED} more{of}"
    return f"shards {', '.join(shown[:-1])} and {shown[-1]}{of}"


def _named(sources: Sequence[str]) -> str:
    """``a.vms``, ``a.vms and b.vms``, ``a.vms, b.vms, c.vms and 2 more states``."""
    if len(sources) > _NAMED:
        return f"{', '.join(sources[:_NAMED])} and {plural(len(sources) - _NAMED, 'more state')}"
    if len(sources) == 1:
        return sources[0]
    return f"{', '.join(sources[:-1])} and {sources[-1]}"
