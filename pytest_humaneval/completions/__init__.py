"""Where completions come from: the plan of samples and its sources (``sources``: the bundled fixture, the
canonical solutions, a samples file, or a live endpoint), the OpenAI-compatible client (``endpoint``), the code
taken out of an answer (``extract``), generation before the items run (``generation``, ``batching``) and the store
that lets reruns reuse it (``store``). No pytest import."""
