"""The pytest front over the engine: the plugin's hooks, the File/Item pair (an item asks for its verdict), the
terminal section, one plugin per output, the gate's exit status, xdist and its hosts (xdist's private parts in
``_xdist_internals`` alone), and ``evaluate``, a pytest run without YAML. The only part of the package that
imports pytest."""
