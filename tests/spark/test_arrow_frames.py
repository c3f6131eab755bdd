"""Arrow frames: payloads read in place are aligned as Arrow's compute kernels expect."""

from __future__ import annotations

import pyarrow as pa
import pytest
from jet.cluster.links.packets import FrameType
from jet.connectors.spark import protocol as p


@pytest.mark.parametrize("name", ["j", "jo", "job", "job-1", "job-12", "job-123", "job-1234", "job-12345"])
def test_decoded_batches_are_aligned_and_equal(name):
    batch = pa.record_batch({"key": pa.array(range(100), pa.int64()), "value": pa.array([0.5] * 100)})
    frame, size = p.encode_sized(FrameType.SPARK_REQUEST, {"op": p.ROWS, "job": name, "fmt": p.ARROW},
                                 p.to_ipc(batch.schema, [batch]))
    header, offset = p.decode_header(frame)
    assert header["job"] == name and size == len(frame) - offset
    schema, [decoded] = p.decode_ipc(frame, offset)
    assert schema == batch.schema and decoded.equals(batch)
    assert all(buffer.address % p.IPC_ALIGNMENT == 0
               for column in decoded.columns for buffer in column.buffers() if buffer is not None)
