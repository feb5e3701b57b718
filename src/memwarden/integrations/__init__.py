"""memwarden in the agent frameworks people already use, with taint wired in (issue 15).

Each integration is a module of its own behind an extra, so the core stays light:

* :mod:`memwarden.integrations.openai_agents` (``pip install 'memwarden[openai-agents]'``): the OpenAI Agents SDK.
* :mod:`memwarden.integrations.anthropic` (``pip install 'memwarden[anthropic]'``): the Anthropic SDK's
  ``tool_runner`` and plain Messages tool use.
* :mod:`memwarden.integrations.openai`: a hand-written loop over the OpenAI SDK (Chat Completions or Responses);
  imports no SDK.

Tool schemas for every format (OpenAI Chat Completions and Responses, Anthropic, MCP; OpenAI strict mode) need no
extra: :func:`memwarden.tools.tool_schemas` and :meth:`memwarden.Session.tool_schemas`.

Every integration calls the same :class:`memwarden.Session` methods as every other interface (one write path),
identity is the application's (the scope of the session it opened, never a tool argument), and every tool call the
framework makes — memwarden's and the application's own — reaches the session's taint ledger without code of the
application's. See docs/integrations.md.
"""
