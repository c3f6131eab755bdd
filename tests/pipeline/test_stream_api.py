"""The stream stage API: what each call gives, and the mistakes refused at submission."""

import ast
import inspect

import jet
import pytest
from jet import AggregateOperation, Pipeline, Sinks, Sources, WindowDefinition
from jet import AggregateOperations as A
from jet.core.event_time import DEFAULT_IDLE_TIMEOUT_MS
from jet.pipeline import (
    BatchStage,
    PipelineDefinitionError,
    StageWithKeyAndWindow,
    StageWithWindow,
    StreamSourceStage,
    StreamStage,
    StreamStageWithKey,
)
from jet.pipeline.source_sink import StreamSource


def _stream(name="events", **fields):
    return StreamSource(name, lambda: None, **fields)


def _timestamped(p, name="events"):
    return p.read_from(_stream(name)).with_timestamps(lambda e: e[0], 10)


def _refused(p, *fragments):
    with pytest.raises(PipelineDefinitionError) as raised:
        p.validate()
    for fragment in fragments:
        assert fragment in str(raised.value)
    return str(raised.value)


def test_read_from_a_stream_source_gives_a_stream_source_stage_and_a_batch_source_a_batch_stage():
    p = Pipeline.create()
    assert type(p.read_from(_stream())) is StreamSourceStage
    assert type(p.read_from(Sources.items([1]))) is BatchStage


def test_each_timestamp_choice_gives_a_stream_stage_with_its_policy():
    source = _stream(partition_idle_timeout_ms=1234, native_timestamps=True,
                     policy_supplier=lambda policy: (lambda: None))

    def fn(e):
        return e

    choices = {
        "with_timestamps": lambda s: s.with_timestamps(fn, 50),
        "with_native_timestamps": lambda s: s.with_native_timestamps(20),
        "with_ingestion_timestamps": lambda s: s.with_ingestion_timestamps(),
        "without_timestamps": lambda s: s.without_timestamps(),
    }
    policies = {}
    for method, choose in choices.items():
        stage = choose(Pipeline.create().read_from(source))
        assert type(stage) is StreamStage
        policies[method] = stage._transform.event_time_policy
    assert (policies["with_timestamps"].timestamp_fn, policies["with_timestamps"].allowed_lag_ms) == (fn, 50)
    assert (policies["with_native_timestamps"].timestamp_fn,
            policies["with_native_timestamps"].allowed_lag_ms) == (None, 20)
    assert policies["with_ingestion_timestamps"].ingestion
    assert policies["without_timestamps"] is None
    assert {p.idle_timeout_ms for p in policies.values() if p} == {1234}
    default = Pipeline.create().read_from(_stream()).with_timestamps(fn, 0)._transform.event_time_policy
    assert default.idle_timeout_ms == DEFAULT_IDLE_TIMEOUT_MS


def test_native_timestamps_are_refused_naming_a_source_that_has_none():
    stage = Pipeline.create().read_from(_stream("clicks"))
    with pytest.raises(PipelineDefinitionError, match="source 'clicks' has no native timestamps"):
        stage.with_native_timestamps(10)


@pytest.mark.parametrize("operation", ["window", "map", "grouping_key", "add_timestamps"])
def test_a_stream_operation_before_the_timestamps_are_chosen_names_the_stage_and_the_four_ways(operation):
    """It was a bare AttributeError: 'StreamSourceStage' object has no attribute 'window'."""
    source = Pipeline.create().read_from(_stream("clicks"))
    with pytest.raises(AttributeError) as refused:
        getattr(source, operation)
    message = str(refused.value)
    assert "stage 'clicks'" in message and f".{operation}()" in message
    for way in ("with_timestamps(fn, allowed_lag_ms)", "with_native_timestamps(allowed_lag_ms)",
                "with_ingestion_timestamps()", "without_timestamps()"):
        assert way in message
    with pytest.raises(AttributeError, match="object has no attribute 'no_such_thing'"):
        source.no_such_thing  # noqa: B018


