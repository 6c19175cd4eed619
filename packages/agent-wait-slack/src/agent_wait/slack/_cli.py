"""``agent-wait slack serve``: Slack's Interactivity Request URL under uvicorn."""

from __future__ import annotations

import argparse
import re
import sys

# A plain name (``postgres``) names a configured announcer's store; anything else is a path.
_STORE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def setup(parser: argparse.ArgumentParser) -> None:
    """Answer questions from Slack: ``agent-wait slack serve``."""
    commands = parser.add_subparsers(dest="slack_command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve Slack's Interactivity Request URL (/slack/interactivity): clicks answer",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8767, help="port (default: 8767)")
    serve.add_argument(
        "--store",
        metavar="PATH|NAME",
        help="a sqlite inbox file, or the name of a configured announcer whose questions to "
        "answer (postgres, dynamodb) (default: the configured sqlite announcer's inbox)",
    )
    serve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted, with the configured ``slack`` announcer's token and secret."""
    import uvicorn

    from agent_wait.core import AgentWaitError, QuestionStore, SqliteQuestionStore
    from agent_wait.host import configured_store, default_store
    from agent_wait.slack._interactivity import configured_slack, interactivity_app

    try:
        slack = configured_slack()
        store: QuestionStore = (
            default_store()
            if not args.store
            else configured_store(args.store)
            if _STORE_NAME.match(args.store)
            else SqliteQuestionStore(args.store)
        )
        app = interactivity_app(slack, store)
    except (AgentWaitError, ImportError) as error:
        print(f"agent-wait slack serve: error: {error}", file=sys.stderr)
        return 2
    print(
        f"agent-wait slack on http://{args.host}:{args.port}/slack/interactivity",
        file=sys.stderr,
        flush=True,
    )
    # access_log off: nothing Slack sends belongs in a log line.
    uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning")
    store.close()
    slack.close()
    return 0
