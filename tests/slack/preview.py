"""An HTML preview of a Slack message from its Block Kit blocks, for the docs' screenshot.

It renders what the announcer posts (header, sections with text and fields, context, buttons)
in the way Slack lays them out, from the blocks the Slack fake recorded: mrkdwn bold and code,
dates by their fallback text, user and user group mentions by name, the few emoji the messages
use, and the replies in the message's thread.
"""

from __future__ import annotations

import html
import re
from typing import Any

# Drawn as coloured symbols of common text fonts: the machine that takes the screenshots may
# have no colour emoji font.
_EMOJI = {
    ":white_check_mark:": "<span class=emoji style='background:#2eb67d'>\u2714</span>",
    ":x:": "<span class=emoji style='background:#e01e5a'>\u2716</span>",
    ":hourglass:": "<span class=emoji style='background:#ecb22e'>\u29d7</span>",
    ":warning:": "<span class=emoji style='background:#ecb22e'>!</span>",
    ":lock:": "<span class=emoji style='background:#616061'>\u25a0</span>",
    ":ballot_box_with_ballot:": "<span class=emoji style='background:#1264a3'>\u2611</span>",
    ":bell:": "<span class=emoji style='background:#ecb22e'>\u266a</span>",
    ":arrow_up:": "<span class=emoji style='background:#1264a3'>\u2191</span>",
    ":alarm_clock:": "<span class=emoji style='background:#e01e5a'>\u25f7</span>",
}
_BUTTON = {
    "primary": "background:#007a5a;color:#fff;border-color:#007a5a",
    "danger": "background:#fff;color:#e01e5a;border-color:#e01e5a",
}


def mrkdwn(text: str, users: dict[str, str]) -> str:
    """Slack's mrkdwn as HTML; the text is already escaped the way Slack wants (&amp; &lt; &gt;)."""
    text = re.sub(r"<!date\^\d+\^[^|>]*\|([^>]*)>", lambda m: m.group(1), text)
    text = re.sub(
        r"<@(\w+)>", lambda m: f"<b class=mention>@{users.get(m.group(1), m.group(1))}</b>", text
    )
    text = re.sub(
        r"<!subteam\^(\w+)>",
        lambda m: f"<b class=mention>@{users.get(m.group(1), m.group(1))}</b>",
        text,
    )
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*([^*\n]+)\*", r"<b>\1</b>", text)
    text = re.sub(r"(?<!\w)_([^_\n]+)_(?!\w)", r"<i>\1</i>", text)
    for name, emoji in _EMOJI.items():
        text = text.replace(name, emoji)
    return text.replace("\n", "<br>")


def block(item: dict[str, Any], users: dict[str, str]) -> str:
    kind = item["type"]
    if kind == "header":
        return f"<div class=header>{html.escape(item['text']['text'])}</div>"
    if kind == "section":
        parts = []
        if "text" in item:
            parts.append(f"<div class=text>{mrkdwn(item['text']['text'], users)}</div>")
        if "fields" in item:
            fields = "".join(
                f"<div class=field>{mrkdwn(f['text'], users)}</div>" for f in item["fields"]
            )
            parts.append(f"<div class=fields>{fields}</div>")
        return f"<div class=section>{''.join(parts)}</div>"
    if kind == "context":
        return (
            "<div class=context>"
            + "".join(mrkdwn(e["text"], users) for e in item["elements"])
            + "</div>"
        )
    if kind == "actions":
        return (
            "<div class=actions>"
            + "".join(
                f"<button style='{_BUTTON.get(e.get('style', ''), '')}'>"
                f"{html.escape(e['text']['text'])}</button>"
                for e in item["elements"]
            )
            + "</div>"
        )
    raise ValueError(f"no preview for a {kind!r} block")


def page(
    blocks: list[dict[str, Any]],
    users: dict[str, str],
    app: str = "agent-wait",
    replies: list[str] | None = None,
) -> str:
    """A page showing the message as the app's post in a channel, with its thread's replies."""
    body = "".join(block(b, users) for b in blocks)
    if replies:
        body += (
            f"<div class=thread><div class=count>{len(replies)} replies</div>"
            + "".join(
                f"<div class=reply><b>{html.escape(app)}</b> <span class=app>APP</span>"
                f"<div>{mrkdwn(text, users)}</div></div>"
                for text in replies
            )
            + "</div>"
        )
    return f"""<!doctype html><meta charset=utf-8><style>
body {{ font: 15px/1.46668 Lato, "Helvetica Neue", Arial, sans-serif; color: #1d1c1d;
  margin: 0; padding: 16px 20px; background: #fff; }}
.post {{ display: flex; gap: 8px; max-width: 640px; }}
.avatar {{ width: 36px; height: 36px; border-radius: 6px; background: #4a154b; color: #fff;
  font-weight: 700; display: flex; align-items: center; justify-content: center; }}
.who b {{ font-weight: 900; }} .who span {{ color: #616061; font-size: 12px; margin-left: 4px; }}
.app {{ background: #e8e8e8; color: #616061; font-size: 10px; padding: 1px 3px; border-radius: 2px; }}
.header {{ font-size: 18px; font-weight: 900; margin: 4px 0 8px; }}
.section {{ margin: 4px 0 8px; }}
.fields {{ display: grid; grid-template-columns: 1fr 1fr; gap: 8px 16px; }}
.context {{ color: #616061; font-size: 13px; margin: 4px 0 8px; white-space: pre-wrap; }}
.emoji {{ display: inline-block; width: 18px; height: 18px; line-height: 18px; border-radius: 4px;
  color: #fff; font-size: 12px; text-align: center; font-weight: 700; margin-right: 2px; }}
.actions button {{ font: 700 15px Lato, Arial, sans-serif; border: 1px solid #dddddd;
  border-radius: 4px; padding: 0 12px; height: 36px; margin: 4px 8px 4px 0; background: #fff; }}
code {{ font-family: Monaco, Menlo, monospace; font-size: 12px; color: #e01e5a;
  background: #f8f8f8; border: 1px solid #e8e8e8; border-radius: 3px; padding: 2px 3px; }}
.mention {{ color: #1264a3; background: #e8f5fa; }}
.thread {{ border-left: 3px solid #e8e8e8; padding-left: 12px; margin: 8px 0; }}
.count {{ color: #1264a3; font-weight: 700; font-size: 13px; margin-bottom: 6px; }}
.reply {{ margin: 6px 0 10px; font-size: 14px; }}
</style><div class=post><div class=avatar>aw</div><div>
<div class=who><b>{html.escape(app)}</b> <span class=app>APP</span> <span>14:02</span></div>
{body}</div></div>"""
