"""A process that uses gRPC on other threads can fork to exec (what PySpark does to launch
its JVM from `jet run`): no child dies between its fork and its exec."""

import os
import subprocess
import sys
import textwrap

FORKS = 400

SCRIPT = textwrap.dedent(f"""
    import os, signal, subprocess, threading
    import jet.cluster.member  # noqa: F401 - jet's import is what settles gRPC's fork handling
    from concurrent import futures
    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(8))
    echo_handler = grpc.unary_unary_rpc_method_handler(lambda request, context: request)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t", {{"echo": echo_handler}}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    echo = grpc.insecure_channel(f"127.0.0.1:{{port}}").unary_unary("/t/echo")
    stop = threading.Event()

    def call_forever():
        while not stop.is_set():
            echo(b"x", timeout=10)

    for _ in range(4):
        threading.Thread(target=call_forever, daemon=True).start()
    codes = []
    for _ in range({FORKS}):  # preexec_fn makes subprocess fork() (and run at-fork handlers), as PySpark's does
        child = subprocess.Popen(["/bin/sh", "-c", "exit 0"], stdin=subprocess.PIPE,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        codes.append(child.wait())
    stop.set()
    print("codes", sorted(set(codes)), flush=True)
    os._exit(0)  # not interpreter shutdown under calling threads: that is not what is tested
""")


def test_children_forked_while_grpc_calls_run_all_reach_their_exec():
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    result = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "codes [0]" in result.stdout, (result.stdout, result.stderr[-3000:])
    assert "fork() handlers" not in result.stderr and "Bad file descriptor" not in result.stderr, result.stderr[-3000:]
