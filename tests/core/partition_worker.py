"""A process that answers partition queries with its own hash seed (PYTHONHASHSEED).

It prints ``hash("seed probe")`` first, then for every request on stdin (a 4-byte big-endian
length and a pickled list of keys) one JSON line: the partition of each key, or the name of the
exception computing it raised.
"""

import json
import pickle
import struct
import sys

from jet.core.partitioner import murmur_partition


def _partition_or_error(key):
    try:
        return murmur_partition(key)
    except Exception as error:  # noqa: BLE001 - reported to the test
        return type(error).__name__


def main() -> None:
    print(hash("seed probe"), flush=True)
    read = sys.stdin.buffer.read
    while header := read(4):
        keys = pickle.loads(read(struct.unpack(">I", header)[0]))
        print(json.dumps([_partition_or_error(key) for key in keys]), flush=True)


if __name__ == "__main__":
    main()
