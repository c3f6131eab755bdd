"""Job files the ``jet run`` tests write, as a user would."""

FAILING_MAP = '''
from jet import Pipeline, Sinks, Sources


def explode(x):
    raise ValueError(f"bad item {x}")


def pipeline():
    p = Pipeline.create()
    p.read_from(Sources.items([1, 2, 3, 4])).map(explode).write_to(Sinks.list())
    return p
'''

FLAT_MAP_RETURNING_A_NUMBER = '''
from jet import Pipeline, Sinks, Sources


def count_words(line):
    return len(line.split())


def pipeline():
    p = Pipeline.create()
    (p.read_from(Sources.items(["a b"])).map(str.upper).flat_map(count_words)
     .filter(bool).write_to(Sinks.list()))
    return p
'''

RAISES_WHILE_DEFINING = '''
def read_settings():
    raise ValueError("no settings in /etc/nowhere")


def pipeline():
    read_settings()
'''

#: A source that touches the file MARKER (the job's argument) once it runs, then emits an item
#: every 10 ms forever.
ENDLESS = '''
import time
from pathlib import Path

from jet.core import DAG, Edge, Processor
from jet.core.processors import noop_p


class Endless(Processor):
    def __init__(self, marker):
        self.marker = Path(marker)

    def complete(self):
        self.marker.touch()
        time.sleep(0.01)
        self.outbox.offer(1)
        return False


def dag(marker):
    d = DAG()
    source = d.new_vertex("endless", lambda: Endless(marker), 1)
    sink = d.new_vertex("sink", noop_p(), 1)
    d.edge(Edge.between(source, sink).distributed())  # with members, they all take part
    return d
'''

TWO_LIST_SINKS = '''
from jet import Pipeline, Sinks, Sources


def pipeline(count="25"):
    p = Pipeline.create()
    numbers = p.read_from(Sources.items(list(range(int(count)))))
    numbers.map(lambda n: (n, {n % 3})).write_to(Sinks.list("pairs"))
    numbers.filter(lambda n: n % 2 == 0).write_to(Sinks.list("even"))
    return p
'''

ONE_LIST_SINK = '''
from jet import Pipeline, Sinks, Sources


def pipeline(count="25"):
    p = Pipeline.create()
    p.read_from(Sources.items(list(range(int(count))))).map(lambda n: (f"n{n}", n * n)).write_to(Sinks.list())
    return p
'''