def test_timestamps_are_chosen_once_and_the_lag_is_checked():
    stage = Pipeline.create().read_from(_stream("clicks"))
    with pytest.raises(PipelineDefinitionError, match="allowed_lag_ms must be an int >= 0, got -1"):
        stage.with_timestamps(abs, -1)
    with pytest.raises(PipelineDefinitionError, match="timestamp function must be callable"):
        stage.with_timestamps(5, 1)
    stage.without_timestamps()
    with pytest.raises(PipelineDefinitionError, match="timestamps were already chosen"):
        stage.with_ingestion_timestamps()


def test_stream_stages_stay_streams_through_every_operation():
    p = Pipeline.create()
    stream = _timestamped(p)
    lookup = p.read_from(Sources.items([(1, "a")]))
    other = _timestamped(p, "other")
    stages = [stream.map(abs), stream.filter(bool), stream.flat_map(list), stream.peek(),
              stream.rebalance(), stream.merge(other), stream.hash_join(lookup, abs, abs, max),
              stream.map_stateful(dict, max), stream.filter_stateful(dict, max),
              stream.flat_map_stateful(dict, max), stream.window(WindowDefinition.tumbling(5)).aggregate(A.counting())]
    keyed = stream.grouping_key(abs)
    assert type(keyed) is StreamStageWithKey
    stages += [keyed.map_stateful(100, dict, max), keyed.filter_stateful(0, dict, max),
               keyed.flat_map_stateful(dict, max), keyed.window(WindowDefinition.session(5)).aggregate(A.counting())]
    assert {type(stage) for stage in stages} == {StreamStage}
    assert all(stage._transform.stream for stage in stages)
    assert type(keyed.window(WindowDefinition.tumbling(5))) is StageWithKeyAndWindow
    assert type(stream.window(WindowDefinition.tumbling(5))) is StageWithWindow


def test_stage_names_are_jets_defaults_and_can_be_set():
    p = Pipeline.create()
    stream = _timestamped(p)
    keyed = stream.grouping_key(abs)
    names = [keyed.map_stateful(1, dict, max).name, keyed.filter_stateful(1, dict, max).name,
             keyed.flat_map_stateful(1, dict, max).name, stream.map_stateful(dict, max).name,
             stream.filter_stateful(dict, max).name, stream.flat_map_stateful(dict, max).name,
             keyed.window(WindowDefinition.sliding(4, 2)).aggregate(A.counting()).name,
             stream.window(WindowDefinition.session(4)).aggregate(A.counting()).name,
             p.read_from(_stream()).without_timestamps().add_timestamps(abs, 1).name]
    assert names == ["map-stateful-keyed", "filter-stateful-keyed", "flat-map-stateful-keyed",
                     "map-stateful-global", "filter-stateful-global", "flat-map-stateful-global",
                     "sliding-window", "session-window", "add-timestamps"]
    assert stream.map(abs).set_name("abs").set_local_parallelism(3).name == "abs"


def test_the_keyed_stateful_overload_without_ttl_keeps_state_forever():
    keyed = _timestamped(Pipeline.create()).grouping_key(abs)
    transform = keyed.map_stateful(dict, max)._transform
    assert (transform.ttl_ms, transform.create_fn, transform.fn) == (0, dict, max)


def test_window_definitions_record_sizes_and_early_results():
    tumbling, sliding, session = (WindowDefinition.tumbling(1000), WindowDefinition.sliding(1000, 250),
                                  WindowDefinition.session(300))
    assert (tumbling.size_ms, tumbling.slide_ms, tumbling.is_tumbling) == (1000, 1000, True)
    assert (sliding.size_ms, sliding.slide_ms, sliding.is_tumbling) == (1000, 250, False)
    assert session.timeout_ms == 300
    assert sliding.set_early_results_period(50) is sliding and sliding.early_results_period_ms == 50
    assert tumbling.early_results_period_ms == 0


def _sink(stage):
    stage.write_to(Sinks.list())


