"""Run ids: one format for runs started by hand and by sweeps, safe as a folder, branch-free and thread name.

`<op>-<YYYYMMDD>-<HHMMSS>-<4 hex>` in UTC (`heaviside-20261203-072756-bedf`,
`_foreach_add-20261203-072756-0c1d`): they sort by op, then by time. Any ATen op name fits, a
leading underscore included; an overload's `.` becomes `_`.
"""

from __future__ import annotations

import re
import secrets
import time

RUN_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,79}$")
_OP_CHARS = 40


def new_run_id(op: str) -> str:
    """A fresh run id for `op` (`aten::` dropped)."""
    name = op.removeprefix("aten::").replace(".", "_")[:_OP_CHARS]
    return f"{name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


def is_run_id(text: str) -> bool:
    """True when `text` can be a run id: letters, digits, `_`, `.`, `-`; not starting with `.` or `-`."""
    return bool(RUN_ID.match(text))
