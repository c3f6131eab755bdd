"""A map, filter or flat_map function that breaks its stage's contract is named in the job's
error (stage, function, file and line, what it must do); the user's own errors stay as they are."""

import inspect

import pytest

from jet import Pipeline, Sinks, Sources
from jet.execution import JobFailedError, execute

HERE = __file__


def count_words(line):
    return len(line.split())


def two_arguments(a, b):
    return a + b


def run(build):
    p = Pipeline.create()
    build(p.read_from(Sources.items(["a b", "c"]))).write_to(Sinks.list())
    with pytest.raises(JobFailedError) as failure:
        execute(p.to_dag(1), timeout=30)
    return failure.value


def line_of(fn):
    return inspect.getsourcelines(fn)[1]


def test_a_flat_map_returning_a_number_in_a_fused_chain():
    failure = run(lambda s: s.map(str.upper).flat_map(count_words).filter(bool))
    assert failure.tasklet == "fused(map, flat-map, filter)#0"
    assert (f"StageContractError: stage 'flat-map' (flat_map): its function count_words ({HERE}, line "
            f"{line_of(count_words)}) must take one argument, the item, and return an iterable of the items"
            " to emit (a list, a tuple or a generator); for item 'A B' it returned int: 2, which is not"
            " iterable") in failure.traceback_text
    assert "Traceback" not in failure.traceback_text, "every frame is the engine's: the message says it all"


def test_a_named_stage_is_named():
    failure = run(lambda s: s.flat_map(count_words).set_name("split-lines"))
    assert "stage 'split-lines' (flat_map): its function count_words" in failure.traceback_text


def test_a_map_function_that_takes_two_arguments():
    failure = run(lambda s: s.map(str.strip).map(two_arguments))
    assert (f"stage 'map-2' (map): its function two_arguments ({HERE}, line {line_of(two_arguments)}) must"
            " take one argument, the item, and return the item to emit; its signature is (a, b)"
            in failure.traceback_text)


def test_a_filter_function_whose_result_has_no_truth_value():
    numpy = pytest.importorskip("numpy")
    failure = run(lambda s: s.filter(lambda line: numpy.array([1, 2])))
    assert "stage 'filter' (filter): its function test_a_filter_function_whose_result_has_no_truth_value" \
           ".<locals>.<lambda>.<locals>.<lambda>" in failure.traceback_text
    assert ("must take one argument, the item, and return a value usable as true or false; for item 'a b'"
            " it returned ndarray, whose truth value raised ValueError: The truth value of an array with"
            in failure.traceback_text)


def test_a_filter_whose_own_truth_value_method_raises_shows_the_users_frames():
    class Ambiguous:
        def __bool__(self):
            raise ValueError("no truth value")

    failure = run(lambda s: s.filter(lambda line: Ambiguous()))
    assert "StageContractError" not in failure.traceback_text
    assert "in __bool__" in failure.traceback_text.split("Called by the Jet engine")[0]


def test_the_users_own_error_is_not_taken_for_a_broken_contract():
    def explode(line):
        raise KeyError(line)

    failure = run(lambda s: s.map(str.upper).map(explode))
    assert "StageContractError" not in failure.traceback_text
    assert failure.traceback_text.startswith("Traceback (most recent call last):\n"
                                             f'  File "{HERE}", line {line_of(explode) + 1}, in explode')


def test_a_builtin_that_raises_is_not_taken_for_a_broken_contract():
    failure = run(lambda s: s.map(int))
    assert "StageContractError" not in failure.traceback_text
    assert "ValueError: invalid literal for int() with base 10: 'a b'" in failure.traceback_text
