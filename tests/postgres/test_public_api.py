import os
import subprocess
import sys

import agent_wait.postgres


def test_public_api() -> None:
    assert sorted(agent_wait.postgres.__all__) == [
        "PostgresAnnounce",
        "PostgresAuditLog",
        "PostgresEntry",
        "PostgresEntryOptions",
        "PostgresLedger",
        "PostgresOptions",
        "PostgresQuestionStore",
        "acreate_schema",
        "aopen_questions_past",
        "create_schema",
        "open_questions_past",
    ]


def test_every_public_name_resolves() -> None:
    for name in agent_wait.postgres.__all__:
        assert callable(getattr(agent_wait.postgres, name)), name


def test_plugin_registers_postgres_without_importing_psycopg() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['postgres']); assert reg.announcers['postgres'].plugin == 'postgres'; assert reg.entry_points['postgres'].plugin == 'postgres'; "
        "import agent_wait.postgres; assert 'psycopg' not in sys.modules, 'psycopg imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
