"""Member settings: precedence, validation, error messages; the cluster token."""

import pytest
from jet.cluster.links.auth import ClusterTokenError, MemberKeyError, load_cluster_token, load_member_key
from jet.cluster.settings import EdgeDefaults, MemberSettings, SettingsError


def _write(tmp_path, text):
    path = tmp_path / "jet.yaml"
    path.write_text(text)
    return path


def test_defaults():
    settings = MemberSettings.load(environ={})
    assert settings.cooperative_threads is None and settings.flow_control_period_ms == 100
    assert settings.edge_defaults == EdgeDefaults(16384, 8192, 16384, 3)
    assert (settings.port, settings.http_port, settings.member_index, settings.peers) == (5701, 8080, None, None)
    assert settings.link_port == 0, "any free port: each pod has its own, peers learn it from OpenLink"
    assert settings.tls_config() is None


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path):
    path = _write(tmp_path, """
cooperative_threads: 2
flow_control_period_ms: 50
port: 6000
edge_defaults:
  queue_size: 10
  packet_size_limit: 100
  receive_window_multiplier: 5
""")
    env = {"JET_FLOW_CONTROL_PERIOD_MS": "70", "JET_QUEUE_SIZE": "20", "JET_PACKET_SIZE_LIMIT": "200"}
    flags = {"queue_size": 30, "port": None, "peers": "a:1,b:2"}
    settings = MemberSettings.load(flags, env, path)
    assert settings.cooperative_threads == 2          # file
    assert settings.flow_control_period_ms == 70      # env over file
    assert settings.edge_defaults == EdgeDefaults(queue_size=30, outbox_capacity=8192, packet_size_limit=200,
                                                  receive_window_multiplier=5)
    assert settings.port == 6000                      # a flag of None is not given
    assert settings.peers == "a:1,b:2"


@pytest.mark.parametrize("flags, env, text, message", [
    ({"queue_size": "many"}, {}, None, r"queue_size from flag --queue-size: expected an integer >= 1, got 'many'"),
    ({}, {"JET_COOPERATIVE_THREADS": "0"}, None,
     r"cooperative_threads from environment variable JET_COOPERATIVE_THREADS: expected an integer >= 1, got '0'"),
    ({}, {}, "edge_defaults:\n  receive_window_multiplier: 2.5\n",
     r"receive_window_multiplier from settings file '.*jet.yaml' \(edge_defaults.receive_window_multiplier\): "
     r"expected an integer >= 1, got 2.5"),
    ({}, {}, "port: 70000\n", r"port from settings file .*: expected a port number 1..65535, got 70000"),
    ({}, {"JET_LINK_PORT": "-1"}, None,
     r"link_port from environment variable JET_LINK_PORT: expected 0 \(any free port\) or a port number 1..65535"),
    ({}, {}, "flow_control_period: 100\n", r"unknown key 'flow_control_period' in settings file"),
    ({}, {}, "edge_defaults:\n  queue: 1\n", r"unknown key edge_defaults.queue in settings file"),
    ({}, {}, "edge_defaults: 5\n", r"edge_defaults in settings file .*: expected a mapping, got 5"),
    ({}, {}, "- a\n", r"expected a mapping at the top"),
    ({}, {}, "a: [\n", r"is not valid YAML"),
    ({"queue_sizes": 1}, {}, None, r"unknown flag setting 'queue_sizes'"),
    ({"member_index": -1}, {}, None, r"member_index from flag --member-index: expected an integer >= 0, got -1"),
    ({"cooperative_threads": True}, {}, None, r"cooperative_threads from flag"),
])
def test_bad_values_name_key_source_and_expectation(tmp_path, flags, env, text, message):
    path = _write(tmp_path, text) if text is not None else None
    with pytest.raises(SettingsError, match=message):
        MemberSettings.load(flags, env, path)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(SettingsError, match="no-such.yaml' cannot be read"):
        MemberSettings.load({}, {}, tmp_path / "no-such.yaml")


def test_empty_file_gives_defaults(tmp_path):
    assert MemberSettings.load({}, {}, _write(tmp_path, "")) == MemberSettings()


