"""The problems: HumanEval and HumanEval+ (bundled, or a release or file a config names), selection, digests and
labels (``dataset``); HumanEval+ releases and their pins (``releases``), expected outputs and suites (``plus``); and
what each dataset costs (``catalog``). No pytest import."""
