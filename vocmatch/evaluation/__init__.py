"""The evaluation engine: pairs, matching over every image and class, results, score thresholds,
labels and masks.
"""