def test_tls_paths(tmp_path):
    settings = MemberSettings.load({"tls_cert_file": "/c.pem", "tls_key_file": "/k.pem"}, {})
    assert settings.tls_config().cert_file == "/c.pem"
    with pytest.raises(SettingsError, match="only tls_cert_file is set"):
        MemberSettings.load({"tls_cert_file": "/c.pem"}, {}).tls_config()


def test_token_is_not_in_repr():
    settings = MemberSettings.load({}, {"JET_CLUSTER_TOKEN": "hidden-value"})
    assert settings.token == "hidden-value" and "hidden-value" not in repr(settings)
    assert settings.cluster_token({}) == "hidden-value"


def test_load_cluster_token_sources(tmp_path):
    secret = tmp_path / "token"
    secret.write_text("from-file\n")
    assert load_cluster_token("explicit", {"JET_CLUSTER_TOKEN": "env"}) == "explicit"
    assert load_cluster_token(None, {"JET_CLUSTER_TOKEN": "env", "JET_CLUSTER_TOKEN_FILE": str(secret)}) == "env"
    assert load_cluster_token(None, {"JET_CLUSTER_TOKEN_FILE": str(secret)}) == "from-file"
    with pytest.raises(ClusterTokenError, match="set \\$JET_CLUSTER_TOKEN .* or \\$JET_CLUSTER_TOKEN_FILE"):
        load_cluster_token(None, {})
    with pytest.raises(ClusterTokenError, match="cannot read the cluster token file '/no/such'"):
        load_cluster_token(None, {"JET_CLUSTER_TOKEN_FILE": "/no/such"})
    secret.write_text("  \n")
    with pytest.raises(ClusterTokenError, match="is empty"):
        load_cluster_token(None, {"JET_CLUSTER_TOKEN_FILE": str(secret)})


def test_member_key_sources_and_it_is_not_in_repr(tmp_path):
    settings = MemberSettings.load({}, {"JET_MEMBER_KEY": "hidden-key"})
    assert settings.member_key == "hidden-key" and "hidden-key" not in repr(settings)
    assert settings.member_key_value({}) == "hidden-key"
    key_file = tmp_path / "member-key"
    key_file.write_text("from-file\n")
    from_file = MemberSettings.load({}, {})
    assert from_file.has_member_key({"JET_MEMBER_KEY_FILE": str(key_file)})
    assert from_file.member_key_value({"JET_MEMBER_KEY_FILE": str(key_file)}) == "from-file"
    assert not from_file.has_member_key({})
    with pytest.raises(MemberKeyError, match="no member key: set \\$JET_MEMBER_KEY .* or \\$JET_MEMBER_KEY_FILE"):
        from_file.member_key_value({})
    with pytest.raises(MemberKeyError, match="cannot read the member key file '/no/such'"):
        load_member_key(None, {"JET_MEMBER_KEY_FILE": "/no/such"})


def test_bind_host_is_loopback_outside_a_pod_and_every_interface_inside_one():
    assert MemberSettings().bind_host({}) == "127.0.0.1"
    assert MemberSettings().bind_host({"KUBERNETES_SERVICE_HOST": "10.96.0.1"}) == "[::]"
    assert MemberSettings().bind_host({"POD_NAME": "wc-member-0"}) == "[::]"
    assert MemberSettings.load({"host": "10.1.2.3"}, {}).bind_host({"POD_NAME": "wc-member-0"}) == "10.1.2.3"


def test_stream_and_client_call_limits_are_settings():
    settings = MemberSettings.load({}, {"JET_MAX_CLIENT_STREAMS": "8", "JET_MAX_CLIENT_CALLS": "4"})
    assert (settings.max_client_streams, settings.max_client_calls) == (8, 4)
    with pytest.raises(SettingsError, match="max_client_streams from environment variable "
                                            "JET_MAX_CLIENT_STREAMS: expected an integer >= 1, got '0'"):
        MemberSettings.load({}, {"JET_MAX_CLIENT_STREAMS": "0"})
