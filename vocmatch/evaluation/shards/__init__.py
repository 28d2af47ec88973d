"""Evaluating in parts: the incremental :class:`~vocmatch.evaluation.shards.incremental.Evaluator`,
its state files and what a merge checks of them, and Dask."""
