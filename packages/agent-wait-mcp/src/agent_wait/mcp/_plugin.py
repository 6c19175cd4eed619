"""agent-wait plugin entry point of the ``agent_wait`` MCP pause tool.

The distribution contributes a console script (``agent-wait-mcp``) rather than an announcer or
an adapter, so it registers no hooks; the entry point lets ``agent-wait plugins`` list it. Keep
this module free of imports: loading plugins must not pull in the MCP SDK.
"""
