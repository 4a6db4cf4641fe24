"""What a run writes for people and paths: the Markdown summary (``markdown``), the HTML page (``html_page``, and
``html_cli`` that builds one from saved files), and the checks of output paths before a run writes them (``paths``).
Renderers of a report: no pytest import, nothing that judges."""
