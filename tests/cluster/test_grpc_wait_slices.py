"""gRPC's sync API sleeps in long slices in our processes, and a signal still reaches a main
thread blocked reading a stream at once."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import grpc._common
import jet.cluster.links.transport as transport

MEMBER_ROOT = Path(__file__).resolve().parents[2] / "member"
SLICE_S = 30.0

BLOCKED_READER = textwrap.dedent(f"""
    import os, signal, threading, time
    from jet.cluster.links import transport
    transport.relax_grpc_wait_slices({SLICE_S})
    server = transport.MemberServer(0, "tok", host="127.0.0.1", member_key="key",
                                    on_client_frame=lambda peer, frame: None).start()
    dialer = transport.PeerConnection(f"127.0.0.1:{{server.port}}", -1, 0, "tok", open_stream=False)
    never_ending = iter(threading.Event().wait, True)  # the request stream stays open
    call = dialer._channel.stream_stream(transport.STREAM_METHOD)(never_ending, metadata=dialer._metadata)
    next(call)  # the server's first heartbeat: the stream is up; the next read blocks
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    try:
        next(call)
        print("a message came")
    except KeyboardInterrupt:
        print(f"interrupted after {{time.monotonic() - started:.2f}} s", flush=True)
    os._exit(0)
""")


def test_importing_the_transport_lengthens_grpcs_wait_slice():
    assert grpc._common.MAXIMUM_WAIT_TIMEOUT == transport.GRPC_WAIT_SLICE_S > 0.1


def test_a_signal_interrupts_a_main_thread_blocked_in_a_stream_read_long_before_the_slice_ends():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(MEMBER_ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", BLOCKED_READER], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.stdout.startswith("interrupted after"), (result.stdout, result.stderr[-2000:])
    waited_s = float(result.stdout.split()[2])
    assert waited_s < SLICE_S / 3, f"the signal waited for the {SLICE_S} s slice: {result.stdout}"
