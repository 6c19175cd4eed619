"""EventBridge tests run against the shared moto server process."""

from tests.aws_moto import aws, moto_server  # noqa: F401 - fixtures, registered by import
