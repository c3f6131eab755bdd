"""The `jet` entry point prestarts the members' fork server only for a `jet run` with members."""

import pytest

from jet.launcher import boots_members


@pytest.mark.parametrize("args, default_members, expected", [
    (["run", "job.py"], 2, True),
    (["run", "job.py"], 1, False),  # one member runs in the command's own process
    (["run", "job.py", "--members", "1"], 2, False),
    (["run", "job.py", "--members=1"], 2, False),
    (["run", "job.py", "--members", "3"], 1, True),
    (["--log-level", "WARNING", "run", "job.py"], 2, True),
    (["--log-level=DEBUG", "run", "job.py", "--members", "2"], 2, True),
    (["run", "job.py", "--dot"], 2, False),
    (["run", "--help"], 2, False),
    (["job", "list"], 2, False),
    (["member", "--peers", "a:1,b:2"], 2, False),
    (["--log-level", "run"], 2, False),  # "run" is the option's value there: click refuses it
    ([], 2, False),
    (["run", "job.py", "--members", "many"], 2, True),  # click will refuse it; the guess is harmless
])
def test_boots_members_reads_the_command_line_as_jet_run_does(args, default_members, expected):
    assert boots_members(args, default_members) is expected
