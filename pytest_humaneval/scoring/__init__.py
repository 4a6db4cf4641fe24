"""From verdicts to numbers: pass@k and coverage (``metrics``), intervals and paired comparisons (``stats``), partial
runs (``selection``), the gate (``gate``) and the shapes of what a run writes (``schema``). Pure: no pytest, no I/O
beyond a baseline's file."""
