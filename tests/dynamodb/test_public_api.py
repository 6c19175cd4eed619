import os
import subprocess
import sys

import agent_wait.dynamodb


def test_public_api() -> None:
    assert sorted(agent_wait.dynamodb.__all__) == [
        "DynamoDbAnnounce",
        "DynamoDbAuditLog",
        "DynamoDbLedger",
        "DynamoDbOptions",
        "DynamoDbQuestionStore",
        "create_table",
        "open_questions_past",
    ]


def test_plugin_registers_dynamodb_without_importing_the_sdk() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['dynamodb']); assert reg.announcers['dynamodb'].plugin == 'dynamodb'; "
        "assert not {'boto3', 'botocore', 'aiobotocore'} & set(sys.modules), 'SDK imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
