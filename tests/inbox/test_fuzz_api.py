"""The JSON API fuzzed with schemathesis against its own OpenAPI document, on a running server.

Generated requests (valid ones, and ones that break the document on purpose) go over HTTP to
``agent-wait inbox serve``: each response must be one the document names, with a body that
matches it, and never a server error.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.core.parameters import ParameterLocation
from schemathesis.specs.openapi.checks import positive_data_acceptance

from agent_wait.core._sqlite import default_inbox_path
from tests.inbox.conftest import SECRET, Server, ask

pytestmark = pytest.mark.integration

BEARER = {"Authorization": f"Bearer {SECRET}"}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_json_api_conforms_to_its_openapi_document(
    served: Server, mode: GenerationMode
) -> None:
    inbox = default_inbox_path()
    # Rows to find, page through and answer: generated ids also hit real questions.
    for n in range(3):
        ask(inbox, f"q{n}", thread_id=f"t{n}", args={"amount": n, "nested": {"k": [n]}})
    schema = schemathesis.openapi.from_url(f"{served.url}/api/openapi.json")

    @given(case=schema.as_strategy(mode))
    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def check(case: schemathesis.Case) -> None:
        # Every check but "schema-valid data is accepted": a page cursor is opaque text that only
        # the API hands out, so a generated one is rightly refused (400, naming the cursor).
        # A case whose headers were made invalid on purpose (no Authorization) is sent as made.
        header = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
        unauthorized = header is not None and header.mode == GenerationMode.NEGATIVE
        case.call_and_validate(
            headers=None if unauthorized else BEARER, excluded_checks=[positive_data_acceptance]
        )

    check()
