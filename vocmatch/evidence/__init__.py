"""What explains a result: error types, bootstrap intervals, slices, calibration, diffs, gates and
suspects.
"""
