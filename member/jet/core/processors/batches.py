"""Columnar steps: ``map_batches`` functions over whole ``pyarrow.RecordBatch``es, fused with
the row steps (map, filter, flat-map) around them into one chunk function.

A chunk reaching a batch step may hold ``RecordBatch`` items (from a Spark source or an upstream
batch step) or rows; each run of rows becomes one batch (:func:`jet.core.columnar.rows_to_batch`).
After a batch step the chain holds batches; a row step after it, or the chain's end when its
consumer wants rows, turns them into rows with C-level column conversions.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby, repeat
from typing import Any, Callable, Sequence

from jet.core.chain_contract import ChainContract, StageContractError, describe_function
from jet.core.columnar import batch_to_rows, is_batch, rows_to_batch
from jet.core.processors.base import ChunkFn, Supplier
from jet.core.processors.transform import TransformP, compile_chain
from jet.core.special_items import MIN_TIMESTAMP

BATCH_FORMATS = ("arrow", "pandas")
#: What a chain emits: batches as they are, rows, or rows as pairs without event time.
EMIT_MODES = ("batches", "rows", "pairs")
#: Batch items waiting together are joined into batches of up to this many rows (see coalesce).
COALESCE_ROWS = 65536
_RETURNS = "a pyarrow.RecordBatch, a pyarrow.Table, a pandas DataFrame or None"


def _is_pandas_frame(value: Any) -> bool:
    kind = type(value)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pandas")


def _is_table(value: Any) -> bool:
    kind = type(value)
    return kind.__name__ == "Table" and kind.__module__.startswith("pyarrow")


@dataclass(frozen=True)
class BatchFunction:
    """A ``map_batches`` step: ``fn`` over a RecordBatch (``format="arrow"``) or a pandas
    DataFrame (``format="pandas"``); rows coming in are made into batches with ``schema``
    (None: inferred, tuple columns named ``_1`` .. ``_n``); rows going out are tuples, or
    dicts with ``as_dicts``."""

    fn: Callable[[Any], Any]
    stage_name: str
    format: str = "arrow"
    schema: Any = None
    as_dicts: bool = False

    def __post_init__(self) -> None:
        if self.format not in BATCH_FORMATS:
            raise ValueError(f"stage {self.stage_name!r}: format must be one of {BATCH_FORMATS}, "
                             f"got {self.format!r}")
        if not callable(self.fn):
            raise TypeError(f"stage {self.stage_name!r}: map_batches needs a callable, got {self.fn!r}")

    def __call__(self, chunk: list) -> list:
        """The non-empty RecordBatches ``fn`` returns for the batches of ``chunk``."""
        try:
            batches = as_batches(chunk, self.schema)
        except (TypeError, ValueError) as error:  # pyarrow's ArrowInvalid/ArrowTypeError too
            raise StageContractError(
                f"stage {self.stage_name!r} (map_batches): its input rows could not be made into a"
                f" RecordBatch (rows of one kind and width are needed; schema= fixes the types):"
                f" {type(error).__name__}: {error}") from None
        out: list = []
        for batch in batches:
            self._collect(self.fn(batch.to_pandas() if self.format == "pandas" else batch), out)
        return out

    def _collect(self, result: Any, out: list) -> None:
        if result is None:
            return
        if is_batch(result):
            batches = [result]
        elif _is_table(result):
            batches = result.to_batches()
        elif _is_pandas_frame(result):
            import pyarrow as pa
            batches = [pa.RecordBatch.from_pandas(result, preserve_index=False)]
        else:
            raise StageContractError(
                f"stage {self.stage_name!r} (map_batches): its function {describe_function(self.fn)} "
                f"must return {_RETURNS}; it returned {type(result).__module__}.{type(result).__qualname__}")
        out.extend(batch for batch in batches if batch.num_rows)


def as_batches(chunk: list, schema: Any = None) -> list:
    """The chunk as RecordBatches: each run of rows as one batch, and consecutive batch items of
    one schema joined up to :data:`COALESCE_ROWS` rows."""
    if all(map(is_batch, chunk)):
        return coalesce(chunk)
    batches = []
    for batched, run in groupby(chunk, is_batch):
        if batched:
            batches.extend(coalesce(list(run)))
        else:
            batches.append(rows_to_batch(list(run), schema))
    return batches


def coalesce(batches: list, max_rows: int = COALESCE_ROWS) -> list:
    """Consecutive batches of one schema joined while they stay within ``max_rows`` rows. A
    Spark source sends slices of a few thousand rows; a function that aggregates a batch
    reduces far more over one large batch than over many small ones, and the join is a cheap
    copy of the columns."""
    if len(batches) < 2:
        return batches
    out: list = []
    group: list = []
    rows = 0
    for batch in batches:
        if group and (rows + batch.num_rows > max_rows or not batch.schema.equals(group[0].schema)):
            out.append(_joined(group))
            group, rows = [], 0
        group.append(batch)
        rows += batch.num_rows
    out.append(_joined(group))
    return out


def _joined(batches: list) -> Any:
    if len(batches) == 1:
        return batches[0]
    import pyarrow as pa

    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]  # pyarrow >= 14


def explode(batches: list, as_dicts: bool = False) -> list:
    """The rows of ``batches``, in order: tuples, or dicts keyed by column name."""
    row_type = "dict" if as_dicts else "tuple"
    if len(batches) == 1:
        return batch_to_rows(batches[0], row_type)
    rows: list = []
    for batch in batches:
        rows.extend(batch_to_rows(batch, row_type))
    return rows


def _row_segment(steps: list, names: list[str]) -> ChunkFn:
    """Row steps compiled as ``compile_chain`` does; a broken contract is explained by name."""
    chunk_fn, contract = compile_chain(steps), ChainContract(steps, names)

    def run_rows(chunk: list) -> list:
        try:
            return chunk_fn(chunk)
        except Exception as error:
            broken = contract.broken_by(chunk, error)
            if broken is None:
                raise
            raise broken from None

    return run_rows


def compile_batch_chain(steps: Sequence[tuple[str, Any]], stage_names: Sequence[str],
                        emit: str = "rows") -> ChunkFn:
    """One chunk function for a chain of row steps ("map", "filter", "flat_map" with their
    function) and batch steps ("map_batches" with a :class:`BatchFunction`).

    Its input is rows, or when the chain starts with a batch step rows and/or batches. It emits
    what ``emit`` says: "batches" (the chain must end with a batch step), "rows", or "pairs"
    (rows as ``(MIN_TIMESTAMP, row)``, for a consumer that takes pairs on a stream without
    timestamps).
    """
    if emit not in EMIT_MODES:
        raise ValueError(f"emit must be one of {EMIT_MODES}, got {emit!r}")
    if not steps:
        raise ValueError("a chain needs at least one step")
    if emit == "batches" and steps[-1][0] != "map_batches":
        raise ValueError("a chain emits batches only when it ends with a map_batches step")
    # (takes batches, chunk function, whether the rows of its batches are dicts)
    stages: list[tuple[bool, ChunkFn, bool]] = []
    for is_batch_step, run in groupby(zip(steps, stage_names), lambda pair: pair[0][0] == "map_batches"):
        run = list(run)
        if is_batch_step:
            stages.extend((True, function, function.as_dicts) for (_, function), _ in run)
        else:
            segment = _row_segment([step for step, _ in run], [name for _, name in run])
            stages.append((False, segment, False))
    ends_in_batches, last_as_dicts = stages[-1][0], stages[-1][2]

    def run_chain(chunk: list) -> list:
        items, in_batches, as_dicts = chunk, False, False
        for takes_batches, stage, rows_as_dicts in stages:
            if in_batches and not takes_batches:
                items = explode(items, as_dicts)
            items, in_batches, as_dicts = stage(items), takes_batches, rows_as_dicts
        if ends_in_batches and emit != "batches":
            items = explode(items, last_as_dicts)
        if emit == "pairs":
            items = list(zip(repeat(MIN_TIMESTAMP), items))
        return items

    return run_chain


def batch_chain_p(steps: Sequence[tuple[str, Any]], stage_names: Sequence[str],
                  emit: str = "rows") -> Supplier:
    """The supplier of a :class:`TransformP` running :func:`compile_batch_chain`."""
    chunk_fn = compile_batch_chain(steps, stage_names, emit)
    return lambda: TransformP(chunk_fn)


def map_batches_p(fn: Callable[[Any], Any], format: str = "arrow", schema: Any = None,
                  emit: str = "rows", as_dicts: bool = False, name: str = "map-batches") -> Supplier:
    """A processor supplier applying one ``map_batches`` function (see :class:`BatchFunction`)."""
    return batch_chain_p([("map_batches", BatchFunction(fn, name, format, schema, as_dicts))], [name], emit)
