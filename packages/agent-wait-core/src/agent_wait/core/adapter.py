"""Deprecated: moved to :mod:`agent_wait.host.adapter` (the ``agent-wait-host`` distribution).

Importing this path still works for one release, with a DeprecationWarning; it is removed in
the next one. The module is looked up by name, so core does not depend on ``agent-wait-host``.
"""

import sys

from agent_wait.core._lazy import forward

sys.modules[__name__] = forward(__name__, "agent_wait.host.adapter", distribution="agent-wait-host")
