"""Whole runs, a request in and one result out: what ``vocmatch eval``, ``diff``, ``suspects``
and ``merge`` do between reading their options and rendering, as a library (``evaluate``,
``evaluate_labels``, ``compare``, ``find_suspects``, ``shard_states``), over the checks of a
request (``request_checks``), inputs read elsewhere (``remote_inputs``) and warnings on the
inputs (``hints``). Importing the package loads none of them.
"""
