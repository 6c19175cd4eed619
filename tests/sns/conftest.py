"""SNS tests run against the shared moto server process, directly or behind the strict proxy."""

from tests.aws_moto import aws, moto_server  # noqa: F401 - fixtures, registered by import
from tests.aws_strict import strict_aws  # noqa: F401 - fixture, registered by import
