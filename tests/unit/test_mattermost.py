"""Mattermost as the real server reads it: the role's settings, its database user, and the stand-in's list of the
settings it accepts (demo/checkout/standin/standin.py), checked against Mattermost's own naming rule."""

from __future__ import annotations

import importlib.util
import re

from model import contract
from model.profile import parse_profile
from model.project import DEMO_CHECKOUT, ROOT
from model.services import SecretIn, ServiceSpec, secret_key, secret_setting, spec
from model.topology import Layout

PROFILE = {
    "profile": "cohort-w8",
    "run_id": "20261129t101500z",
    "tasks": ["jgm__pandoc.5caad90"],
    "llm_upstream": "https://gateway.example",
    "agensh_checkout": "/opt/agensh",
}


def load_standin():
    found = importlib.util.spec_from_file_location("standin", ROOT / DEMO_CHECKOUT / "standin" / "standin.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def platform() -> dict[str, ServiceSpec]:
    p = parse_profile(PROFILE)
    return {c.role: spec(p, c) for c in Layout.of(p).placements if c.task is None}


def test_the_settings_the_real_server_reads():
    mm = platform()["mattermost"]
    assert {k for k in mm.env if k.startswith("MM_")} == {
        "MM_SQLSETTINGS_DRIVERNAME",
        "MM_SERVICESETTINGS_SITEURL",
        "MM_TEAMSETTINGS_MAXUSERSPERTEAM",
    }
    assert mm.env["MM_SQLSETTINGS_DRIVERNAME"] == "mysql"
    assert mm.env["MM_SERVICESETTINGS_SITEURL"] == "http://10.249.0.4:8065"
    assert mm.env["MM_TEAMSETTINGS_MAXUSERSPERTEAM"] == str(contract.MM_DEFAULT_MAX_USERS)
    assert mm.healthcheck is not None and "/api/v4/system/ping" in mm.healthcheck[1]
    # the DSN holds its password: a secret, never a plain setting, and never the root password
    ref = mm.secret_env["MM_SQLSETTINGS_DATASOURCE"]
    assert isinstance(ref, SecretIn) and ref.key == "mysql_mattermost_password"
    assert contract.SECRETISH.search("MM_SQLSETTINGS_DATASOURCE")
    assert secret_setting("MM_SQLSETTINGS_DATASOURCE", ref, "pw-1") == (
        "mattermost:pw-1@tcp(10.249.128.2:3306)/mattermost?charset=utf8mb4,utf8&writeTimeout=30s"
    )
    assert "mysql_root_password" not in {secret_key(r) for r in mm.secret_env.values()}
    assert not [v for v in mm.env.values() if "@tcp(" in v]


def test_its_database_user_is_created_with_the_database():
    """scripts/mysql_users.sh reads, for each of MYSQL_SERVICE_USERS, MYSQL_<NAME>_PASSWORD."""
    mysql = platform()["mysql"]
    users = mysql.env["MYSQL_SERVICE_USERS"].split()
    assert users == [contract.ROUTER_DB, contract.MATTERMOST_DB]
    assert {f"MYSQL_{u.upper()}_PASSWORD" for u in users} <= set(mysql.secret_env)
    assert mysql.secret_env["MYSQL_MATTERMOST_PASSWORD"] == "mysql_mattermost_password"
    assert "mysql_mattermost_password" in contract.GENERATED_SECRETS
    script = mysql.mounts[-1]
    assert script.container_path.startswith("/docker-entrypoint-initdb.d/") and script.read_only


def test_the_standin_accepts_mattermost_settings_only():
    """Every MM_* variable the project sets is on the stand-in's list, and every name on it is its config.json path
    as Mattermost derives a variable's name: MM_, the path in capitals, `.` as `_`."""
    standin = load_standin()
    for name, path in standin.MM_SETTINGS.items():
        assert re.fullmatch(r"[A-Z][A-Za-z]+Settings\.[A-Z][A-Za-z]+", path), path
        assert name == "MM_" + path.upper().replace(".", "_")
    mm = platform()["mattermost"]
    assert {k for k in (*mm.env, *mm.secret_env) if k.startswith("MM_")} <= set(standin.MM_SETTINGS)
    # the stand-in reads the DSN as the Go MySQL driver does: the password runs to the last "@" before the address
    ref = mm.secret_env["MM_SQLSETTINGS_DATASOURCE"]
    dsn = standin.MYSQL_DSN_RE.fullmatch(secret_setting("MM_SQLSETTINGS_DATASOURCE", ref, "p:w@d"))
    assert dsn is not None
    assert dsn.group("user", "password", "host", "port", "database") == (
        "mattermost",
        "p:w@d",
        "10.249.128.2",
        "3306",
        "mattermost",
    )
