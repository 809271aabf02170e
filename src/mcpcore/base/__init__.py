"""The words every layer of the core speaks; the bottom layer.

This folder owns the errors and their reasons (``_errors``, ``_failure``),
escaping of untrusted text (``_escape``), the events and actions the core
hands its driver (``_events``), the retry schedule (``_backoff``), the
observer protocol (``_observe``), and the tool values those events carry:
a tool and its catalogue (``_tools``), its input schema and filters
(``_schema``, ``_filters``), and a call's rendered output (``_render``).

It imports nothing from the layers above it. Everything here is private:
import public names from ``mcpcore``.
"""
