"""What a client does beyond the lifecycle: one module per capability.

This folder owns tools' requests (``_tool_requests``), arguments and the host
registry (``_arguments``, ``_registry``), resources, templates and
subscriptions (``_resources``, ``_templates``, ``_subscriptions``), prompts
and completion (``_prompts``, ``_completion``), listings (``_listing``),
tasks and their handles (``_tasks``, ``_task_handle``), and input from a
person: elicitation, roots, sampling, paused calls and their continuations
(``_input``, ``_questions``, ``_input_options``, ``_roots``, ``_resume``,
``_desks``, ``_links``).

A feature never imports the session: it reaches it through the small port
the session implements (``_port``: ``SessionPort``, with the session's words
a feature reads, ``SessionState`` and ``SessionOptions``). It imports
``auth``, ``wire`` and ``base``.
Everything here is private: import public names from ``mcpcore``.
"""
