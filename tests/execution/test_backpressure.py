from jet.core import DAG, Edge, EdgeConfig, Processor
from jet.core.processors import items_source_p
from jet.execution.plan import ExecutionPlan
from jet.execution.service import TaskletExecutionService

QUEUE_SIZE = 256
OUTBOX_CAPACITY = 128


class SlowConsumer(Processor):
    """Takes at most 10 items per call and notes how full its input queue is each time."""

    def __init__(self, probe):
        self._probe = probe
        self.received = []

    def process(self, ordinal, inbox):
        self._probe["sizes"].append(self._probe["queue"].size())
        self._probe["received"].extend(inbox.take_chunk(10))


def test_a_slow_consumer_keeps_its_queue_at_the_bound_and_nothing_is_lost():
    probe = {"sizes": [], "received": []}
    dag = DAG()
    source = dag.new_vertex("source", items_source_p(range(50_000)), 1)
    slow = dag.new_vertex("slow", lambda: SlowConsumer(probe), 1)
    dag.edge(Edge.between(source, slow).set_config(
        EdgeConfig(queue_size=QUEUE_SIZE, outbox_capacity=OUTBOX_CAPACITY)))
    plan = ExecutionPlan(dag, cooperative_threads=1)
    tasklets = plan.build()
    probe["queue"] = plan.queues["source->slow"][(0, 0)]
    source_tasklet = tasklets[0]
    outbox_sizes = []
    original_call = source_tasklet.call

    def observed_call():
        state = original_call()
        outbox_sizes.append(len(source_tasklet.outbox.buckets[0]))
        return state

    source_tasklet.call = observed_call
    with TaskletExecutionService(1) as service:
        service.submit(tasklets, "backpressure").result(timeout=60)
    assert max(probe["sizes"]) == QUEUE_SIZE, "the producer filled the queue exactly to its bound"
    assert probe["received"] == list(range(50_000))
    assert max(outbox_sizes) <= 2 * OUTBOX_CAPACITY, "the producer was held back, not buffered"
