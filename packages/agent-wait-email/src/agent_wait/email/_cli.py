"""``agent-wait email serve``: the links app under uvicorn."""

from __future__ import annotations

import argparse
import os
import sys

SECRET_ENV = "AGENT_WAIT_EMAIL_SECRET"


def setup(parser: argparse.ArgumentParser) -> None:
    """The email announcer's links: ``agent-wait email serve``."""
    commands = parser.add_subparsers(dest="email_command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve", help="serve the pages the email links open (confirm, then answer)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8766, help="port (default: 8766)")
    serve.add_argument(
        "--secret-env",
        default=SECRET_ENV,
        help=f"environment variable holding the links' HMAC key (default: {SECRET_ENV})",
    )
    serve.add_argument(
        "--tokens-path",
        help="sqlite file recording used links (default: $AGENT_WAIT_HOME/email-links.sqlite3)",
    )
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted."""
    secret = os.environ.get(args.secret_env)
    if not secret:
        print(
            f"agent-wait email serve: environment variable {args.secret_env} is not set "
            "(the HMAC key the email announcer signs links with)",
            file=sys.stderr,
        )
        return 2
    import uvicorn

    from agent_wait.email._links import links_app

    app = links_app(secret, tokens_path=args.tokens_path)
    # access_log off: every request line carries a token in its query string.
    uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning")
    return 0
