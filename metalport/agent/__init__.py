"""The agent layer: the Provider protocol, the OpenAI provider, tools, budgets and transcripts.

Submodules are imported directly (`metalport.agent.openai_provider` pulls in openai).
"""

__all__: list[str] = []
