"""The ACL decision (broker.auth): a client x topic x action matrix, every cross-device
access denied, every legitimate one allowed; MQTT filter containment; the Mosquitto files."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.broker.auth import (
    ADMIN,
    DENIED,
    PATTERNS,
    RULES,
    SERVICES,
    AccessPolicy,
    AuthError,
    Credentials,
    check_device_id,
    filter_covers,
    mosquitto_acl_text,
    mosquitto_conf_text,
    mosquitto_hash,
    mosquitto_password_lines,
    topic_matches,
    use_credentials,
    verify_mosquitto_hash,
)

RUN = "acl1"
DEVICES = ("d0001", "d0002", "d0003")
P = f"ldp/{RUN}"


def client(user: str, suffix: str = "") -> str:
    return f"{RUN}-{user}{suffix}"


def cross_device_cases(me: str, other: str) -> list[tuple[str, str]]:
    """(action, topic) through which ``me`` would act as, or read for, ``other``."""
    return [
        # publishing as the other device (its upstream, or its source level)
        ("publish", f"{P}/dev/{other}/up/hello"),
        ("publish", f"{P}/dev/{other}/up/sw_report"),
        ("publish", f"{P}/dev/{other}/up/sa_abort"),
        ("publish", f"{P}/dev/{other}/up/a/b"),
        ("publish", f"{P}/dev/{other}/up"),
        ("publish", f"{P}/dev/{other}/in/{other}"),
        ("publish", f"{P}/dev/{me}/in/{other}"),  # forging the other's message to me
        ("publish", f"{P}/dev/{DEVICES[0] if other != DEVICES[0] else DEVICES[1]}/in/{other}"),
        # publishing as a service (collector, relay) into the other's inbox
        ("publish", f"{P}/dev/{other}/in/collector"),
        ("publish", f"{P}/dev/{other}/in/relay"),
        # reading the other's inbox or upstream
        ("subscribe", f"{P}/dev/{other}/in/+"),
        ("subscribe", f"{P}/dev/{other}/in/#"),
        ("subscribe", f"{P}/dev/{other}/in/{me}"),
        ("subscribe", f"{P}/dev/{other}/in/collector"),
        ("subscribe", f"{P}/dev/{other}/up/#"),
        ("subscribe", f"{P}/dev/{other}/up/sw_report"),
        ("subscribe", f"{P}/dev/{other}/#"),
        ("subscribe", f"{P}/dev/+/in/#"),
        ("subscribe", f"{P}/dev/+/in/+"),
        ("subscribe", f"{P}/dev/+/in/{me}"),
        ("subscribe", f"{P}/dev/+/up/#"),
        ("subscribe", f"{P}/dev/#"),
        ("subscribe", f"{P}/+/{other}/in/+"),
        ("subscribe", f"{P}/+/+/in/+"),
        ("subscribe", f"{P}/#"),
        ("subscribe", "ldp/+/dev/+/in/+"),
        ("subscribe", "ldp/#"),
        ("subscribe", "#"),
        ("subscribe", "+/+"),
        ("subscribe", "+/#"),
        ("subscribe", f"+/{RUN}/dev/{other}/in/+"),
        ("receive", f"{P}/dev/{other}/in/collector"),
        ("receive", f"{P}/dev/{other}/in/{me}"),
        ("receive", f"{P}/dev/{other}/up/hello"),
    ]


def device_other_denials(me: str) -> list[tuple[str, str]]:
    """Not another device's, but still not a device's business."""
    return [
        ("subscribe", "$SYS/#"),
        ("subscribe", "$SYS/broker/clients/connected"),
        ("subscribe", "+/broker/#"),
        ("receive", "$SYS/broker/uptime"),
        ("publish", "$SYS/broker/uptime"),
        ("publish", f"{P}/ctl/stage"),
        ("publish", f"{P}/rel/degrees"),
        ("publish", f"{P}/svc/collector/reject"),
        ("subscribe", f"{P}/svc/#"),
        ("subscribe", f"{P}/rel/#"),
        ("subscribe", "ldp/+/ctl/#"),
        ("subscribe", f"{P}/+/#"),
        # other runs
        ("publish", f"ldp/other/dev/{me}/up/hello"),
        ("subscribe", f"ldp/other/dev/{me}/in/+"),
        ("subscribe", "ldp/other/ctl/#"),
        # empty levels
        ("publish", f"ldp//dev/{me}/up/hello"),
        ("publish", f"{P}/dev//up/hello"),
        ("publish", f"{P}//{me}/up/hello"),
        ("publish", f"/{P}/dev/{me}/up/hello"),
        ("subscribe", f"ldp//dev/{me}/in/+"),
        ("subscribe", f"{P}/dev//in/+"),
        ("publish", f"{P}/dev/{me}/in//"),
        # invalid topics and filters
        ("publish", f"{P}/dev/{me}/up/+"),
        ("publish", f"{P}/dev/{me}/up/#"),
        ("publish", f"{P}/dev/{me}/up/a\x00b"),
        ("publish", ""),
        ("subscribe", ""),
        ("subscribe", f"{P}/dev/{me}/in/#/x"),
        ("subscribe", f"{P}/dev/{me}/in/a+"),
        ("subscribe", f"{P}/dev/{me}/in/+x"),
        ("subscribe", f"{P}/ctl/st#"),
        # unicode look-alikes of its own id and of the run (no normalisation)
        ("publish", f"{P}/dev/{me.replace('0', '０')}/up/hello"),
        ("publish", f"{P}/dev/{me}\u200b/up/hello"),
        ("publish", f"{P}/dev/{me.upper()}/up/hello"),
        ("publish", f"ldp/{RUN.replace('a', 'а')}/dev/{me}/up/hello"),  # Cyrillic a
        ("subscribe", f"{P}/dev/{me}\u0301/in/+"),
        ("publish", f"LDP/{RUN}/dev/{me}/up/hello"),
    ]


def device_allowed(me: str, other: str) -> list[tuple[str, str]]:
    return [
        ("publish", f"{P}/dev/{me}/up/hello"),
        ("publish", f"{P}/dev/{me}/up/sw_report"),
        ("publish", f"{P}/dev/{me}/up/sa_masked"),
        ("publish", f"{P}/dev/{me}/up/peer_batch"),
        ("publish", f"{P}/dev/{me}/up/dsr"),
        ("publish", f"{P}/dev/{me}/up/lpea_done"),
        ("publish", f"{P}/dev/{me}/up/é"),  # its own namespace; the collector refuses it
        ("publish", f"{P}/dev/{other}/in/{me}"),
        ("publish", f"{P}/dev/{me}/in/{me}"),
        ("subscribe", f"{P}/dev/{me}/in/collector"),
        ("subscribe", f"{P}/dev/{me}/in/relay"),
        ("subscribe", f"{P}/dev/{me}/in/{other}"),
        ("subscribe", f"{P}/dev/{me}/in/+"),
        ("subscribe", f"{P}/dev/{me}/in/"),
        ("subscribe", f"{P}/ctl/#"),
        ("subscribe", f"{P}/ctl/+"),
        ("subscribe", f"{P}/ctl/stage"),
        ("subscribe", f"{P}/ctl/a/b"),
        ("receive", f"{P}/dev/{me}/in/collector"),
        ("receive", f"{P}/ctl/stage"),
    ]


SERVICE_ALLOWED = {
    "collector": [
        ("publish", f"{P}/ctl/stage"),
        ("publish", f"{P}/ctl/cadr_query"),
        ("publish", f"{P}/rel/degrees"),
        ("publish", f"{P}/svc/collector/reject"),
        ("publish", f"{P}/dev/d0001/in/collector"),
        ("subscribe", f"{P}/dev/+/up/#"),
        ("subscribe", f"{P}/dev/d0002/up/dsr"),
        ("subscribe", f"{P}/dev/+/up/sw_report"),
        ("subscribe", f"{P}/svc/relay/phase"),
        ("subscribe", f"{P}/ctl/stage"),
        ("receive", f"{P}/dev/d0003/up/hello"),
    ],
    "recorder": [
        ("subscribe", f"{P}/#"),
        ("subscribe", f"{P}/ctl/#"),
        ("subscribe", f"{P}/dev/+/in/+"),
        ("receive", f"{P}/dev/d0001/in/d0002"),
        ("publish", f"{P}/svc/recorder/progress"),
    ],
    "gateway": [
        ("publish", f"{P}/dev/d0001/up/hello"),
        ("publish", f"{P}/dev/d0002/up/sw_report"),
        ("publish", f"{P}/dev/d0001/in/d0002"),
        ("subscribe", f"{P}/dev/d0001/in/collector"),
        ("subscribe", f"{P}/dev/+/in/+"),
        ("subscribe", f"{P}/ctl/#"),
    ],
    "relay": [
        ("publish", f"{P}/dev/d0001/in/relay"),
        ("publish", f"{P}/ctl/peer_step"),
        ("publish", f"{P}/svc/relay/phase"),
        ("publish", f"{P}/svc/relay/reject"),
        ("subscribe", f"{P}/dev/d0001/up/peer_batch"),
        ("subscribe", f"{P}/dev/+/up/peer_batch"),
        ("subscribe", f"{P}/ctl/relay_phase"),
        ("subscribe", f"{P}/ctl/stage"),
    ],
    ADMIN: [
        ("publish", f"{P}/dev/d0001/up/hello"),
        ("publish", f"{P}/ctl/stage"),
        ("subscribe", f"{P}/#"),
        ("subscribe", "$SYS/#"),
        ("receive", "$SYS/broker/uptime"),
    ],
}

SERVICE_DENIED = {
    "collector": [
        ("publish", f"{P}/dev/d0001/up/hello"),  # never as a device
        ("publish", f"{P}/dev/d0001/in/relay"),
        ("publish", f"{P}/dev/d0001/in/d0002"),
        ("publish", f"{P}/svc/relay/phase"),
        ("subscribe", f"{P}/dev/+/in/+"),
        ("subscribe", f"{P}/dev/d0001/in/d0002"),
        ("subscribe", f"{P}/#"),
        ("subscribe", "$SYS/#"),
        ("subscribe", "#"),
        ("publish", "ldp/other/ctl/stage"),
        # the relay's round broadcasts (issue 20: their pace follows the negotiation)
        ("publish", f"{P}/ctl/peer_step"),
        ("subscribe", f"{P}/ctl/peer_step"),
        ("subscribe", f"{P}/ctl/#"),  # could match them (Mosquitto: granted, filtered)
        ("subscribe", f"{P}/ctl/+"),
        ("receive", f"{P}/ctl/peer_step"),
    ],
    "recorder": [
        ("publish", f"{P}/ctl/stage"),
        ("publish", f"{P}/dev/d0001/up/hello"),
        ("publish", f"{P}/rel/degrees"),
        ("subscribe", "ldp/#"),
        ("subscribe", "#"),
        ("subscribe", "$SYS/#"),
        ("subscribe", "ldp/other/#"),
    ],
    "gateway": [
        ("publish", f"{P}/ctl/stage"),  # never as the collector
        ("publish", f"{P}/rel/degrees"),
        ("subscribe", f"{P}/dev/+/up/#"),  # no other device's reports
        ("subscribe", f"{P}/#"),
        ("publish", "ldp/other-run/dev/d0001/up/hello"),
        ("subscribe", "$SYS/#"),
    ],
    "relay": [
        ("publish", f"{P}/ctl/stage"),
        ("publish", f"{P}/ctl/relay_phase"),
        ("publish", f"{P}/dev/d0001/in/collector"),
        ("publish", f"{P}/dev/d0001/up/peer_batch"),
        ("subscribe", f"{P}/dev/+/up/#"),
        ("subscribe", f"{P}/dev/d0001/up/dsr"),
        ("subscribe", f"{P}/dev/+/in/+"),
        ("subscribe", f"{P}/svc/#"),
    ],
    ADMIN: [
        ("publish", "$SYS/broker/uptime"),
        ("subscribe", "#"),
        ("subscribe", "ldp/#"),
        ("publish", "ldp/other/dev/d0001/up/hello"),
    ],
}


@pytest.fixture(scope="module")
def creds() -> Credentials:
    return Credentials.generate(RUN, DEVICES)


def test_every_cross_device_access_is_denied(creds):
    policy = creds.policy
    decisions = []
    for me, other in itertools.permutations(DEVICES, 2):
        for suffix in ("", "-sa", "-lpea"):
            for action, topic in cross_device_cases(me, other):
                decisions.append(
                    (
                        me,
                        suffix,
                        action,
                        topic,
                        policy.allowed(me, client(me, suffix), action, topic),
                    )
                )
    allowed = [d for d in decisions if d[-1]]
    assert not allowed, allowed[:10]
    assert len(decisions) == 6 * 3 * len(cross_device_cases("a", "b"))  # 612 cases, 100% denied


def test_devices_are_denied_system_other_run_empty_invalid_and_lookalike_topics(creds):
    for me in DEVICES:
        for action, topic in device_other_denials(me):
            assert not creds.allowed(me, client(me), action, topic), (me, action, topic)


def test_devices_may_do_their_job(creds):
    for me, other in itertools.permutations(DEVICES, 2):
        for suffix in ("", "-sa", "-lpea"):
            for action, topic in device_allowed(me, other):
                assert creds.allowed(me, client(me, suffix), action, topic), (me, action, topic)


@pytest.mark.parametrize("role", [*SERVICES, ADMIN])
def test_service_roles(creds, role):
    for suffix in ("", "-in-0", "-sa-sum0-in-3"):
        for action, topic in SERVICE_ALLOWED[role]:
            assert creds.allowed(role, client(role, suffix), action, topic), (action, topic)
        for action, topic in SERVICE_DENIED[role]:
            assert not creds.allowed(role, client(role, suffix), action, topic), (action, topic)


def test_the_client_id_must_belong_to_the_username(creds):
    own = f"{P}/dev/d0001/up/hello"
    assert creds.allowed("d0001", client("d0001"), "publish", own)
    for wrong in (
        client("d0002"),
        client("d0001", "-x"),
        client("d0001-sa", "-sa"),
        client("collector"),
        "other-d0001",
        "d0001",
        "",
        None,
        f"{RUN}-d0001/x",
    ):
        assert not creds.allowed("d0001", wrong, "publish", own), wrong
    # a service may use its fan-in ids, never a device's or another service's
    assert creds.allowed("relay", client("relay", "-in-2"), "publish", f"{P}/ctl/peer_step")
    assert not creds.allowed("relay", client("d0001"), "publish", f"{P}/ctl/peer_step")
    assert not creds.allowed("relay", client("relayx"), "publish", f"{P}/ctl/peer_step")
    assert not creds.allowed("collector", client("relay"), "publish", f"{P}/ctl/stage")


def test_authentication(creds):
    for user in (*DEVICES, *SERVICES, ADMIN):
        cid = client(user) if user != ADMIN else client("attacker")
        assert creds.authenticate(user, creds.password(user), cid)
        assert creds.authenticate(user, creds.password(user).encode(), cid)
        assert not creds.authenticate(user, creds.password(user) + "x", cid)
        assert not creds.authenticate(user, "", cid)
        assert not creds.authenticate(user, None, cid)
    assert not creds.authenticate(None, None, client("d0001"))  # anonymous
    assert not creds.authenticate("d0001", creds.password("d0002"), client("d0001"))
    assert not creds.authenticate("d0001", creds.password("d0001"), client("d0002"))
    assert not creds.authenticate("d9999", creds.password("d9999"), client("d9999"))  # not listed
    assert not creds.authenticate("dé", creds.password("dé"), client("dé"))
    assert not creds.authenticate("device", creds.password("device"), client("device"))
    assert not creds.authenticate("d0001", b"\xff", client("d0001"))
    other_run = Credentials(RUN, b"k" * 32, DEVICES)
    assert not other_run.authenticate("d0001", creds.password("d0001"), client("d0001"))
    assert len({creds.password(u) for u in (*DEVICES, *SERVICES, ADMIN)}) == 3 + len(SERVICES) + 1
    assert len(creds.password("d0001")) >= 40


def test_unknown_unicode_and_unlisted_usernames_have_no_rights(creds):
    for user in ("dé", "d0001\u200b", "ｄ0001", "", "+", "#", "a/b", "d9999", "device"):
        for action, topic in device_allowed("d0001", "d0002"):
            assert not creds.allowed(user, client(user), action, topic.replace("d0001", user))
    # a policy without a device list admits any well-formed id, and still nothing cross-device
    open_policy = AccessPolicy(RUN)
    assert open_policy.allowed("n0042", client("n0042"), "publish", f"{P}/dev/n0042/up/dsr")
    assert not open_policy.allowed("n0042", client("n0042"), "publish", f"{P}/dev/n0043/up/dsr")
    assert not open_policy.allowed("dé", client("dé"), "publish", f"{P}/dev/dé/up/dsr")


def test_client_ids_map_to_identities(creds):
    assert creds.for_client(client("d0001")) == ("d0001", creds.password("d0001"))
    assert creds.for_client(client("d0002", "-sa"))[0] == "d0002"
    assert creds.for_client(client("d0003", "-lpea"))[0] == "d0003"
    assert creds.for_client(client("collector", "-sa-sum0-in-0"))[0] == "collector"
    assert creds.for_client(client("relay", "-in-1"))[0] == "relay"
    assert creds.for_client(client("recorder"))[0] == "recorder"
    assert creds.for_client(client("attacker")) is None
    assert creds.for_client("other-d0001") is None
    assert creds.for_client(client("admin")) is None  # admin is only ever asked for by name


@pytest.mark.parametrize(
    "device",
    ["collector", "relay", "admin", "relay-in", "collector-x", "d1-sa", "d1-lpea", "é", ""],
)
def test_ambiguous_device_ids_are_refused(device):
    with pytest.raises(ValueError):
        check_device_id(device)


def test_filter_containment_examples():
    assert filter_covers("a/+/c", "a/b/c")
    assert filter_covers("a/+/c", "a/+/c")
    assert not filter_covers("a/b/c", "a/+/c")
    assert filter_covers("a/#", "a")
    assert filter_covers("a/#", "a/#")
    assert filter_covers("a/#", "a/+/#")
    assert not filter_covers("a/+", "a/#")
    assert not filter_covers("a/+", "a")
    assert not filter_covers("a/+/+", "a/+")
    assert filter_covers("#", "a/b")
    assert not filter_covers("#", "$SYS/a")
    assert not filter_covers("+/#", "$SYS/#")
    assert filter_covers("$SYS/#", "$SYS/broker/+")
    assert filter_covers("a/+", "a/")
    assert not filter_covers("a//c", "a/+/c")
    assert topic_matches("a/+", "a/")
    assert not topic_matches("#", "$SYS/x")


LEVELS = st.sampled_from(["a", "b", "", "$SYS", "é"])


@st.composite
def filters(draw):
    levels = draw(st.lists(st.one_of(LEVELS, st.just("+")), min_size=1, max_size=4))
    if draw(st.booleans()):
        levels.append("#")
    return "/".join(levels)


@st.composite
def topics_for(draw, pattern: str):
    """A concrete topic matched by ``pattern``."""
    out = []
    for level in pattern.split("/"):
        if level == "#":
            out.extend(draw(st.lists(LEVELS, max_size=2)))
            break
        out.append(draw(LEVELS) if level == "+" else level)
    return "/".join(out)


@settings(max_examples=400, deadline=None)
@given(rule=filters(), pattern=filters(), data=st.data())
def test_filter_containment_is_sound(rule, pattern, data):
    """If a rule covers a filter, every topic the filter matches, the rule matches."""
    if not filter_covers(rule, pattern):
        return
    for _ in range(5):
        topic = data.draw(topics_for(pattern))
        if not topic or not topic_matches(pattern, topic):
            continue
        assert topic_matches(rule, topic), (rule, pattern, topic)


def test_mosquitto_password_file_uses_pbkdf2_sha512(creds):
    lines = mosquitto_password_lines(creds).splitlines()
    users = [line.split(":", 1)[0] for line in lines]
    assert users == [*SERVICES, ADMIN, *DEVICES]
    for line in lines:
        user, encoded = line.split(":", 1)
        assert re.fullmatch(r"\$7\$101\$[A-Za-z0-9+/=]{16}\$[A-Za-z0-9+/=]{88}", encoded)
        assert verify_mosquitto_hash(creds.password(user), encoded)
        assert not verify_mosquitto_hash(creds.password(user) + "x", encoded)
    # known answer: mosquitto_passwd's hash of "secret" with this salt
    salt = bytes.fromhex("eeb2ba977089160382 86a0a0".replace(" ", ""))
    assert mosquitto_hash("secret", salt).startswith("$7$101$7rK6l3CJFgOChqCg$cAGOiPhz85Cge")


def test_mosquitto_acl_grants_exactly_the_rules():
    text = mosquitto_acl_text(RUN)
    patterns = [line for line in text.splitlines() if line.startswith("pattern ")]
    assert patterns == [
        f"pattern {'write' if r.action == 'publish' else 'read'} {r.pattern.format(run=RUN)}"
        for r in PATTERNS
    ]
    assert all("%u" in p or "/ctl/#" in p for p in patterns)
    blocks = text.split("\nuser ")[1:]
    assert [b.split("\n", 1)[0] for b in blocks] == [*SERVICES, ADMIN]
    for block in blocks:
        role, *lines = [line for line in block.splitlines() if line]
        assert lines == [
            *(f"topic deny {t.format(run=RUN)}" for t in DENIED.get(role, ())),
            *(
                f"topic {'write' if r.action == 'publish' else 'read'} {r.pattern.format(run=RUN)}"
                for r in RULES[role]
            ),
        ]
    assert f"user collector\ntopic deny {P}/ctl/peer_step\n" in text
    assert "allow_anonymous false" in mosquitto_conf_text(__import__("pathlib").Path("/x"), port=1)


def test_credentials_round_trip_and_ambient(tmp_path):
    creds = Credentials.generate(RUN, DEVICES)
    path = creds.save(tmp_path / "c.json")
    assert path.stat().st_mode & 0o777 == 0o600
    loaded = Credentials.load(path)
    assert loaded == creds and loaded.password("d0001") == creds.password("d0001")
    with pytest.raises(AuthError):
        Credentials.load(tmp_path / "missing.json")
    from ldpfleet.broker.auth import CREDENTIALS_ENV, ambient

    assert ambient() is None
    with use_credentials(creds, export_dir=tmp_path):
        assert ambient() is creds
        assert Credentials.load(__import__("os").environ[CREDENTIALS_ENV]) == creds
    assert ambient() is None and CREDENTIALS_ENV not in __import__("os").environ
    assert not (tmp_path / "credentials.json").exists()


# Client ids bound to logins (no session takeover): the rule every broker applies -------

LOGINS = ("d0001", "d0002", *SERVICES, ADMIN, "gateway-g0", "gateway-g1")  # 2 bulk gateways
CLIENT_ID_TAILS = (
    "d0001",
    "d0001-sa",
    "d0001-lpea",
    "d0001-x",
    "d0001sa",
    "d0001-sa-1",
    "d0002",
    "d0002-lpea",
    "collector",
    "collector-close",
    "collector-sa-sum0-in-3",
    "collectorx",
    "recorder",
    "recorder-watch",
    "relay",
    "relay-in-0",
    "gateway-0",
    "gateway-shard0of2-wait",
    "gateway-g0",
    "gateway-g1",
    "gateway-g1-sa",
    "gateway-g01",
    "gateway-g2",
    "gateway-g1x",
    "operator",
    "attacker",
    "",
    "dé",
    "d0001/x",
)


def client_id_cases() -> list[tuple[str, str, bool]]:
    """(username, client id, may connect) for every login and a spread of client ids: own
    ones, other identities' (takeover attempts), other runs', malformed ones."""
    policy = AccessPolicy(RUN, frozenset(DEVICES), gateways=2)
    cases = [
        (user, f"{RUN}-{tail}", policy.client_ids_ok(user, f"{RUN}-{tail}"))
        for user in LOGINS
        for tail in CLIENT_ID_TAILS
    ]
    for user in LOGINS:
        cases += [
            (user, f"other-{user}", False),
            (user, f"{RUN}{user}", False),
            (user, user, False),
        ]
    return cases


def test_client_id_cases_cover_both_outcomes_for_every_login():
    cases = client_id_cases()
    for user in LOGINS:
        outcomes = {ok for u, _, ok in cases if u == user}
        assert outcomes == {True, False}, user
    # nobody but admin may use another identity's client id
    for user, client_id, ok in cases:
        if ok and user != ADMIN:
            assert client_id.startswith(f"{RUN}-{user}"), (user, client_id)
    assert ("d0001", f"{RUN}-collector", False) in cases
    assert ("d0001", f"{RUN}-recorder", False) in cases
    assert ("d0001", f"{RUN}-d0002", False) in cases
    assert ("gateway", f"{RUN}-collector", False) in cases
    # a bulk gateway's client id is its own, not the IoT gateway service's (nor its own + suffix)
    assert ("gateway", f"{RUN}-gateway-g1", False) in cases
    assert ("gateway", f"{RUN}-gateway-g01", True) in cases
    assert ("gateway-g1", f"{RUN}-gateway-g1", True) in cases
    assert ("gateway-g1", f"{RUN}-gateway-g1-sa", False) in cases
    assert ("gateway-g0", f"{RUN}-gateway-g1", False) in cases


def test_mosquitto_conf_loads_the_client_id_plugin(tmp_path):
    from ldpfleet.broker.mosquitto_plugin import plugin_conf_lines

    plugin = tmp_path / "ldpfleet_clientid.so"
    text = mosquitto_conf_text(tmp_path, port=1, plugin=plugin, run=RUN)
    lines = text.splitlines()
    assert lines.index(f"plugin {plugin}") < lines.index(f"password_file {tmp_path / 'passwords'}")
    assert f"plugin_opt_run {RUN}" in lines
    assert f"plugin_opt_services {' '.join(SERVICES)}" in lines
    assert f"plugin_opt_admin {ADMIN}" in lines
    assert "plugin_opt_device_suffixes -sa -lpea" in lines
    assert plugin_conf_lines(plugin, RUN) == [line for line in lines if line.startswith("plugin")]
    assert "plugin" not in mosquitto_conf_text(tmp_path, port=1)
    with pytest.raises(ValueError):
        mosquitto_conf_text(tmp_path, port=1, plugin=plugin)


def test_write_mosquitto_files_builds_the_plugin_once(tmp_path, monkeypatch):
    import shutil

    from ldpfleet.broker import mosquitto_plugin
    from ldpfleet.broker.auth import write_mosquitto_files

    if mosquitto_plugin._compiler() is None:
        from tests.conftest import service_missing

        service_missing("no C compiler (the client-id binding plugin is built with one)")
    creds = Credentials.generate(RUN, DEVICES)
    monkeypatch.delenv(mosquitto_plugin.PLUGIN_ENV, raising=False)
    paths = write_mosquitto_files(tmp_path / "mq", creds, port=1, persistence=False)
    plugin = paths["plugin"]
    assert plugin == (tmp_path / "mq" / "ldpfleet_clientid.so").resolve() and plugin.is_file()
    assert plugin.read_bytes()[:4] == b"\x7fELF"
    assert f"plugin {plugin}" in paths["conf"].read_text()
    built = plugin.stat().st_mtime_ns
    # a second run keeps the build (same source); a prebuilt copy can be named instead
    assert (
        write_mosquitto_files(tmp_path / "mq", creds, port=1)["plugin"].stat().st_mtime_ns == built
    )
    prebuilt = tmp_path / "prebuilt.so"
    shutil.copy(plugin, prebuilt)
    monkeypatch.setenv(mosquitto_plugin.PLUGIN_ENV, str(prebuilt))
    paths = write_mosquitto_files(tmp_path / "other", creds, port=1)
    assert paths["plugin"] == prebuilt and not (tmp_path / "other" / plugin.name).exists()
    monkeypatch.setenv(mosquitto_plugin.PLUGIN_ENV, str(tmp_path / "missing.so"))
    with pytest.raises(AuthError, match="no such plugin"):
        write_mosquitto_files(tmp_path / "third", creds, port=1)
    # without a compiler: a sentence that says what to do, and nothing written
    monkeypatch.delenv(mosquitto_plugin.PLUGIN_ENV)
    monkeypatch.setattr(mosquitto_plugin, "_compiler", lambda: None)
    with pytest.raises(AuthError, match="C compiler"):
        write_mosquitto_files(tmp_path / "fourth", creds, port=1)
    assert not (tmp_path / "fourth" / "passwords").exists()
    # opting out writes no plugin line (any identity may then take a session over)
    paths = write_mosquitto_files(tmp_path / "fifth", creds, port=1, client_id_binding=False)
    assert "plugin" not in paths and "plugin" not in paths["conf"].read_text()


async def test_the_collector_cannot_read_the_relays_round_broadcasts_in_memory():
    # Issue 20: the relay's ctl/peer_step broadcasts follow the negotiation's pace; the
    # collector's identity may not subscribe to them (nor to a filter that could match
    # them) and never receives one, while a device still does through ctl/#.
    import asyncio

    from ldpfleet.broker.transport import MemoryTransport, TransportError

    creds = Credentials.generate(RUN, DEVICES)
    broker = MemoryTransport(credentials=creds)
    step, phase = f"{P}/ctl/peer_step", f"{P}/svc/relay/phase"
    async with (
        broker.connect(client("relay")) as relay,
        broker.connect(client("collector", "-cadr-in-0")) as collector,
        broker.connect(client("d0001")) as device,
    ):
        for refused in (step, f"{P}/ctl/#", f"{P}/ctl/+", f"{P}/#"):
            with pytest.raises(TransportError):
                await collector.subscribe(refused)
        await collector.subscribe(phase, f"{P}/ctl/stage")
        await device.subscribe(f"{P}/ctl/#")
        await collector.publish(step, b"forged")  # nor may it speak as the relay
        await relay.publish(step, b"round 0")
        await relay.publish(phase, b"marker")
        await collector.publish(f"{P}/ctl/stage", b"marker")

        async def topics_until_marker(conn) -> list[tuple[str, bytes]]:
            seen = []
            async for delivery in conn.messages():
                seen.append((delivery.topic, delivery.payload))
                if delivery.payload == b"marker" and delivery.topic.endswith("stage"):
                    return seen

        got = await asyncio.wait_for(topics_until_marker(collector), 10)
        assert got == [(phase, b"marker"), (f"{P}/ctl/stage", b"marker")]
        got = await asyncio.wait_for(topics_until_marker(device), 10)
        assert got == [(step, b"round 0"), (f"{P}/ctl/stage", b"marker")]
    assert (client("collector", "-cadr-in-0"), "publish", step) in broker.denied