@pytest.mark.parametrize("build, fragments", [
    (lambda p: _sink(p.read_from(_stream()).without_timestamps().window(WindowDefinition.tumbling(5))
                     .aggregate(A.counting())),
     ["stage 'sliding-window'", "has no timestamps"]),
    (lambda p: _sink(p.read_from(Sources.items([1])).set_name("numbers").window(WindowDefinition.tumbling(5))
                     .aggregate(A.counting())),
     ["stage 'sliding-window'", "'numbers' is a batch stage"]),
    (lambda p: _sink(_timestamped(p).aggregate(A.counting())),
     ["stage 'aggregate'", "batch operation", "'events' is a stream"]),
    (lambda p: _sink(_timestamped(p).grouping_key(abs).aggregate(A.counting())),
     ["stage 'group-and-aggregate'", "add window("]),
    (lambda p: _sink(p.read_from(Sources.items([1])).hash_join(_timestamped(p, "prices"), abs, abs, max)),
     ["stage 'hash-join'", "lookup side", "'prices' is a stream"]),
    (lambda p: _sink(_timestamped(p).merge(p.read_from(Sources.items([1])).set_name("numbers"))),
     ["stage 'merge'", "stream 'events'", "batch stage 'numbers'"]),
    (lambda p: _sink(_timestamped(p).window(WindowDefinition.sliding(10, 3)).aggregate(A.counting())),
     ["stage 'sliding-window'", "size (10 ms) must be a multiple of its slide (3 ms)"]),
    (lambda p: _sink(_timestamped(p).window(WindowDefinition.tumbling(0)).aggregate(A.counting())),
     ["stage 'sliding-window'", "size must be an int > 0 ms, got 0"]),
    (lambda p: _sink(_timestamped(p).window(WindowDefinition.sliding(10, -5)).aggregate(A.counting())),
     ["slide must be an int > 0 ms, got -5"]),
    (lambda p: _sink(_timestamped(p).window(WindowDefinition.session(0)).aggregate(A.counting())),
     ["stage 'session-window'", "session timeout must be an int > 0 ms, got 0"]),
    (lambda p: _sink(_timestamped(p).window(WindowDefinition.tumbling(5).set_early_results_period(-1))
                     .aggregate(A.counting())),
     ["early results period must be an int >= 0 ms, got -1"]),
    (lambda p: _sink(_timestamped(p).window(WindowDefinition.sliding(10, 5))
                     .aggregate(AggregateOperation(list, lambda a, x: a, name="no-combine"))),
     ["stage 'sliding-window'", "'no-combine' has no combine function"]),
    (lambda p: _sink(p.read_from(_stream()).without_timestamps().grouping_key(abs).map_stateful(100, dict, max)),
     ["stage 'map-stateful-keyed'", "TTL of 100 ms", "has no timestamps"]),
    (lambda p: _sink(_timestamped(p).grouping_key(abs).map_stateful(-1, dict, max)),
     ["stage 'map-stateful-keyed'", "ttl_ms must be an int >= 0"]),
    (lambda p: _sink(_timestamped(p).add_timestamps(abs, 1)),
     ["stage 'add-timestamps'", "'events' already has timestamps"]),
    (lambda p: (p.read_from(_stream("clicks")), _sink(p.read_from(Sources.items([1])))),
     ["stage 'clicks'", "needs with_timestamps(fn, allowed_lag_ms)"]),
])
def test_mistakes_are_refused_at_submission_naming_the_stage(build, fragments):
    p = Pipeline.create()
    build(p)
    _refused(p, *fragments)
    with pytest.raises(PipelineDefinitionError):
        p.to_dag()


def test_what_streams_without_timestamps_may_do_passes_validation():
    p = Pipeline.create()
    bare = p.read_from(_stream()).without_timestamps()
    _sink(bare.map_stateful(dict, max))
    _sink(bare.grouping_key(abs).map_stateful(0, dict, max))
    _sink(bare.add_timestamps(abs, 5).window(WindowDefinition.tumbling(10)).aggregate(A.counting()))
    p.validate()


def test_window_needs_a_window_definition():
    stream = _timestamped(Pipeline.create())
    with pytest.raises(PipelineDefinitionError, match="window\\(\\) needs a WindowDefinition"):
        stream.window(1000)


def test_stages_do_not_import_the_pipeline():
    import jet.pipeline.stages as stages
    import jet.pipeline.stream_stages as stream_stages
    for module in (stages, stream_stages):
        imported = {node.module for node in ast.walk(ast.parse(inspect.getsource(module)))
                    if isinstance(node, ast.ImportFrom)}
        assert "jet.pipeline.pipeline" not in imported


def test_the_stream_api_is_exported_from_jet():
    for name in ("StreamStage", "StreamSourceStage", "WindowDefinition", "WindowResult", "KeyedWindowResult"):
        assert name in jet.__all__ and hasattr(jet, name)
