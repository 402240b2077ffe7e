"""Note [deferred langsmith types]: LangSmith's generated API types and the LangGraph SDK's client
load on first use, and then whole."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys, threading
    import metalport
    from langgraph.graph import StateGraph
    from langgraph.checkpoint.memory import InMemorySaver

    types = sys.modules["langsmith.types"]
    assert "Run" not in vars(types), "langsmith/types/__init__.py ran on import"
    assert sum(k.startswith("langsmith.types.") for k in sys.modules) < 5
    assert "langgraph_sdk.client" not in sys.modules
    from langsmith.types.run_select_field import RunSelectField  # what langsmith.run_trees uses

    got, ready = [], threading.Barrier(8)
    threads = [threading.Thread(target=lambda: (ready.wait(), got.append(types.Run))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    from langsmith.types import Run, RunSelectField as again
    import langsmith
    assert got == [Run] * 8 and Run.__module__ == "langsmith.types.run" and again is RunSelectField
    assert langsmith.types is types and types.__loader__ is not None
    assert not hasattr(types, "NoSuchName")
    import langgraph_sdk
    assert callable(langgraph_sdk.get_client) and langgraph_sdk.__version__

    graph = StateGraph(dict)
    graph.add_node("one", lambda state: {"n": state.get("n", 0) + 1})
    graph.set_entry_point("one")
    graph.set_finish_point("one")
    app = graph.compile(checkpointer=InMemorySaver())
    out = list(app.stream({"n": 1}, {"configurable": {"thread_id": "t"}}, stream_mode=["updates", "values"]))
    assert out[-1] == ("values", {"n": 2}), out
    print("ok")
""")


def test_langsmith_types_and_the_sdk_client_load_on_first_use_and_whole() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
