"""A member that stops in order tells its peers, who log it leaving, not a lost connection."""

import signal

from jet.cluster.local.local_cluster import LocalCluster

from tests.cluster.cluster_support import wait_until


def test_a_member_stopping_in_order_is_seen_leaving_not_lost(tmp_path):
    with LocalCluster(3, log_dir=tmp_path) as cluster:
        leaving = cluster.members[2]
        leaving.send_signal(signal.SIGTERM)
        leaving.wait(30)
        for index in (0, 1):
            wait_until(lambda: "member 2 has left the cluster" in cluster.log_paths[index].read_text(), 30,
                       f"member {index} logging that member 2 left")
            log = cluster.log_paths[index].read_text()
            assert "lost its connection with member 2" not in log
            assert " ERROR " not in log and " WARNING " not in log, log
