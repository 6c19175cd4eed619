"""Standard Webhooks signing and verify(), checked against the standardwebhooks library both ways."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
import standardwebhooks

from agent_wait.core import ConfigError
from agent_wait.webhook import WebhookVerificationError, verify
from agent_wait.webhook._signing import SigningKey

from .conftest import SECRET, make_envelope

NOW = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


def signed(secret: str | bytes = SECRET, body: bytes | None = None, now: datetime = NOW):
    envelope = make_envelope()
    body = envelope.to_json() if body is None else body
    return envelope, body, SigningKey(secret).headers(envelope.event_id, body, now)


def test_signature_headers_follow_the_standard() -> None:
    envelope, _, headers = signed()
    assert headers["webhook-id"] == envelope.event_id
    assert headers["webhook-timestamp"] == str(int(NOW.timestamp()))
    version, _, signature = headers["webhook-signature"].partition(",")
    assert version == "v1"
    assert len(base64.b64decode(signature, validate=True)) == 32  # HMAC-SHA256


def test_our_signature_verifies_with_standardwebhooks() -> None:
    envelope, body, headers = signed(now=datetime.now(UTC))
    parsed = standardwebhooks.Webhook(SECRET).verify(body, headers)
    assert parsed == envelope.to_dict()


def test_standardwebhooks_signature_verifies_with_ours() -> None:
    envelope = make_envelope()
    body = envelope.to_json()
    hook = standardwebhooks.Webhook(SECRET)
    headers = {
        "webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W",
        "webhook-timestamp": str(int(NOW.timestamp())),
        "webhook-signature": hook.sign("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", NOW, body.decode()),
    }
    assert verify(body, headers, SECRET, now=NOW) == envelope.to_dict()


def test_raw_secret_is_used_as_bytes_on_both_sides() -> None:
    raw = "correct horse battery staple"
    envelope, body, headers = signed(raw, now=datetime.now(UTC))
    # Documented: a Standard Webhooks library must get the raw secret as bytes.
    assert standardwebhooks.Webhook(raw.encode()).verify(body, headers) == envelope.to_dict()
    assert verify(body, headers, raw) == envelope.to_dict()
    assert verify(body, headers, raw.encode()) == envelope.to_dict()
    # ...and it is the same key as its whsec_ form.
    as_whsec = "whsec_" + base64.b64encode(raw.encode()).decode()
    assert verify(body, headers, as_whsec) == envelope.to_dict()


def test_unpadded_whsec_secret_is_accepted_like_standardwebhooks() -> None:
    key = b"0123456789abcdef01234"  # 21 bytes: base64 needs padding
    unpadded = "whsec_" + base64.b64encode(key).decode().rstrip("=")
    _, body, headers = signed(unpadded)
    assert verify(body, headers, key, now=NOW)


def test_tampered_body_is_rejected() -> None:
    _, body, headers = signed()
    tampered = body.replace(b"41001", b"99999")
    assert tampered != body
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(tampered, headers, SECRET, now=NOW)


def test_other_secret_is_rejected() -> None:
    _, body, headers = signed()
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(body, headers, "whsec_" + base64.b64encode(b"another secret key!").decode(), now=NOW)


def test_changed_id_or_timestamp_is_rejected() -> None:
    _, body, headers = signed()
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(body, {**headers, "webhook-id": "01JAV3K2R8Q9WZ7M4X1YB6N0PD"}, SECRET, now=NOW)
    later = str(int(NOW.timestamp()) + 1)
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(body, {**headers, "webhook-timestamp": later}, SECRET, now=NOW)


def test_stale_and_future_timestamps_are_rejected() -> None:
    _, body, headers = signed()
    with pytest.raises(WebhookVerificationError, match="older than now"):
        verify(body, headers, SECRET, now=NOW + timedelta(minutes=5, seconds=1))
    with pytest.raises(WebhookVerificationError, match="newer than now"):
        verify(body, headers, SECRET, now=NOW - timedelta(minutes=5, seconds=1))
    # Inside the window, and with a wider tolerance, the same request passes.
    assert verify(body, headers, SECRET, now=NOW + timedelta(minutes=5))
    assert verify(body, headers, SECRET, now=NOW + timedelta(hours=1), tolerance=timedelta(hours=2))


def test_stale_default_clock() -> None:
    _, body, headers = signed(now=datetime.now(UTC) - timedelta(minutes=6))
    with pytest.raises(WebhookVerificationError, match="stale or replayed"):
        verify(body, headers, SECRET)


def test_rotation_any_of_several_secrets() -> None:
    _, body, headers = signed()
    old = "whsec_" + base64.b64encode(b"the old secret, retired").decode()
    assert verify(body, headers, [old, SECRET], now=NOW)
    assert verify(body, headers, (SECRET, old), now=NOW)
    with pytest.raises(WebhookVerificationError):
        verify(body, headers, [old], now=NOW)


def test_several_signatures_in_the_header() -> None:
    envelope, body, headers = signed()
    other = SigningKey(b"another key").sign(envelope.event_id, int(NOW.timestamp()), body)
    for header in (
        f"{other} {headers['webhook-signature']}",
        f"{headers['webhook-signature']} {other}",
        f"v1a,bm90IGEgdjEgc2ln {headers['webhook-signature']}",
        f"v1,!!notbase64!! {headers['webhook-signature']}",
    ):
        assert verify(body, {**headers, "webhook-signature": header}, SECRET, now=NOW)
    with pytest.raises(WebhookVerificationError, match="no v1 signature"):
        verify(body, {**headers, "webhook-signature": "v1a,abc v2,def"}, SECRET, now=NOW)


def test_header_names_are_case_insensitive_and_str_body_accepted() -> None:
    envelope, body, headers = signed()
    upper = {k.upper(): v for k, v in headers.items()}
    assert verify(body.decode(), upper, SECRET, now=NOW) == envelope.to_dict()


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_header_is_named(missing: str) -> None:
    _, body, headers = signed()
    del headers[missing]
    with pytest.raises(WebhookVerificationError, match=f"missing header {missing}"):
        verify(body, headers, SECRET, now=NOW)


def test_malformed_timestamp() -> None:
    _, body, headers = signed()
    with pytest.raises(WebhookVerificationError, match="integer Unix seconds"):
        verify(body, {**headers, "webhook-timestamp": "1757581200.5"}, SECRET, now=NOW)


def test_signed_body_must_be_a_json_object() -> None:
    for body, match in ((b"[1, 2]", "JSON list"), (b"not json", "not valid JSON")):
        _, _, headers = signed(body=body)
        with pytest.raises(WebhookVerificationError, match=match):
            verify(body, headers, SECRET, now=NOW)


def test_errors_never_show_the_secret() -> None:
    _, body, headers = signed()
    secret = "whsec_" + base64.b64encode(b"super secret value 123").decode()
    with pytest.raises(WebhookVerificationError) as caught:
        verify(body, headers, secret, now=NOW)
    assert "c3VwZXIg" not in str(caught.value)
    with pytest.raises(ConfigError, match="must be base64 after the prefix") as bad:
        SigningKey("whsec_not*base64*at*all")
    assert "not*base64" not in str(bad.value)
    assert "super" not in repr(SigningKey(b"super secret value 123"))


def test_invalid_arguments() -> None:
    _, body, headers = signed()
    with pytest.raises(ConfigError, match="secret is empty"):
        verify(body, headers, "", now=NOW)
    with pytest.raises(ConfigError, match="at least one secret"):
        verify(body, headers, [], now=NOW)
    with pytest.raises(ConfigError, match="tolerance"):
        verify(body, headers, SECRET, now=NOW, tolerance=timedelta(seconds=-1))
    with pytest.raises(ConfigError, match="aware"):
        verify(body, headers, SECRET, now=datetime(2026, 9, 11, 9, 0))


def test_parsed_body_is_the_exact_json() -> None:
    envelope, body, headers = signed()
    assert verify(body, headers, SECRET, now=NOW) == json.loads(body) == envelope.to_dict()
