"""``agent-wait inbox serve``: the approvals web app on uvicorn."""

from __future__ import annotations

import argparse
import os
import re
import sys

from agent_wait.inbox._auth import TOKEN_ENV, is_loopback

OIDC_SECRET_ENV = "AGENT_WAIT_INBOX_OIDC_SECRET"

# A plain name (``postgres``) names a configured announcer's store; anything else is a path.
_STORE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def setup(parser: argparse.ArgumentParser) -> None:
    """Serve the approvals web app (list, inspect and answer questions in a browser)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    parser.add_argument(
        "--store",
        metavar="PATH|NAME",
        help="a sqlite inbox file, or the name of a configured announcer whose questions to serve "
        "(postgres, dynamodb) (default: the configured sqlite announcer's inbox)",
    )
    parser.add_argument(
        "--oidc-issuer",
        metavar="URL",
        help="sign people in through this OpenID Connect provider (its issuer URL)",
    )
    parser.add_argument("--oidc-client-id", metavar="ID", help="the inbox's client id there")
    parser.add_argument(
        "--oidc-client-secret-env",
        default=OIDC_SECRET_ENV,
        metavar="NAME",
        help=f"environment variable holding its client secret (default: {OIDC_SECRET_ENV})",
    )
    parser.add_argument(
        "--oidc-subject-claim",
        default="email",
        metavar="CLAIM",
        help="the ID token claim recorded as who answered (default: email)",
    )
    parser.add_argument(
        "--oidc-groups-claim",
        default="groups",
        metavar="CLAIM",
        help="the ID token claim listing the person's groups (default: groups)",
    )
    parser.add_argument(
        "--token-env",
        default=TOKEN_ENV,
        help=f"environment variable holding the shared login secret, for a single-user setup "
        f"(default: {TOKEN_ENV})",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="a reverse proxy (address or network) whose X-Forwarded-User names the person; "
        "repeatable",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="no login (only with a loopback --host; answers are recorded as your login name)",
    )
    parser.add_argument(
        "--secure-cookie", action="store_true", help="send the session cookie over HTTPS only"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Build the app from the arguments and serve it until Ctrl-C or SIGTERM."""
    import uvicorn

    from agent_wait.core import AgentWaitError, ConfigError, QuestionStore, SqliteQuestionStore
    from agent_wait.host import configured_store, default_approver, default_store
    from agent_wait.inbox._app import inbox_app
    from agent_wait.inbox._auth import InboxAuth
    from agent_wait.inbox._oidc import OidcSignIn

    if args.no_auth and not is_loopback(args.host):
        print(
            f"agent-wait: error: --no-auth serves a loopback --host only, got {args.host!r}",
            file=sys.stderr,
        )
        return 2
    try:
        if args.oidc_issuer and not args.oidc_client_id:
            raise ConfigError("--oidc-issuer: give the inbox's --oidc-client-id too")
        oidc = (
            OidcSignIn(
                issuer=args.oidc_issuer,
                client_id=args.oidc_client_id,
                client_secret=os.environ.get(args.oidc_client_secret_env) or None,
                subject_claim=args.oidc_subject_claim,
                groups_claim=args.oidc_groups_claim,
            )
            if args.oidc_issuer
            else None
        )
        auth = InboxAuth(
            oidc=oidc,
            token_env=args.token_env,
            trusted_proxies=args.trusted_proxy,
            no_auth=args.no_auth,
            local_user=default_approver(),
            secure_cookie=args.secure_cookie,
        )
        store: QuestionStore = (
            default_store()
            if not args.store
            else configured_store(args.store)
            if _STORE_NAME.match(args.store)
            else SqliteQuestionStore(args.store)
        )
    except (AgentWaitError, ImportError) as error:
        print(f"agent-wait: error: {error}", file=sys.stderr)
        return 2
    app = inbox_app(store, auth)
    print(f"agent-wait inbox on http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        server_header=False,
        # The app reads X-Forwarded-* itself, from --trusted-proxy peers only; uvicorn's own
        # handling (on for 127.0.0.1 by default) would hand it a client address anyone on this
        # host can choose.
        proxy_headers=False,
        forwarded_allow_ips=[],
    )
    store.close()
    return 0
