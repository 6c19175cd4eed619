import os
import subprocess
import sys

import agent_wait.sqs


def test_public_api() -> None:
    assert sorted(agent_wait.sqs.__all__) == [
        "LambdaHandler",
        "SqsAnnounce",
        "SqsEntry",
        "SqsEntryOptions",
        "SqsOptions",
        "lambda_handler",
    ]


def test_plugin_registers_sqs_without_importing_the_sdk() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['sqs']); assert reg.announcers['sqs'].plugin == 'sqs'; "
        "assert not {'boto3', 'botocore', 'aiobotocore'} & set(sys.modules), 'SDK imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
