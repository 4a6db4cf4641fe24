"""From verdicts to numbers and pages: pass@k and coverage (``metrics``), intervals and paired comparisons
(``stats``), published protocols (``protocol``), partial runs (``selection``), the gate (``gate``), the report JSON
and Markdown (``report``), the HTML page (``html_report``, ``html_cli``) and output paths (``outputs``). No pytest
import."""
